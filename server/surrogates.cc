#include "server/surrogates.h"

#include <algorithm>

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

Status SurrogateRegistry::Refresh() {
  std::lock_guard refresh(refresh_mu_);
  BT_ASSIGN_OR_RETURN(StoreGeneration g, store_->Generation());
  if (models_generation_ && *models_generation_ == g.models) return OkStatus();
  StoreFilter current;
  current.versions = VersionFilter::kCurrent;
  BT_ASSIGN_OR_RETURN(auto records, store_->ListModels(current));
  for (const ModelRecord& r : records) {
    if (r.id <= newest_id_) continue;
    newest_id_ = r.id;
    {
      std::lock_guard lock(mu_);  // added here already (trained here)?
      auto it = models_.find({r.device.name, r.op, r.precision, r.family});
      if (it != models_.end() && it->second.id >= r.id) continue;
    }
    if (Status s = Add(r); !s.ok()) {
      BT_LOG(kWarning) << "model " << r.id << " (" << ToString(r.op) << " "
                       << ToString(r.precision) << ", " << r.device.name
                       << ", " << r.family << ") not loaded: " << s.ToString();
    }
  }
  models_generation_ = g.models;
  return OkStatus();
}

Status SurrogateRegistry::LoadAll() {
  std::lock_guard refresh(refresh_mu_);
  // The generation first: a model stored while this loads is loaded by the
  // next Refresh.
  BT_ASSIGN_OR_RETURN(StoreGeneration g, store_->Generation());
  models_generation_ = g.models;
  // Models of stale data (an older generator's) never answer.
  StoreFilter current;
  current.versions = VersionFilter::kCurrent;
  BT_ASSIGN_OR_RETURN(auto records, store_->ListModels(current));
  StoreFilter stale;
  stale.versions = VersionFilter::kStale;
  BT_ASSIGN_OR_RETURN(auto stale_models, store_->ListModels(stale));
  for (const ModelRecord& r : stale_models) {
    BT_LOG(kInfo) << "model " << r.id << " (" << ToString(r.op) << " "
                  << ToString(r.precision) << ", " << r.device.name << ", "
                  << r.family << ") not loaded: stale, trained on generator "
                  << "version " << r.data_version;
  }
  // Oldest first, so the newest of each kind stays.
  for (const ModelRecord& r : records) {
    newest_id_ = std::max(newest_id_, r.id);
    Status s = Add(r);
    if (!s.ok()) {
      BT_LOG(kWarning) << "model " << r.id << " (" << ToString(r.op) << " "
                       << ToString(r.precision) << ", " << r.device.name
                       << ", " << r.family << ") not loaded: " << s.ToString();
    }
  }
  return OkStatus();
}

StatusOr<LoadedModel> SurrogateRegistry::Load(const ModelRecord& r,
                                              bool use_cuda, double risk) {
  // Every failure is the record's fault (a stored blob is data, whatever
  // code Surrogate::Load gives), so each is INVALID_ARGUMENT.
  auto invalid = [](const Status& s) {
    return InvalidArgument(std::string(s.message()));
  };
  auto profile = ProfileForFingerprint(r.device);
  if (!profile.ok()) return invalid(profile.status());
  auto family = FindFamily(r.family);
  if (!family.ok()) return invalid(family.status());
  if (!(*family)->Implements(r.precision)) {
    return InvalidArgument("model of " + r.family + " in " +
                           std::string(ToString(r.precision)) +
                           ": the family does not implement that precision");
  }
  if ((*family)->min_compute_capability() >
      profile->cc_major * 10 + profile->cc_minor) {
    return InvalidArgument("model of " + r.family + " for " + r.device.name +
                           ": the family does not run on compute capability " +
                           std::to_string(profile->cc_major) + "." +
                           std::to_string(profile->cc_minor));
  }
  auto model = Surrogate::Load(**family, r.precision, r.architecture,
                               r.weights, r.normalization);
  if (!model.ok()) return invalid(model.status());
  model->UseCuda(use_cuda);
  auto search = std::make_shared<BlockSearch>(*model, *profile);
  search->set_risk(risk);
  LoadedModel loaded{r.id,           r.device,
                     r.op,           r.precision,
                     *family,        r.created_unix,
                     std::move(search)};
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
  BT_ASSIGN_OR_RETURN(LoadedModel loaded, Load(r, use_cuda_, risk_));
  BT_LOG(kInfo) << "model " << r.id << " loaded: " << ToString(r.op) << " "
                << ToString(r.precision) << " " << r.family << " v"
                << r.generator_version << " on " << r.device.name << ", "
                << r.architecture << ", " << loaded.search->grid_size()
                << " configurations in range, scoring on "
                << (loaded.search->model().on_cuda() ? "cuda" : "cpu");
  std::lock_guard lock(mu_);
  LoadedModel& slot = models_[{r.device.name, r.op, r.precision, r.family}];
  if (slot.id <= r.id) slot = std::move(loaded);
  return OkStatus();
}

std::vector<std::string> SurrogateRegistry::Devices(
    Op op, DType precision, std::string_view family) const {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> newest;
  for (const auto& [key, m] : models_) {
    if (std::get<1>(key) != op || std::get<2>(key) != precision) continue;
    if (!family.empty() && std::get<3>(key) != family) continue;
    int64_t& id = newest[std::get<0>(key)];
    id = std::max(id, m.id);
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, id] : newest) order.emplace_back(-id, name);
  std::sort(order.begin(), order.end());
  std::vector<std::string> out;
  for (const auto& [id, name] : order) out.push_back(name);
  return out;
}

std::vector<LoadedModel> SurrogateRegistry::Find(
    Op op, DType precision, std::string_view device_name,
    std::string_view family) const {
  std::lock_guard lock(mu_);
  auto matches = [&](const auto& key) {
    return std::get<1>(key) == op && std::get<2>(key) == precision &&
           (family.empty() || std::get<3>(key) == family);
  };
  std::string device(device_name);
  if (device.empty()) {
    // The device of the newest model of this kind.
    int64_t newest = 0;
    for (const auto& [key, m] : models_) {
      if (matches(key) && m.id > newest) {
        newest = m.id;
        device = std::get<0>(key);
      }
    }
  }
  std::vector<LoadedModel> out;
  for (const auto& [key, m] : models_) {
    if (matches(key) && std::get<0>(key) == device) out.push_back(m);
  }
  std::sort(out.begin(), out.end(),
            [](const LoadedModel& a, const LoadedModel& b) { return a.id > b.id; });
  return out;
}

int SurrogateRegistry::size() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(models_.size());
}

}  // namespace blocktune
