// The in-memory TuningStore: the same contract as the SQLite store, kept in
// vectors behind one reader/writer lock. Commit validates first and then
// applies the batch under the write lock, so readers see whole batches.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <mutex>
#include <shared_mutex>

#include "server/tuning_store.h"

namespace blocktune {
namespace {

class MemoryStore final : public TuningStore {
 public:
  std::string Describe() const override { return ":memory:"; }
  int SchemaVersion() const override { return 0; }

  StatusOr<CommitResult> Commit(const WriteBatch& batch) override {
    BT_RETURN_IF_ERROR(Validate(batch));
    std::unique_lock lock(mu_);
    for (const CampaignRecord& c : batch.campaign_updates) {
      if (FindCampaign(c.id) == nullptr) {
        return NotFound("campaign " + std::to_string(c.id) + " does not exist");
      }
    }
    const int64_t now = NowUnix();
    CommitResult result;
    for (const SampleRecord& s : batch.samples) {
      samples_.push_back({DeviceId(s.device), s});
      if (samples_.back().record.measured_unix == 0)
        samples_.back().record.measured_unix = now;
    }
    for (const TunedRecord& t : batch.tuned) {
      Tuned row{DeviceId(t.device), t};
      if (row.record.updated_unix == 0) row.record.updated_unix = now;
      auto same = std::find_if(tuned_.begin(), tuned_.end(), [&](const Tuned& o) {
        return o.device_id == row.device_id &&
               o.record.context == t.context &&
               o.record.kernel.family == t.kernel.family &&
               o.record.kernel.params == t.kernel.params;
      });
      if (same != tuned_.end()) *same = row;
      else tuned_.push_back(row);
    }
    for (const ModelRecord& m : batch.models) {
      DeviceId(m.device);
      models_.push_back(m);
      models_.back().id = static_cast<int64_t>(models_.size());
      if (models_.back().created_unix == 0) models_.back().created_unix = now;
      result.model_ids.push_back(models_.back().id);
    }
    for (const CampaignRecord& c : batch.campaign_updates) WriteCampaign(c, now);
    generation_.tuned += !batch.tuned.empty();
    generation_.models += !batch.models.empty();
    return result;
  }

  StatusOr<std::vector<DeviceRecord>> ListDevices() override {
    std::shared_lock lock(mu_);
    std::vector<DeviceRecord> out;
    for (const DeviceFingerprint& d : devices_) out.push_back({d, 0, 0});
    for (const Sample& s : samples_) {
      ++out[s.device_id].samples;
      out[s.device_id].stale_samples += !s.record.kernel.IsCurrent();
    }
    for (const Tuned& t : tuned_) {
      ++out[t.device_id].tuned;
      out[t.device_id].stale_tuned += !t.record.kernel.IsCurrent();
    }
    return out;
  }

  StatusOr<std::vector<SampleRecord>> ListSamples(
      const StoreFilter& filter) override {
    std::shared_lock lock(mu_);
    std::vector<SampleRecord> out;
    for (const Sample& s : samples_) {
      if (filter.limit > 0 && static_cast<int64_t>(out.size()) >= filter.limit)
        break;
      if (Matches(filter, s.record.device, OpOf(s.record.context),
                  s.record.campaign_id, s.record.kernel.family,
                  s.record.kernel.IsCurrent()))
        out.push_back(s.record);
    }
    return out;
  }

  StatusOr<int64_t> CountSamples(const StoreFilter& filter) override {
    std::shared_lock lock(mu_);
    int64_t n = 0;
    for (const Sample& s : samples_)
      n += Matches(filter, s.record.device, OpOf(s.record.context),
                   s.record.campaign_id, s.record.kernel.family,
                   s.record.kernel.IsCurrent());
    return filter.limit > 0 ? std::min(n, filter.limit) : n;
  }

  StatusOr<std::vector<TunedRecord>> FindTuned(const Context& ctx,
                                               std::string_view device_name,
                                               int top) override {
    std::shared_lock lock(mu_);
    std::vector<const Tuned*> hits;
    for (const Tuned& t : tuned_) {
      if (t.record.context == ctx &&
          (device_name.empty() || t.record.device.name == device_name) &&
          t.record.kernel.IsCurrent())
        hits.push_back(&t);
    }
    // The SQLite store's order: measured first, then time, device,
    // family, then the parameters' text.
    std::sort(hits.begin(), hits.end(), [](const Tuned* a, const Tuned* b) {
      return std::make_tuple(!(a->record.measured_s > 0),
                             a->record.RankSeconds(), a->device_id,
                             a->record.kernel.family,
                             a->record.kernel.ParamsText()) <
             std::make_tuple(!(b->record.measured_s > 0),
                             b->record.RankSeconds(), b->device_id,
                             b->record.kernel.family,
                             b->record.kernel.ParamsText());
    });
    std::vector<TunedRecord> out;
    for (size_t i = 0; i < hits.size() && static_cast<int>(i) < top; ++i)
      out.push_back(hits[i]->record);
    return out;
  }

  StatusOr<std::vector<TunedRecord>> ListTuned(
      const StoreFilter& filter) override {
    std::shared_lock lock(mu_);
    std::vector<TunedRecord> out;
    for (const Tuned& t : tuned_) {
      if (filter.limit > 0 && static_cast<int64_t>(out.size()) >= filter.limit)
        break;
      if (MatchesTuned(filter, t.record)) out.push_back(t.record);
    }
    return out;
  }

  StatusOr<int64_t> CountTuned() override {
    std::shared_lock lock(mu_);
    return static_cast<int64_t>(tuned_.size());
  }

  StatusOr<int64_t> CountTuned(const StoreFilter& filter) override {
    std::shared_lock lock(mu_);
    int64_t n = 0;
    for (const Tuned& t : tuned_) n += MatchesTuned(filter, t.record);
    return filter.limit > 0 ? std::min(n, filter.limit) : n;
  }

  StatusOr<ModelRecord> GetModel(int64_t id) override {
    std::shared_lock lock(mu_);
    if (id < 1 || id > static_cast<int64_t>(models_.size()))
      return NotFound("model " + std::to_string(id) + " does not exist");
    return models_[id - 1];
  }

  StatusOr<std::vector<ModelRecord>> ListModels(
      const StoreFilter& filter) override {
    std::shared_lock lock(mu_);
    std::vector<ModelRecord> out;
    for (const ModelRecord& m : models_) {
      if (filter.limit > 0 && static_cast<int64_t>(out.size()) >= filter.limit)
        break;
      if (Matches(filter, m.device, m.op, {}, m.family, m.IsCurrent()))
        out.push_back(m);
    }
    return out;
  }

  StatusOr<CampaignRecord> CreateCampaign(const CampaignSpec& spec) override {
    BT_RETURN_IF_ERROR(Validate(spec));
    std::unique_lock lock(mu_);
    CampaignRecord c;
    c.id = static_cast<int64_t>(campaigns_.size()) + 1;
    c.spec = spec;
    c.created_unix = c.updated_unix = NowUnix();
    campaigns_.push_back(c);
    return c;
  }

  StatusOr<CampaignRecord> GetCampaign(int64_t id) override {
    std::shared_lock lock(mu_);
    const CampaignRecord* c = FindCampaign(id);
    if (c == nullptr)
      return NotFound("campaign " + std::to_string(id) + " does not exist");
    return *c;
  }

  StatusOr<std::vector<CampaignRecord>> ListCampaigns() override {
    std::shared_lock lock(mu_);
    return campaigns_;
  }

  StatusOr<CampaignRecord> PlanWork(int64_t id, const PlanFn& plan) override {
    std::unique_lock lock(mu_);
    CampaignRecord* stored = FindCampaign(id);
    if (stored == nullptr) return NoCampaign(id);
    CampaignRecord record = *stored;
    WorkTotals totals = Totals(id);
    BT_ASSIGN_OR_RETURN(std::vector<WorkItem> items, plan(record, totals));
    BT_RETURN_IF_ERROR(Validate(record, "campaign"));
    int64_t next = totals.seqs;
    for (WorkItem& item : items) {
      item.campaign_id = id;
      item.first_seq = next;
      if (item.state != WorkState::kDone) item.state = WorkState::kQueued;
      item.holder.clear();
      item.attempts = 0;
      next += item.count;
      work_[id].push_back({item, 0});
    }
    WriteCampaign(record, NowUnix());
    return *FindCampaign(id);
  }

  StatusOr<std::optional<ClaimedWork>> ClaimWork(int64_t id,
                                                 const std::string& holder,
                                                 int lease_s) override {
    std::unique_lock lock(mu_);
    if (FindCampaign(id) == nullptr) return NoCampaign(id);
    const int64_t now = NowMs();
    for (Work& w : work_[id]) {
      if (w.item.state == WorkState::kDone) continue;
      if (w.item.state == WorkState::kLeased && w.lease_until_ms >= now)
        continue;
      w.item.state = WorkState::kLeased;
      w.item.holder = holder;
      ++w.item.attempts;
      w.lease_until_ms = now + 1000LL * lease_s;
      ClaimedWork claimed{w.item, {}};
      for (const Sample& s : samples_) {
        const int64_t seq = s.record.seq;
        if (s.record.campaign_id == id && seq >= w.item.first_seq &&
            seq < w.item.first_seq + w.item.count)
          claimed.stored_seqs.push_back(seq);
      }
      std::sort(claimed.stored_seqs.begin(), claimed.stored_seqs.end());
      return std::optional<ClaimedWork>(std::move(claimed));
    }
    return std::optional<ClaimedWork>();
  }

  StatusOr<std::vector<int64_t>> RenewWork(int64_t id,
                                           const std::string& holder,
                                           const std::vector<int64_t>& items,
                                           int lease_s) override {
    std::unique_lock lock(mu_);
    std::vector<int64_t> lost;
    for (int64_t first : items) {
      Work* w = FindWork(id, first);
      if (w == nullptr || !HeldBy(*w, holder)) {
        lost.push_back(first);
        continue;
      }
      w->lease_until_ms = NowMs() + 1000LL * lease_s;
    }
    return lost;
  }

  StatusOr<CampaignRecord> CommitWork(int64_t id, const std::string& holder,
                                      const WorkCommit& work,
                                      const UpdateFn& update) override {
    BT_RETURN_IF_ERROR(Validate(work));
    std::unique_lock lock(mu_);
    CampaignRecord* stored = FindCampaign(id);
    if (stored == nullptr) return NoCampaign(id);
    for (int64_t first : work.items) {
      const Work* w = FindWork(id, first);
      if (w == nullptr || !HeldBy(*w, holder)) return WorkLost(id, first);
    }
    std::set<int64_t> seqs;
    for (const Sample& s : samples_)
      if (s.record.campaign_id == id && s.record.seq >= 0)
        seqs.insert(s.record.seq);
    for (const SampleRecord& s : work.samples) {
      if (s.seq >= 0 && !seqs.insert(s.seq).second) return SampleStored(id, s.seq);
    }
    CampaignRecord record = *stored;
    WorkTotals totals = Totals(id);
    for (int64_t first : work.finished)
      totals.open -= FindWork(id, first)->item.state != WorkState::kDone;
    BT_RETURN_IF_ERROR(update(record, totals));
    BT_RETURN_IF_ERROR(Validate(record, "campaign"));
    const int64_t now = NowUnix();
    for (const SampleRecord& s : work.samples) {
      samples_.push_back({DeviceId(s.device), s});
      if (samples_.back().record.measured_unix == 0)
        samples_.back().record.measured_unix = now;
    }
    for (int64_t first : work.finished)
      FindWork(id, first)->item.state = WorkState::kDone;
    WriteCampaign(record, now);
    return *FindCampaign(id);
  }

  Status ReleaseWork(int64_t id, const std::string& holder,
                     const std::vector<int64_t>& items) override {
    std::unique_lock lock(mu_);
    for (int64_t first : items) {
      Work* w = FindWork(id, first);
      if (w == nullptr || !HeldBy(*w, holder)) continue;
      w->item.state = WorkState::kQueued;
      w->item.holder.clear();
    }
    return OkStatus();
  }

  Status ExpireLeases() override {
    std::unique_lock lock(mu_);
    for (auto& [id, items] : work_)
      for (Work& w : items) w.lease_until_ms = 0;
    return OkStatus();
  }

  StatusOr<std::vector<WorkItem>> ListWork(int64_t id) override {
    std::shared_lock lock(mu_);
    std::vector<WorkItem> out;
    auto it = work_.find(id);
    if (it == work_.end()) return out;
    for (const Work& w : it->second) {
      out.push_back(w.item);
      out.back().candidates.clear();
    }
    return out;
  }

  StatusOr<StoreGeneration> Generation() override {
    std::shared_lock lock(mu_);
    return generation_;
  }

 private:
  struct Sample {
    size_t device_id;
    SampleRecord record;
  };
  struct Tuned {
    size_t device_id;
    TunedRecord record;
  };

  // Caller holds the write lock.
  size_t DeviceId(const DeviceFingerprint& d) {
    auto [it, inserted] = device_ids_.emplace(d, devices_.size());
    if (inserted) devices_.push_back(d);
    return it->second;
  }

  struct Work {
    WorkItem item;
    int64_t lease_until_ms;
  };

  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static Status NoCampaign(int64_t id) {
    return NotFound("campaign " + std::to_string(id) + " does not exist");
  }
  static bool HeldBy(const Work& w, const std::string& holder) {
    return w.item.state == WorkState::kLeased && w.item.holder == holder;
  }

  // Caller holds the lock.
  Work* FindWork(int64_t id, int64_t first) {
    auto it = work_.find(id);
    if (it == work_.end()) return nullptr;
    for (Work& w : it->second)
      if (w.item.first_seq == first) return &w;
    return nullptr;
  }
  WorkTotals Totals(int64_t id) const {
    WorkTotals t;
    auto it = work_.find(id);
    if (it == work_.end()) return t;
    for (const Work& w : it->second) {
      ++t.items;
      t.open += w.item.state != WorkState::kDone;
      t.seqs += w.item.count;
    }
    return t;
  }
  void WriteCampaign(const CampaignRecord& c, int64_t now) {
    if (c.device) DeviceId(*c.device);
    CampaignRecord* stored = FindCampaign(c.id);
    const int64_t created = stored->created_unix;
    *stored = c;
    stored->created_unix = created;
    stored->updated_unix = now;
  }

  CampaignRecord* FindCampaign(int64_t id) {
    if (id < 1 || id > static_cast<int64_t>(campaigns_.size())) return nullptr;
    return &campaigns_[id - 1];
  }

  static bool MatchesTuned(const StoreFilter& f, const TunedRecord& t) {
    return Matches(f, t.device, OpOf(t.context), {}, t.kernel.family,
                   t.kernel.IsCurrent());
  }

  static bool Matches(const StoreFilter& f, const DeviceFingerprint& device,
                      Op op, std::optional<int64_t> campaign_id,
                      const std::string& family, bool current) {
    if (!f.device_name.empty() && device.name != f.device_name) return false;
    if (f.op && *f.op != op) return false;
    if (!f.family.empty() && family != f.family) return false;
    if (f.versions == VersionFilter::kCurrent && !current) return false;
    if (f.versions == VersionFilter::kStale && current) return false;
    // The campaign filter applies to samples only.
    if (f.campaign_id && campaign_id && *campaign_id != *f.campaign_id)
      return false;
    return true;
  }

  std::shared_mutex mu_;
  std::vector<DeviceFingerprint> devices_;
  std::map<DeviceFingerprint, size_t> device_ids_;
  std::vector<Sample> samples_;
  std::vector<Tuned> tuned_;
  std::vector<ModelRecord> models_;
  std::vector<CampaignRecord> campaigns_;
  std::map<int64_t, std::vector<Work>> work_;  // by campaign, by first_seq
  StoreGeneration generation_;
};

}  // namespace

std::unique_ptr<TuningStore> NewMemoryStore() {
  return std::make_unique<MemoryStore>();
}

}  // namespace blocktune
