// The trained surrogates the daemon answers queries with: the newest model
// per (device name, op), loaded from the store at start and after every
// training or import, each with its exhaustive search (models/search.h)
// ready. Readers take a shared_ptr and never wait for a load.
#ifndef BLOCKTUNE_SERVER_SURROGATES_H_
#define BLOCKTUNE_SERVER_SURROGATES_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "models/search.h"
#include "server/tuning_store.h"

namespace blocktune {

struct LoadedModel {
  int64_t id = 0;
  DeviceFingerprint device;
  Op op = Op::kGemm;
  std::shared_ptr<const BlockSearch> search;
};

// The hardware rules of the GPU a fingerprint names: the built-in profile
// of its compute capability with its SM count. NOT_FOUND for a compute
// capability blocktune has no profile of.
StatusOr<DeviceProfile> ProfileForFingerprint(const DeviceFingerprint& fp);

class SurrogateRegistry {
 public:
  // use_cuda: score on the GPU when libtorch has one.
  SurrogateRegistry(TuningStore* store, bool use_cuda)
      : store_(store), use_cuda_(use_cuda) {}

  // Whether `record` may be stored and answer queries: a device profile of
  // its compute capability, weights and normalization that load and are
  // finite, and plausible predictions (BlockSearch::Probe). INVALID_ARGUMENT
  // saying what is wrong. Import calls it before anything is stored.
  static Status Validate(const ModelRecord& record);

  // Loads the newest valid model of every (device name, op) in the store. A
  // model that fails Validate (stored by an older blocktuned) is logged and
  // skipped, and the next older one of its device and op answers; the
  // daemon still starts.
  Status LoadAll();
  // Loads one stored model, replacing an older one of its device and op;
  // Validate's error if it is not valid, and nothing is replaced.
  Status Add(const ModelRecord& record);
  // The newest model for `op` on `device_name`; an empty name takes the
  // newest model for `op` of any device.
  std::optional<LoadedModel> Find(Op op, std::string_view device_name) const;
  int size() const;

 private:
  // The model of `record`, validated, ready to search.
  static StatusOr<LoadedModel> Load(const ModelRecord& record, bool use_cuda);

  TuningStore* const store_;
  const bool use_cuda_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, Op>, LoadedModel> models_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SURROGATES_H_
