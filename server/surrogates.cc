#include "server/surrogates.h"

#include "server/log.h"

namespace blocktune {

StatusOr<DeviceProfile> ProfileForFingerprint(const DeviceFingerprint& fp) {
  for (const DeviceProfile& p : BuiltinProfiles()) {
    if (p.cc_major == fp.cc_major && p.cc_minor == fp.cc_minor) {
      DeviceProfile out = p;
      if (fp.sm_count > 0) out.sm_count = fp.sm_count;
      return out;
    }
  }
  return NotFound("no device profile for compute capability " +
                  std::to_string(fp.cc_major) + "." +
                  std::to_string(fp.cc_minor) + " (" + fp.name + ")");
}

Status SurrogateRegistry::LoadAll() {
  // Models of stale data (an older generator's) never answer.
  StoreFilter current;
  current.versions = VersionFilter::kCurrent;
  BT_ASSIGN_OR_RETURN(auto records, store_->ListModels(current));
  StoreFilter stale;
  stale.versions = VersionFilter::kStale;
  BT_ASSIGN_OR_RETURN(auto stale_models, store_->ListModels(stale));
  for (const ModelRecord& r : stale_models) {
    BT_LOG(kInfo) << "model " << r.id << " (" << ToString(r.op) << ", "
                  << r.device.name << ", " << r.family << ") not loaded: "
                  << "stale, trained on generator version " << r.data_version;
  }
  // Oldest first, so the newest of each (device, op) stays.
  for (const ModelRecord& r : records) {
    Status s = Add(r);
    if (!s.ok()) {
      BT_LOG(kWarning) << "model " << r.id << " (" << ToString(r.op) << ", "
                       << r.device.name << ") not loaded: " << s.ToString();
    }
  }
  return OkStatus();
}

StatusOr<LoadedModel> SurrogateRegistry::Load(const ModelRecord& r,
                                              bool use_cuda) {
  // Every failure is the record's fault (a stored blob is data, whatever
  // code Surrogate::Load gives), so each is INVALID_ARGUMENT.
  auto invalid = [](const Status& s) {
    return InvalidArgument(std::string(s.message()));
  };
  auto profile = ProfileForFingerprint(r.device);
  if (!profile.ok()) return invalid(profile.status());
  auto model =
      Surrogate::Load(r.op, r.architecture, r.weights, r.normalization);
  if (!model.ok()) return invalid(model.status());
  model->UseCuda(use_cuda);
  LoadedModel loaded{r.id, r.device, r.op,
                     std::make_shared<const BlockSearch>(*model, *profile)};
  BT_RETURN_IF_ERROR(loaded.search->Probe());
  return loaded;
}

Status SurrogateRegistry::Validate(const ModelRecord& record) {
  return Load(record, /*use_cuda=*/false).status();
}

Status SurrogateRegistry::Add(const ModelRecord& r) {
  if (!r.IsCurrent()) {
    return FailedPrecondition(
        "model " + std::to_string(r.id) + " is stale: " + r.family +
        " generator version " + std::to_string(r.generator_version) +
        ", data version " + std::to_string(r.data_version));
  }
  if (r.family != BlockShapeFamily(r.op).name()) {
    return Unimplemented("model " + std::to_string(r.id) + " is of family " +
                         r.family + "; only block-shape models load yet");
  }
  BT_ASSIGN_OR_RETURN(LoadedModel loaded, Load(r, use_cuda_));
  BT_LOG(kInfo) << "model " << r.id << " loaded: " << ToString(r.op) << " on "
                << r.device.name << ", " << r.architecture << ", "
                << loaded.search->grid_size() << " block shapes in range, "
                << "scoring on "
                << (loaded.search->model().on_cuda() ? "cuda" : "cpu");
  std::lock_guard lock(mu_);
  LoadedModel& slot = models_[{r.device.name, r.op}];
  if (slot.id <= r.id) slot = std::move(loaded);
  return OkStatus();
}

std::optional<LoadedModel> SurrogateRegistry::Find(
    Op op, std::string_view device_name) const {
  std::lock_guard lock(mu_);
  const LoadedModel* best = nullptr;
  for (const auto& [key, m] : models_) {
    if (key.second != op) continue;
    if (!device_name.empty() && key.first != device_name) continue;
    if (!best || m.id > best->id) best = &m;
  }
  if (!best) return std::nullopt;
  return *best;
}

int SurrogateRegistry::size() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(models_.size());
}

}  // namespace blocktune
