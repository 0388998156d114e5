// The trained surrogates the daemon answers queries with: the newest current
// model per (device name, op, precision, family), loaded from the store at
// start and after every training or import, each with its exhaustive search
// (models/search.h) ready. Readers take a shared_ptr and never wait for a
// load.
#ifndef BLOCKTUNE_SERVER_SURROGATES_H_
#define BLOCKTUNE_SERVER_SURROGATES_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>
#include <string>
#include <utility>

#include "models/search.h"
#include "server/tuning_store.h"

namespace blocktune {

struct LoadedModel {
  int64_t id = 0;
  DeviceFingerprint device;
  Op op = Op::kGemm;
  DType precision = DType::kFp32;
  const KernelFamily* family = nullptr;  // registered
  int64_t created_unix = 0;
  std::shared_ptr<const BlockSearch> search;
};

// The hardware rules of the GPU a fingerprint names: the built-in profile
// of its compute capability with its SM count. NOT_FOUND for a compute
// capability blocktune has no profile of.
StatusOr<DeviceProfile> ProfileForFingerprint(const DeviceFingerprint& fp);

class SurrogateRegistry {
 public:
  // use_cuda: score on the GPU when libtorch has one; risk: the spread an
  // ensemble's ranking charges (BlockSearch::set_risk).
  SurrogateRegistry(TuningStore* store, bool use_cuda,
                    double risk = kEnsembleRisk)
      : store_(store), use_cuda_(use_cuda), risk_(risk) {}

  // Whether `record` may be stored and answer queries: a device profile of
  // its compute capability, weights and normalization that load and are
  // finite, and plausible predictions (BlockSearch::Probe). INVALID_ARGUMENT
  // saying what is wrong. Import calls it before anything is stored.
  static Status Validate(const ModelRecord& record);
  // The model of `record`, validated as Validate says, ready to search
  // (use_cuda: score on the GPU when libtorch has one). Stale or not: the
  // caller decides (ModelRecord::IsCurrent).
  static StatusOr<LoadedModel> Load(const ModelRecord& record, bool use_cuda,
                                    double risk = kEnsembleRisk);

  // Loads the newest valid current model of every (device name, op,
  // precision, family) in the store. A model that fails Validate (stored by
  // an older blocktuned) is logged and skipped, and the next older one of
  // its kind answers; the daemon still starts. Stale models (of an older
  // generator) are counted, never loaded.
  Status LoadAll();
  // Loads the models added to the store since the last LoadAll or Refresh
  // (by another daemon on the same store, or an import), when the store's
  // model generation says there are any; cheap otherwise.
  Status Refresh();
  // Loads one stored model, replacing an older one of its kind; Validate's
  // error if it is not valid, FAILED_PRECONDITION if it is stale, and
  // nothing is replaced.
  Status Add(const ModelRecord& record);
  // The models that answer (op, precision) on `device_name`, one per
  // family, newest first; only `family`'s when it is not empty. An empty
  // device name takes the device of the newest such model.
  std::vector<LoadedModel> Find(Op op, DType precision,
                                std::string_view device_name,
                                std::string_view family = "") const;
  // The devices with a model of (op, precision), of `family` when given;
  // newest model's first.
  std::vector<std::string> Devices(Op op, DType precision,
                                   std::string_view family = "") const;
  int size() const;

 private:
  TuningStore* const store_;
  const bool use_cuda_;
  const double risk_;
  std::mutex refresh_mu_;  // one LoadAll or Refresh at a time
  std::optional<int64_t> models_generation_;  // when last loaded
  int64_t newest_id_ = 0;                      // of the models seen
  mutable std::mutex mu_;
  // (device name, op, precision, family name)
  std::map<std::tuple<std::string, Op, DType, std::string>, LoadedModel>
      models_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SURROGATES_H_
