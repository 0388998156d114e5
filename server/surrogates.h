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

  // Loads the newest model of every (device name, op) in the store. A model
  // that does not load is logged and skipped; the daemon still starts.
  Status LoadAll();
  // Loads one stored model, replacing an older one of its device and op.
  Status Add(const ModelRecord& record);
  // The newest model for `op` on `device_name`; an empty name takes the
  // newest model for `op` of any device.
  std::optional<LoadedModel> Find(Op op, std::string_view device_name) const;
  int size() const;

 private:
  TuningStore* const store_;
  const bool use_cuda_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, Op>, LoadedModel> models_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_SURROGATES_H_
