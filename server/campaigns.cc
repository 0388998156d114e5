#include "server/campaigns.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <iomanip>
#include <set>
#include <thread>

#include "server/campaign_plan.h"
#include "server/log.h"
#include "server/worker_process.h"
#include "tuner/candidate_stream.h"
#include "tuner/device_profile.h"
#include "tuner/worker.h"

namespace blocktune {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Adds the seconds from its construction to the end of its scope to *into.
class TimeInto {
 public:
  explicit TimeInto(double* into) : into_(into) {}
  ~TimeInto() { *into_ += Since(start_); }

 private:
  double* const into_;
  const Clock::time_point start_ = Clock::now();
};

std::string Truncate(std::string s) {
  if (s.size() > 4096) s.resize(4096);
  return s;
}

// The cursor of a stored campaign; an empty blob is a fresh campaign.
StatusOr<tuner::CampaignCursor> ReadCursor(const CampaignRecord& c) {
  tuner::CampaignCursor cursor;
  bool ok = c.rng_state.empty() ||
            (cursor.ParseFromString(c.rng_state) &&
             (cursor.rng_size() == 0 || cursor.rng_size() == 4));
  for (const tuner::FamilyCursor& f : cursor.families())
    ok &= f.rng_size() == 0 || f.rng_size() == 4;
  if (!ok) {
    return DataLoss("campaign " + std::to_string(c.id) +
                    ": its stored cursor is corrupt");
  }
  return cursor;
}

// The GPU profile a campaign samples for: its first GPU's.
StatusOr<DeviceProfile> CampaignProfile(const CampaignOptions& options,
                                        const CampaignSpec& spec) {
  if (options.fake) return ProfileByName("h100");
  const int gpu = spec.gpus.empty() ? options.gpus.front() : spec.gpus.front();
  return ProfileFromDevice(gpu);
}

void FillFromCursor(const tuner::CampaignCursor& cursor,
                    CampaignProgressInfo* p) {
  p->acceptance = cursor.draws() ? double(cursor.accepted()) / cursor.draws() : 0;
  p->failures.clear();
  for (const auto& [kind, n] : cursor.failures()) p->failures[kind] = n;
  p->best_tflops = cursor.best_tflops();
  p->elapsed_s = cursor.elapsed_s();
  p->verified = cursor.verified();
  p->worker_restarts = cursor.worker_restarts();
  p->done = p->record.samples_ok + p->record.samples_failed;
  const CampaignSpec& spec = p->record.spec;
  p->target = spec.max_samples;
  if (PlansListAtOnce(spec) && cursor.retune_total() > 0) {
    p->target = spec.max_samples > 0
                    ? std::min(spec.max_samples, cursor.retune_total())
                    : cursor.retune_total();
  }
  p->samples_by_family.clear();
  for (const auto& [family, n] : cursor.samples_by_family())
    p->samples_by_family[family] = n;
  p->samples_by_daemon.clear();
  for (const auto& [daemon, n] : cursor.samples_by_daemon())
    p->samples_by_daemon[daemon] = n;
  // A cursor from before families: one ffma family, fp32.
  if (p->samples_by_family.empty() && p->done > 0 && !spec.retune_stale &&
      cursor.families_size() == 0) {
    p->samples_by_family[std::string(FfmaFamily(spec.op).name())] = p->done;
  }
}

// A guided campaign's plan, ranked ahead of the measuring on a thread of
// its own: GuidedPlanner::Search over chunks of contexts in order, at most
// kAhead chunks waiting to be stored. The campaign takes them in order
// from the context its cursor says is next; a Take from any other context
// (another daemon planned meanwhile, or a resume) drops what was ranked
// and starts over from there.
class GuidedPrefetch {
 public:
  struct Chunk {
    int64_t begin = 0, end = 0;  // contexts [begin, end)
    int64_t answered = 0;        // of them with candidates
    std::vector<Candidate> candidates;
  };
  static constexpr size_t kAhead = 4;

  // Ranks from context `from` at once; `on_ready` is called (on the
  // prefetch thread, no lock held) after each chunk is ready.
  GuidedPrefetch(std::unique_ptr<GuidedPlanner> planner, int64_t from,
                 int threads, std::function<void()> on_ready)
      : planner_(std::move(planner)),
        threads_(std::max(1, threads)),
        chunk_(std::max(8, 2 * threads_)),
        on_ready_(std::move(on_ready)),
        next_(from) {
    thread_ = std::thread([this] { Main(); });
  }
  ~GuidedPrefetch() {
    {
      std::lock_guard lock(mu_);  // so that no wait misses it
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  const GuidedPlanner& planner() const { return *planner_; }
  // Seconds the thread has spent ranking so far.
  double ranking_s() {
    std::lock_guard lock(mu_);
    return ranking_s_;
  }

  // The chunk that starts at context `from`, waiting up to `wait` for it;
  // nullopt when it is not ready by then, or `from` is past the last
  // context.
  std::optional<Chunk> Take(int64_t from, std::chrono::milliseconds wait) {
    std::unique_lock lock(mu_);
    while (!ready_.empty() && ready_.front().end <= from) ready_.pop_front();
    const bool off = ready_.empty() ? next_ != from : ready_.front().begin != from;
    if (off) {
      ready_.clear();
      next_ = from;
      ++epoch_;
      cv_.notify_all();
    }
    if (from >= planner_->contexts()) return std::nullopt;
    cv_.wait_for(lock, wait, [&] { return !ready_.empty(); });
    if (ready_.empty()) return std::nullopt;
    Chunk c = std::move(ready_.front());
    ready_.pop_front();
    cv_.notify_all();  // room for one more
    return c;
  }

 private:
  void Main() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] {
        return stop_ ||
               (ready_.size() < kAhead && next_ < planner_->contexts());
      });
      if (stop_) return;
      Chunk c;
      c.begin = next_;
      c.end = std::min(next_ + chunk_, planner_->contexts());
      const uint64_t epoch = epoch_;
      lock.unlock();
      const auto started = Clock::now();
      c.candidates =
          planner_->Search(c.begin, c.end, threads_, &c.answered, &stop_);
      const double took = Since(started);
      lock.lock();
      ranking_s_ += took;
      if (stop_) return;
      if (epoch != epoch_) continue;  // a Take moved the start meanwhile
      next_ = c.end;
      ready_.push_back(std::move(c));
      cv_.notify_all();
      lock.unlock();
      on_ready_();
      lock.lock();
    }
  }

  const std::unique_ptr<GuidedPlanner> planner_;
  const int threads_;
  const int64_t chunk_;
  const std::function<void()> on_ready_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> ready_;
  int64_t next_;         // the first context not ranked (nor being ranked)
  uint64_t epoch_ = 0;   // moved by a Take from elsewhere
  std::atomic<bool> stop_{false};  // Search reads it between contexts too
  double ranking_s_ = 0;
  std::thread thread_;
};

}  // namespace

// ---------------------------------------------------------------- Run --

// One campaign on this daemon's GPUs. The campaign's candidates are planned
// in work items (TuningStore::PlanWork) that every daemon on the store
// claims (ClaimWork); this daemon measures the items it holds and commits
// their samples (CommitWork) with the campaign's counters, under the
// campaign's lock, so daemons add to the counters and never overwrite
// each other's.
class CampaignManager::Run {
 public:
  Run(TuningStore* store, const CampaignOptions& options, CampaignRecord record)
      : store_(store), options_(options), record_(std::move(record)) {}

  int64_t id() const { return record_.id; }

  void RequestCancel() {
    std::lock_guard lock(events_mu_);
    cancel_ = true;
    events_cv_.notify_all();
  }
  void RequestStop() {
    std::lock_guard lock(events_mu_);
    stop_ = true;
    events_cv_.notify_all();
  }
  CampaignProgressInfo Snapshot() {
    std::lock_guard lock(progress_mu_);
    return progress_;
  }

  // Whether Execute left the campaign to other daemons: it names GPUs
  // (spec.gpus) this daemon does not own.
  bool skipped() const { return skipped_; }

  void Execute() {
    Status s = Prepare();
    if (skipped_) {
      BT_LOG(kInfo) << "campaign " << record_.id
                    << " runs on GPUs this daemon does not own; leaving it "
                       "to the daemons that own them";
      return;
    }
    if (s.ok()) s = Loop();
    if (!s.ok()) {
      BT_LOG(kError) << "campaign " << record_.id << " failed: " << s.message();
      // Keep every sample that is complete, if the store still takes them.
      if (Status kept = CommitDone(); !kept.ok()) {
        BT_LOG(kError) << "campaign " << record_.id
                       << ": cannot store its last samples: " << kept.message();
      }
      ReleaseHeld();
      Finish(CampaignState::kFailed, s.message());
    }
    slots_.clear();  // kills the workers, joins their readers
  }

 private:
  struct Slot {
    int gpu = 0;
    std::unique_ptr<WorkerProcess> process;
    uint64_t generation = 0;
    bool ready = false;
    std::string hello_error;
    int depth = 4;
    std::deque<int64_t> sent;  // seqs in order, not yet answered
    std::optional<int64_t> running;
    Clock::time_point started_at;
    Clock::time_point last_heard;  // spawn, or its last message
    bool watchdog_killed = false;
    int failed_starts = 0;
    bool given_up = false;
    DeviceFingerprint fingerprint;
  };
  // A work item this daemon holds.
  struct Held {
    int64_t count = 0;
    std::set<int64_t> open;  // seqs neither stored nor finished here yet
  };
  struct Done {
    SampleRecord sample;
    bool verified = false;
  };

  Status Prepare() {
    BT_ASSIGN_OR_RETURN(tuner::CampaignCursor cursor, ReadCursor(record_));
    BT_ASSIGN_OR_RETURN(profile_, CampaignProfile(options_, record_.spec));
    if (!PlansListAtOnce(record_.spec))
      BT_RETURN_IF_ERROR(PrepareSampling(cursor));
    for (int gpu : record_.spec.gpus.empty() ? options_.gpus
                                             : record_.spec.gpus) {
      if (std::find(options_.gpus.begin(), options_.gpus.end(), gpu) ==
          options_.gpus.end())
        continue;  // a GPU of the daemon that started it, not ours
      auto slot = std::make_unique<Slot>();
      slot->gpu = gpu;
      slots_.push_back(std::move(slot));
    }
    if (slots_.empty()) {
      skipped_ = true;  // the daemons that own them run it
      return OkStatus();
    }
    // Queued -> running, and the sampled families fixed from here on, even
    // before a sample is in.
    BT_RETURN_IF_ERROR(Plan(/*add=*/false));
    for (size_t i = 0; i < slots_.size(); ++i) Spawn(static_cast<int>(i));
    PublishProgress();
    BT_LOG(kInfo) << "campaign " << record_.id << " running on "
                  << slots_.size() << " GPU(s) of " << options_.daemon_name
                  << ", " << (record_.samples_ok + record_.samples_failed)
                  << " samples stored so far";
    return OkStatus();
  }

  // The families and their streams: those of the cursor when the campaign
  // ran before (so a resume draws from the same ones, whatever this build
  // would pick today), else CampaignFamilies. Planning restores their
  // samplers from the stored cursor each time, since another daemon may
  // have planned since.
  Status PrepareSampling(const tuner::CampaignCursor& cursor) {
    std::vector<const KernelFamily*> families;
    if (cursor.families_size() > 0) {
      for (const tuner::FamilyCursor& f : cursor.families()) {
        auto family = FindFamily(f.family());
        if (!family.ok()) {
          return FailedPrecondition("campaign " + std::to_string(record_.id) +
                                    " samples family " + f.family() +
                                    ", which this blocktuned does not have: " +
                                    family.status().message());
        }
        families.push_back(*family);
      }
    } else if (cursor.rng_size() == 4) {
      // A cursor from before families: the campaign sampled the ffma family
      // of its op (only fp32 ran then), whose state is at the top.
      families = {&FfmaFamily(record_.spec.op)};
    } else {
      BT_ASSIGN_OR_RETURN(families, CampaignFamilies(record_.spec, profile_));
    }
    BT_ASSIGN_OR_RETURN(
        rotation_,
        FamilyRotation::Make(families, record_.spec.dtype, profile_,
                             record_.spec.sampler, record_.spec.seed,
                             WorkOf(record_.spec)));
    for (size_t i = 0; i < rotation_->size(); ++i)
      initial_.push_back(rotation_->state(i));
    return OkStatus();
  }

  // Under the campaign's lock: the cursor's families (added on the first
  // plan, the legacy single-family state carried over).
  void EnsureFamilies(const CampaignRecord& record,
                      tuner::CampaignCursor& cursor) const {
    if (!rotation_ || cursor.families_size() > 0) return;
    const bool legacy = cursor.rng_size() == 4;
    if (!legacy && record.samples_ok + record.samples_failed == 0)
      cursor.set_contexts_per_kernel(options_.contexts_per_kernel);
    for (size_t i = 0; i < rotation_->size(); ++i) {
      tuner::FamilyCursor* fc = cursor.add_families();
      fc->set_family(std::string(rotation_->family(i).name()));
      if (legacy && i == 0) {
        *fc->mutable_rng() = cursor.rng();
        fc->set_draws(cursor.draws());
        fc->set_accepted(cursor.accepted());
      }
    }
    const int64_t stored = record.samples_ok + record.samples_failed;
    if (legacy && cursor.samples_by_family().empty() && stored > 0) {
      (*cursor.mutable_samples_by_family())[std::string(
          rotation_->family(0).name())] = stored;
    }
  }

  // Adds the time since this daemon last ticked to the campaign's elapsed
  // time, unless another daemon ticked since (then from its tick), and not
  // across a gap in which no daemon ran it.
  void Tick(tuner::CampaignCursor& cursor) {
    const double now = UnixSeconds();
    double from = cursor.last_tick_unix();
    if (from <= 0 || now - from > kTickGapS) from = now;
    if (now > from) cursor.set_elapsed_s(cursor.elapsed_s() + (now - from));
    cursor.set_last_tick_unix(std::max(now, cursor.last_tick_unix()));
  }

  // `planned`: candidates planned so far, a pre-work-item prefix included.
  bool BudgetSpent(const tuner::CampaignCursor& cursor, int64_t planned) const {
    const CampaignSpec& spec = record_.spec;
    if (spec.max_samples > 0 && planned >= spec.max_samples) return true;
    if (spec.minutes > 0 && cursor.elapsed_s() >= 60.0 * spec.minutes)
      return true;
    return false;
  }

  // The candidates of one new item, drawn after restoring every family's
  // sampler from `cursor`, which is left after them.
  StatusOr<WorkItem> DrawItem(tuner::CampaignCursor& cursor, int64_t first,
                              int64_t count) {
    for (int i = 0; i < cursor.families_size(); ++i) {
      const tuner::FamilyCursor& fc = cursor.families(i);
      FamilyRotation::State state;
      if (fc.rng_size() == 4) {
        for (int w = 0; w < 4; ++w) state.rng[w] = fc.rng(w);
        state.draws = fc.draws();
        state.accepted = fc.accepted();
        rotation_->Restore(i, state);
      } else {
        rotation_->Restore(i, initial_[i]);  // none drawn from it yet
      }
    }
    rotation_->set_contexts_per_kernel(cursor.contexts_per_kernel());
    tuner::PlannedWork planned;
    for (int64_t seq = first; seq < first + count; ++seq) {
      BT_ASSIGN_OR_RETURN(Candidate c, rotation_->Next(seq));
      *planned.add_candidates() = WorkMessage(seq, c).work();
      const int f = static_cast<int>(rotation_->FamilyOf(seq));
      const FamilyRotation::State after = rotation_->state(f);
      tuner::FamilyCursor* fc = cursor.mutable_families(f);
      fc->clear_rng();
      for (uint64_t v : after.rng) fc->add_rng(v);
      fc->set_draws(after.draws);
      fc->set_accepted(after.accepted);
    }
    int64_t draws = 0, accepted = 0;
    for (const tuner::FamilyCursor& fc : cursor.families()) {
      draws += fc.draws();
      accepted += fc.accepted();
    }
    cursor.set_draws(draws);
    cursor.set_accepted(accepted);
    // What a daemon from before families reads: right for one family.
    cursor.clear_rng();
    if (cursor.families_size() == 1)
      *cursor.mutable_rng() = cursor.families(0).rng();
    WorkItem item;
    item.count = count;
    item.candidates = planned.SerializeAsString();
    return item;
  }

  // The first `n` candidates of `list` as items of item_size candidates,
  // seqs from `first` on, appended to `items`.
  void AddItems(int64_t first, const std::vector<Candidate>& list, size_t n,
                std::vector<WorkItem>& items) const {
    for (size_t b = 0; b < n; b += options_.item_size) {
      const size_t e = std::min<size_t>(n, b + options_.item_size);
      tuner::PlannedWork planned;
      for (size_t i = b; i < e; ++i)
        *planned.add_candidates() =
            WorkMessage(first + static_cast<int64_t>(i), list[i]).work();
      WorkItem item;
      item.count = static_cast<int64_t>(e - b);
      item.candidates = planned.SerializeAsString();
      items.push_back(std::move(item));
    }
  }

  // Under the campaign's lock: a queued campaign starts running; with
  // `add`, one more item of candidates when the budget has room (a
  // retune plans its whole list at once; a guided campaign adds the next
  // chunk its prefetch has ranked, and none while it ranks), else the plan
  // is closed; a closed plan whose items are all done ends the campaign.
  // `*added` (when given): whether an item was added.
  Status Plan(bool add, bool* added = nullptr) {
    if (added) *added = false;
    const TimeInto timed(&plan_s_);
    // A retune plans its whole list at once.
    struct ListPlan {
      std::vector<Candidate> candidates;
      std::string summary;
    };
    std::optional<ListPlan> retune;
    std::optional<GuidedPrefetch::Chunk> chunk;
    if (add && PlansListAtOnce(record_.spec)) {
      BT_ASSIGN_OR_RETURN(tuner::CampaignCursor c, ReadCursor(record_));
      if (!c.plan_closed() && record_.spec.retune_stale) {
        BT_ASSIGN_OR_RETURN(RetunePlan r, PlanRetune(*store_, record_.spec,
                                                     device_name(), profile_));
        std::string summary = r.Summary(record_.spec, device_name());
        retune = ListPlan{std::move(r.candidates), std::move(summary)};
      } else if (!c.plan_closed()) {
        if (!guided_) {
          if (!options_.guide) {
            return FailedPrecondition(
                "a guided campaign needs the daemon's models, and this "
                "campaign manager has none");
          }
          BT_ASSIGN_OR_RETURN(auto planner,
                              GuidedPlanner::Make(record_.spec, profile_,
                                                  device_name(), options_.guide));
          guided_started_ = Clock::now();
          guided_ = std::make_unique<GuidedPrefetch>(
              std::move(planner), c.guided_next_context(),
              options_.guide_threads, [this] { Wake(); });
        }
        // Idle GPUs wait a little for the first chunk; busy ones go on.
        bool idle = todo_.empty();
        for (const auto& slot : slots_) idle &= slot->sent.empty();
        chunk = guided_->Take(c.guided_next_context(),
                              std::chrono::milliseconds(idle ? 200 : 0));
        if (!chunk && c.guided_next_context() < guided_->planner().contexts())
          return OkStatus();  // still ranking
      }
    }
    int64_t new_items = 0;
    auto plan = [&](CampaignRecord& record, const WorkTotals& totals)
        -> StatusOr<std::vector<WorkItem>> {
      std::vector<WorkItem> items;
      if (IsTerminal(record.state)) return items;
      BT_ASSIGN_OR_RETURN(tuner::CampaignCursor cursor, ReadCursor(record));
      if (record.state == CampaignState::kQueued) {
        record.state = CampaignState::kRunning;
        record.message.clear();
      }
      EnsureFamilies(record, cursor);
      int64_t planned = totals.seqs;
      if (totals.items == 0 && cursor.next_seq() > 0) {
        // A campaign from before work items committed candidates
        // 0 .. next_seq-1 as a prefix: one item, done, stands for them.
        WorkItem before;
        before.count = cursor.next_seq();
        before.state = WorkState::kDone;
        items.push_back(std::move(before));
        planned = cursor.next_seq();
      }
      if (add) Tick(cursor);
      if (add && !cursor.plan_closed()) {
        if (IsGuided(record.spec)) {
          AddGuided(cursor, planned, chunk, items);
        } else if (retune) {
          cursor.set_retune_total(static_cast<int64_t>(retune->candidates.size()));
          cursor.set_retune_summary(retune->summary);
          size_t n = retune->candidates.size();
          if (record.spec.max_samples > 0)
            n = std::min<size_t>(n, record.spec.max_samples);
          AddItems(planned, retune->candidates, n, items);
          cursor.set_next_seq(planned + static_cast<int64_t>(n));
          cursor.set_plan_closed(true);
        } else if (record.spec.retune_stale || BudgetSpent(cursor, planned)) {
          cursor.set_plan_closed(true);
        } else {
          int64_t n = options_.item_size;
          if (record.spec.max_samples > 0)
            n = std::min(n, record.spec.max_samples - planned);
          BT_ASSIGN_OR_RETURN(WorkItem item, DrawItem(cursor, planned, n));
          items.push_back(std::move(item));
          cursor.set_next_seq(planned + n);
          if (record.spec.max_samples > 0 &&
              planned + n >= record.spec.max_samples)
            cursor.set_plan_closed(true);
        }
      }
      int64_t open = totals.open;
      for (const WorkItem& item : items) open += item.state != WorkState::kDone;
      new_items = static_cast<int64_t>(items.size());
      if (cursor.plan_closed() && open == 0) EndDone(record, cursor);
      record.rng_state = cursor.SerializeAsString();
      return items;
    };
    BT_ASSIGN_OR_RETURN(CampaignRecord record, store_->PlanWork(record_.id, plan));
    const bool was_open = !cursor_.plan_closed();
    Adopt(record);
    if (added) *added = new_items > 0;
    if (guided_ && new_items > 0 && !guided_logged_) {
      guided_logged_ = true;
      BT_LOG(kInfo) << "campaign " << record_.id << ": the models ranked its "
                    << "first candidates (to context "
                    << cursor_.guided_next_context() << " of "
                    << guided_->planner().contexts() << ") in " << std::fixed
                    << std::setprecision(1) << Since(guided_started_)
                    << " s; the rest are ranked while the GPUs measure";
    }
    if (guided_ && was_open && cursor_.plan_closed()) {
      BT_LOG(kInfo) << "campaign " << record_.id << ": "
                    << cursor_.retune_summary() << " (planned in "
                    << std::fixed << std::setprecision(1)
                    << Since(guided_started_) << " s, the models ranking for "
                    << guided_->ranking_s() << " s while the GPUs measured)";
      guided_.reset();
    }
    return OkStatus();
  }

  // Under the campaign's lock, a guided campaign: stores the candidates of
  // `chunk` (when it starts at the cursor's next context: else another
  // daemon planned it first, and nothing is added) as items from seq
  // `planned`, up to max_samples; closes the plan after the last context,
  // at max_samples, or when the time budget is spent. retune_total is the
  // budget until the plan is whole, then what was planned.
  void AddGuided(tuner::CampaignCursor& cursor, int64_t planned,
                 const std::optional<GuidedPrefetch::Chunk>& chunk,
                 std::vector<WorkItem>& items) {
    const CampaignSpec& spec = record_.spec;
    if (cursor.retune_total() == 0) cursor.set_retune_total(spec.max_samples);
    if (BudgetSpent(cursor, planned)) {
      cursor.set_plan_closed(true);
      return;
    }
    if (!guided_ || cursor.guided_next_context() >= guided_->planner().contexts()) {
      cursor.set_plan_closed(true);  // every context planned
      cursor.set_retune_total(planned);
      return;
    }
    if (!chunk) return;
    if (chunk->begin != cursor.guided_next_context()) {
      BT_LOG(kDebug) << "campaign " << record_.id << ": contexts "
                     << chunk->begin << ".." << chunk->end - 1
                     << " were planned by another daemon first; ranking "
                        "from context "
                     << cursor.guided_next_context();
      return;
    }
    const size_t n = static_cast<size_t>(std::min<int64_t>(
        static_cast<int64_t>(chunk->candidates.size()),
        spec.max_samples - planned));
    AddItems(planned, chunk->candidates, n, items);
    const int64_t now_planned = planned + static_cast<int64_t>(n);
    cursor.set_next_seq(now_planned);
    cursor.set_guided_next_context(chunk->end);
    cursor.set_guided_answered(cursor.guided_answered() + chunk->answered);
    cursor.set_retune_summary(
        guided_->planner().Summary(cursor.guided_answered(), now_planned));
    if (chunk->end >= guided_->planner().contexts() ||
        now_planned >= spec.max_samples) {
      cursor.set_plan_closed(true);
      cursor.set_retune_total(now_planned);
    }
  }

  // Wakes the loop (a guided chunk is ready to be planned).
  void Wake() {
    std::lock_guard lock(events_mu_);
    wake_ = true;
    events_cv_.notify_all();
  }

  // The campaign ran to the end of its plan.
  void EndDone(CampaignRecord& record, const tuner::CampaignCursor& cursor) {
    record.state = CampaignState::kDone;
    std::string m;
    if (IsGuided(record.spec)) {
      m = cursor.retune_summary() + "; measured " +
          std::to_string(record.samples_ok + record.samples_failed);
    } else if (record.spec.retune_stale) {
      m = cursor.retune_summary();
      if (cursor.retune_total() > 0) {
        const int64_t stored = record.samples_ok + record.samples_failed;
        m += "; re-measured " + std::to_string(stored);
        const int64_t left = cursor.retune_total() - stored;
        if (left > 0) {
          m += ", " + std::to_string(left) +
               " left when its budget ran out (a new --retune-stale campaign "
               "carries on with them)";
        }
      }
    }
    record.message = m;
  }

  // The record a store call returned: ours from now on.
  void Adopt(const CampaignRecord& record) {
    record_ = record;
    if (auto c = ReadCursor(record_); c.ok()) cursor_ = *c;
    PublishProgress();
  }

  // A list campaign whose time is up: a retune whose whole list is planned,
  // or a guided campaign, planned or not (its plan steps stop adding at the
  // budget, but the items already planned would run on).
  bool ListTimeSpent() const {
    const CampaignSpec& spec = record_.spec;
    return PlansListAtOnce(spec) && spec.minutes > 0 &&
           (cursor_.plan_closed() || IsGuided(spec)) &&
           cursor_.elapsed_s() >= 60.0 * spec.minutes;
  }

  std::string device_name() const {
    if (record_.device) return record_.device->name;
    for (const auto& slot : slots_)
      if (slot->ready) return slot->fingerprint.name;
    return "";
  }

  void Spawn(int i) {
    Slot& slot = *slots_[i];
    slot.process.reset();
    slot.ready = false;
    slot.running.reset();
    slot.watchdog_killed = false;
    slot.hello_error.clear();
    slot.last_heard = Clock::now();
    ++slot.generation;
    std::vector<std::string> argv = {options_.worker_path, "--gpu",
                                     std::to_string(slot.gpu)};
    argv.insert(argv.end(), options_.worker_args.begin(),
                options_.worker_args.end());
    // Several workers share the host's cores: each compiles on its share
    // (a worker alone takes all but one). Two H100 workers of 31 threads
    // each on 32 cores compiled half as many kernels per second together
    // as one did alone (issue 20's scaling run).
    if (slots_.size() > 1 &&
        std::find(argv.begin(), argv.end(), "--compile-threads") == argv.end()) {
      const int cores = static_cast<int>(std::thread::hardware_concurrency());
      const int slots = static_cast<int>(slots_.size());
      argv.push_back("--compile-threads");
      argv.push_back(std::to_string(std::max(1, (cores - slots) / slots)));
    }
    auto process = WorkerProcess::Spawn(
        argv, i, slot.generation, [this](WorkerEvent e) { Post(std::move(e)); });
    if (!process.ok()) {
      slot.given_up = true;
      slot.hello_error = process.status().message();
      return;
    }
    slot.process = std::move(*process);
  }

  void Post(WorkerEvent e) {
    std::lock_guard lock(events_mu_);
    events_.push_back(std::move(e));
    events_cv_.notify_all();
  }

  Status Loop() {
    auto last_commit = Clock::now();
    auto last_renew = Clock::now();
    while (true) {
      std::deque<WorkerEvent> events;
      bool cancel, stop;
      {
        std::unique_lock lock(events_mu_);
        events_cv_.wait_for(lock, std::chrono::milliseconds(50), [&] {
          return !events_.empty() || cancel_ || stop_ || wake_;
        });
        wake_ = false;
        events.swap(events_);
        cancel = cancel_;
        stop = stop_;
      }
      for (WorkerEvent& e : events) Handle(std::move(e));
      if (cancel || stop) {
        BT_RETURN_IF_ERROR(CommitDone());
        ReleaseHeld();
        if (cancel) {
          Finish(CampaignState::kCancelled, "cancelled on request");
        } else {
          BT_LOG(kInfo) << "campaign " << record_.id
                        << " paused for shutdown; its items go back to the "
                           "store for any daemon";
        }
        return OkStatus();
      }
      Watchdog();
      int alive = 0, ready = 0;
      for (const auto& slot : slots_) {
        alive += !slot->given_up;
        ready += slot->ready && !slot->given_up;
      }
      if (alive == 0) {
        std::string why;
        for (const auto& slot : slots_) {
          why += (why.empty() ? "" : "; ") + std::string("GPU ") +
                 std::to_string(slot->gpu) + ": " + slot->hello_error;
        }
        return FailedPrecondition("no GPU worker could run: " + why);
      }
      if (ready > 0 && !IsTerminal(record_.state)) BT_RETURN_IF_ERROR(Claim());
      Feed();
      const double since_commit = Since(last_commit);
      if ((!done_.empty() && since_commit * 1000 >= options_.commit_every_ms) ||
          (!held_.empty() && since_commit >= kHeartbeatS)) {
        BT_RETURN_IF_ERROR(CommitDone());
        last_commit = Clock::now();
      }
      if (!held_.empty() && Since(last_renew) >= options_.lease_s / 3.0) {
        BT_RETURN_IF_ERROR(Renew());
        last_renew = Clock::now();
      }
      if (!IsTerminal(record_.state) && ListTimeSpent()) {
        // A retune or guided campaign planned its whole list at its start,
        // so no plan step stops it: its time budget ends it here, and the
        // rest of the list stays unmeasured.
        BT_RETURN_IF_ERROR(CommitDone());
        ReleaseHeld();
        if (!IsTerminal(record_.state)) {
          const int64_t stored = record_.samples_ok + record_.samples_failed;
          const int64_t left =
              std::max<int64_t>(0, cursor_.retune_total() - stored);
          Finish(CampaignState::kDone,
                 cursor_.retune_summary() + "; measured " +
                     std::to_string(stored) + "; its " +
                     std::to_string(record_.spec.minutes) +
                     "-minute budget ended it with " + std::to_string(left) +
                     " left");
        }
      }
      if (IsTerminal(record_.state)) {
        // Ended elsewhere (done, or cancelled on another daemon), or here.
        BT_RETURN_IF_ERROR(CommitDone());
        ReleaseHeld();
        BT_LOG(kInfo) << "campaign " << record_.id << " "
                      << ToString(record_.state) << " after "
                      << (record_.samples_ok + record_.samples_failed)
                      << " samples, " << stored_here_ << " of them from "
                      << options_.daemon_name
                      << (record_.message.empty() ? "" : ": " + record_.message)
                      << "; the store took " << std::fixed
                      << std::setprecision(1) << plan_s_ << " s planning, "
                      << claim_s_ << " s claiming, " << commit_s_
                      << " s committing";
        return OkStatus();
      }
    }
  }

  // Claims items while the GPUs could use more work: first a free item,
  // else a new one planned, else (every daemon's plan is out) nothing but
  // a look again a second later, for an item whose lease runs out.
  Status Claim() {
    int capacity = 0;
    for (const auto& slot : slots_)
      if (slot->ready && !slot->given_up) capacity += slot->depth;
    int in_flight = 0;
    for (const auto& slot : slots_) in_flight += slot->sent.size();
    while (static_cast<int>(todo_.size()) + in_flight < 2 * capacity) {
      if (Clock::now() < next_claim_) return OkStatus();
      const auto claiming = Clock::now();
      BT_ASSIGN_OR_RETURN(std::optional<ClaimedWork> claimed,
                          store_->ClaimWork(record_.id, options_.holder,
                                            options_.lease_s));
      claim_s_ += Since(claiming);
      if (!claimed) {
        if (!cursor_.plan_closed()) {
          bool added = false;
          BT_RETURN_IF_ERROR(Plan(/*add=*/true, &added));
          if (IsTerminal(record_.state)) return OkStatus();
          // A guided campaign whose next chunk is still being ranked: the
          // loop comes back when it is ready (Wake) or in 50 ms.
          if (!added && !cursor_.plan_closed() && IsGuided(record_.spec))
            return OkStatus();
          continue;
        }
        // Every item is planned and held or done: look again later, for a
        // lease that runs out, and (holding none) whether the campaign
        // ended.
        next_claim_ = Clock::now() + std::chrono::milliseconds(500);
        if (held_.empty()) BT_RETURN_IF_ERROR(Plan(/*add=*/false));
        return OkStatus();
      }
      BT_RETURN_IF_ERROR(Take(*claimed));
    }
    return OkStatus();
  }

  Status Take(const ClaimedWork& claimed) {
    const WorkItem& item = claimed.item;
    tuner::PlannedWork planned;
    if (!planned.ParseFromString(item.candidates) ||
        planned.candidates_size() != item.count) {
      return DataLoss("campaign " + std::to_string(record_.id) +
                      ": the work item from seq " +
                      std::to_string(item.first_seq) + " is corrupt");
    }
    Held& held = held_[item.first_seq];
    held.count = item.count;
    const std::set<int64_t> stored(claimed.stored_seqs.begin(),
                                   claimed.stored_seqs.end());
    for (const tuner::WorkItem& w : planned.candidates()) {
      if (stored.count(w.seq())) continue;
      BT_ASSIGN_OR_RETURN(Candidate c, CandidateOf(w));
      held.open.insert(w.seq());
      pending_[w.seq()] = std::move(c);
      todo_.push_back(w.seq());
    }
    if (item.attempts > 1) {
      BT_LOG(kInfo) << "campaign " << record_.id << ": took over the item from "
                    << item.first_seq << " (" << held.open.size() << " of "
                    << item.count << " samples left to measure)";
    }
    return OkStatus();
  }

  StatusOr<Candidate> CandidateOf(const tuner::WorkItem& w) const {
    Candidate c;
    auto fail = [&](const Status& s) {
      return DataLoss("campaign " + std::to_string(record_.id) + ": sample " +
                      std::to_string(w.seq()) + ": " + s.message());
    };
    auto family = FindFamily(w.family());
    if (!family.ok()) return fail(family.status());
    c.family = *family;
    auto ctx = ContextFromString(w.context());
    if (!ctx.ok()) return fail(ctx.status());
    c.ctx = *ctx;
    auto params = ParamsFromText(w.family(), w.params());
    if (!params.ok()) return fail(params.status());
    c.params = *params;
    return c;
  }

  // Sends each ready worker candidates up to its depth, in seq order, and
  // with each candidate the others of the same family and parameters among
  // the next kGroupWindow (one kernel in several contexts,
  // --contexts-per-kernel; with several families their groups interleave),
  // past its depth if need be, so that one worker compiles the kernel once.
  // Split between two workers, a bf16 GEMM campaign's groups were compiled
  // by both: 13,264 texts for 32,000 samples on two H100s against 4,205
  // for 16,000 on one (issue 20's scaling run).
  void Feed() {
    constexpr size_t kGroupWindow = 64;
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = *slots_[i];
      if (!slot.ready || slot.given_up || !slot.process) continue;
      while (static_cast<int>(slot.sent.size()) < slot.depth && !todo_.empty()) {
        const int64_t seq = todo_.front();
        todo_.pop_front();
        auto it = pending_.find(seq);
        if (it == pending_.end()) continue;  // its item was lost
        std::vector<int64_t> group = {seq};
        for (size_t j = 0; j < todo_.size() && j < kGroupWindow;) {
          auto other = pending_.find(todo_[j]);
          if (other != pending_.end() &&
              other->second.family == it->second.family &&
              other->second.params == it->second.params) {
            group.push_back(todo_[j]);
            todo_.erase(todo_.begin() + static_cast<std::ptrdiff_t>(j));
          } else {
            ++j;
          }
        }
        // An idle worker's silence counts from when it gets work: it said
        // nothing while a guided campaign's plan took 44 s, and the
        // watchdog killed it for that (run13).
        if (slot.sent.empty()) slot.last_heard = Clock::now();
        // All in sent first: a worker going away has its exit event requeue
        // what it had, sent or not.
        slot.sent.insert(slot.sent.end(), group.begin(), group.end());
        bool sent = true;
        for (int64_t g : group) {
          if (!slot.process->Send(WorkMessage(g, pending_.at(g))).ok()) {
            sent = false;
            break;
          }
        }
        if (!sent) break;
      }
    }
  }

  // A failure the daemon saw itself (a dead or killed worker).
  void Record(int64_t seq, const Slot& slot, SampleStatus status,
              const std::string& error) {
    Measurement m;
    m.status = status;
    m.error = error;
    Record(seq, slot, std::move(m), false);
  }

  // `digest`: the worker's KernelDigest of what it measured, kept when it
  // generated the kernel with this build's version of the family.
  void Record(int64_t seq, const Slot& slot, Measurement m, bool verified,
              const std::string& digest = std::string(), int version = -1) {
    auto it = pending_.find(seq);
    if (it == pending_.end() || done_.count(seq)) return;
    Done d;
    SampleRecord& s = d.sample;
    s.device = slot.fingerprint;
    s.campaign_id = record_.id;
    s.seq = seq;
    s.context = it->second.ctx;
    s.kernel = KernelConfig::Current(*it->second.family, it->second.params);
    s.measurement = std::move(m);
    s.measurement.error = Truncate(s.measurement.error);
    s.measured_unix = NowUnix();
    if (version == s.kernel.generator_version &&
        CheckKernelDigest(digest, "kernel_digest").ok())
      s.kernel_digest = digest;
    d.verified = verified;
    done_[seq] = std::move(d);
  }

  void Handle(WorkerEvent e) {
    Slot& slot = *slots_[e.worker];
    if (e.generation != slot.generation) return;  // from a killed process
    if (e.kind == WorkerEvent::Kind::kExit) {
      HandleExit(e.worker, e);
      return;
    }
    slot.last_heard = Clock::now();
    const tuner::WorkerMessage& m = e.message;
    if (m.has_hello()) {
      if (!m.hello().error().empty()) {
        slot.hello_error = m.hello().error();
        return;  // the exit follows
      }
      slot.ready = true;
      slot.failed_starts = 0;
      slot.fingerprint = FromHello(m.hello());
      // Samples in flight = rate x time from send to result (Little's
      // law), and that time is a compile (~0.2-0.3 s on an H100 host) plus
      // the GPU's queue. 2 per compile thread (32 on a 16-core host) held
      // an H100 campaign at 32 / 0.22 s = 145 samples/s with its compile
      // threads half idle; 8 per thread leaves room for ~500/s.
      slot.depth = std::clamp(8 * m.hello().compile_threads() + 8, 16, 256);
    } else if (m.has_started()) {
      slot.running = m.started().seq();
      slot.started_at = Clock::now();
    } else if (m.has_result()) {
      const tuner::WorkResult& r = m.result();
      Record(r.seq(), slot, FromWorkResult(r), r.verified(), r.kernel_digest(),
             r.version());
      slot.sent.erase(std::remove(slot.sent.begin(), slot.sent.end(), r.seq()),
                      slot.sent.end());
      if (slot.running == r.seq()) slot.running.reset();
    }
  }

  void HandleExit(int i, const WorkerEvent& e) {
    Slot& slot = *slots_[i];
    if (slot.running) {
      const int64_t seq = *slot.running;
      if (slot.watchdog_killed) {
        Record(seq, slot, SampleStatus::kTimeout,
               "no result after " + std::to_string(options_.kernel_timeout_s) +
                   " s; the watchdog killed the worker");
      } else {
        Record(seq, slot, SampleStatus::kLaunchError,
               "the GPU worker " + e.exit + " while running this sample");
      }
      slot.sent.erase(std::remove(slot.sent.begin(), slot.sent.end(), seq),
                      slot.sent.end());
    }
    // What it had not started goes to whichever worker asks next, first.
    todo_.insert(todo_.begin(), slot.sent.begin(), slot.sent.end());
    slot.sent.clear();
    const bool clean = e.exit_code == 0;
    if (!slot.ready) {
      ++slot.failed_starts;
      if (slot.hello_error.empty()) slot.hello_error = "the worker " + e.exit;
      if (slot.failed_starts >= options_.max_failed_starts ||
          e.exit_code == kExitNoDevice) {
        slot.given_up = true;
        BT_LOG(kError) << "campaign " << record_.id << ": giving up GPU "
                       << slot.gpu << ": " << slot.hello_error;
        slot.process.reset();
        return;
      }
    }
    if (!clean) {
      BT_LOG(kWarning) << "campaign " << record_.id << ": GPU " << slot.gpu
                       << " worker " << e.exit << "; restarting it";
      ++restarts_;
    }
    Spawn(i);
  }

  // Kills a worker whose sample runs past the timeout (that sample is a
  // timeout), and one that has work and has said nothing for as long while
  // running none (nothing is charged; its work goes to the restart).
  void Watchdog() {
    for (auto& slot : slots_) {
      if (!slot->process || slot->watchdog_killed) continue;
      if (slot->running &&
          Since(slot->started_at) > options_.kernel_timeout_s) {
        BT_LOG(kWarning) << "campaign " << record_.id << ": sample "
                         << *slot->running << " ran past "
                         << options_.kernel_timeout_s
                         << " s on GPU " << slot->gpu << "; killing its worker";
      } else if (!slot->running && !slot->sent.empty() &&
                 Since(slot->last_heard) > options_.kernel_timeout_s) {
        BT_LOG(kWarning) << "campaign " << record_.id << ": the GPU "
                         << slot->gpu << " worker has " << slot->sent.size()
                         << " samples and said nothing for "
                         << options_.kernel_timeout_s << " s; killing it";
      } else {
        continue;
      }
      slot->watchdog_killed = true;
      slot->process->Kill();
    }
  }

  // Commits the finished samples of the items this daemon holds, with the
  // campaign's counters; an item whose samples are all stored is done.
  // Items another daemon took over meanwhile are dropped, their samples
  // with them (that daemon measures them).
  Status CommitDone() {
    const TimeInto timed(&commit_s_);
    for (int attempt = 0;; ++attempt) {
      WorkCommit work;
      for (const auto& [first, held] : held_) {
        size_t left = held.open.size();
        for (auto it = done_.lower_bound(first);
             it != done_.end() && it->first < first + held.count; ++it) {
          work.samples.push_back(it->second.sample);
          --left;
        }
        work.items.push_back(first);
        if (left == 0) work.finished.push_back(first);
      }
      if (work.items.empty()) return OkStatus();
      std::map<int64_t, bool> verified;
      for (const SampleRecord& s : work.samples)
        verified[s.seq] = done_.at(s.seq).verified;
      const int64_t restarts = restarts_;
      auto update = [&](CampaignRecord& record,
                        const WorkTotals& totals) -> Status {
        BT_ASSIGN_OR_RETURN(tuner::CampaignCursor cursor, ReadCursor(record));
        for (const SampleRecord& s : work.samples) {
          if (s.measurement.status == SampleStatus::kOk) {
            ++record.samples_ok;
            const GemmShape g = ImplicitGemm(s.context);
            const double tflops =
                2.0 * g.m * g.n * g.k / s.measurement.median_s * 1e-12;
            cursor.set_best_tflops(std::max(cursor.best_tflops(), tflops));
          } else {
            ++record.samples_failed;
            (*cursor.mutable_failures())[std::string(
                ToString(s.measurement.status))]++;
          }
          cursor.set_verified(cursor.verified() + verified[s.seq]);
          (*cursor.mutable_samples_by_family())[s.kernel.family]++;
          (*cursor.mutable_samples_by_daemon())[options_.daemon_name]++;
          if (!record.device) record.device = s.device;
        }
        cursor.set_worker_restarts(cursor.worker_restarts() + restarts);
        Tick(cursor);
        if (!IsTerminal(record.state) && cursor.plan_closed() &&
            totals.open == 0)
          EndDone(record, cursor);
        record.rng_state = cursor.SerializeAsString();
        return OkStatus();
      };
      auto committed = store_->CommitWork(record_.id, options_.holder, work,
                                          update);
      if (committed.status().code() == StatusCode::kAborted && attempt < 2) {
        BT_RETURN_IF_ERROR(Renew());  // drops what is no longer ours
        continue;
      }
      BT_RETURN_IF_ERROR(committed.status());
      restarts_ -= restarts;
      stored_here_ += static_cast<int64_t>(work.samples.size());
      for (const SampleRecord& s : work.samples) {
        done_.erase(s.seq);
        pending_.erase(s.seq);
        for (auto& [first, held] : held_) held.open.erase(s.seq);
      }
      for (int64_t first : work.finished) held_.erase(first);
      rate_points_.emplace_back(
          Clock::now(), committed->samples_ok + committed->samples_failed);
      while (rate_points_.size() > 2 &&
             Since(rate_points_.front().first) > 10.0) {
        rate_points_.pop_front();
      }
      Adopt(*committed);
      return OkStatus();
    }
  }

  // Extends the leases of the items held; drops those lost.
  Status Renew() {
    std::vector<int64_t> items;
    for (const auto& [first, held] : held_) items.push_back(first);
    if (items.empty()) return OkStatus();
    BT_ASSIGN_OR_RETURN(std::vector<int64_t> lost,
                        store_->RenewWork(record_.id, options_.holder, items,
                                          options_.lease_s));
    for (int64_t first : lost) {
      const int64_t count = held_[first].count;
      BT_LOG(kWarning) << "campaign " << record_.id << ": lost the item from "
                       << first << " (its lease ran out); dropping it";
      for (int64_t seq = first; seq < first + count; ++seq) {
        done_.erase(seq);
        pending_.erase(seq);
      }
      held_.erase(first);
    }
    return OkStatus();
  }

  // Gives back the items held, so that other daemons need not wait for
  // their leases to run out.
  void ReleaseHeld() {
    std::vector<int64_t> items;
    for (const auto& [first, held] : held_) items.push_back(first);
    if (items.empty()) return;
    if (Status s = store_->ReleaseWork(record_.id, options_.holder, items);
        !s.ok()) {
      BT_LOG(kWarning) << "campaign " << record_.id
                       << ": cannot give back its items (their leases run "
                          "out instead): "
                       << s.message();
    }
    held_.clear();
    todo_.clear();
  }

  void PublishProgress() {
    CampaignProgressInfo p;
    p.record = record_;
    FillFromCursor(cursor_, &p);
    if (rate_points_.size() >= 2) {
      const double dt = std::chrono::duration<double>(
                            rate_points_.back().first - rate_points_.front().first)
                            .count();
      if (dt > 0) {
        p.samples_per_second =
            (rate_points_.back().second - rate_points_.front().second) / dt;
      }
    }
    const CampaignSpec& spec = record_.spec;
    double eta = -1;
    if (p.target > 0 && p.samples_per_second > 0)
      eta = std::max<int64_t>(0, p.target - p.done) / p.samples_per_second;
    if (spec.minutes > 0) {
      const double left = std::max(0.0, 60.0 * spec.minutes - p.elapsed_s);
      eta = eta < 0 ? left : std::min(eta, left);
    }
    p.eta_s = eta;
    for (const auto& slot : slots_) p.workers += slot->ready && !slot->given_up;
    std::lock_guard lock(progress_mu_);
    progress_ = std::move(p);
  }

  // Ends the campaign for every daemon (cancelled, or failed here).
  void Finish(CampaignState state, const std::string& message) {
    auto plan = [&](CampaignRecord& record, const WorkTotals&)
        -> StatusOr<std::vector<WorkItem>> {
      if (IsTerminal(record.state)) return std::vector<WorkItem>();
      BT_ASSIGN_OR_RETURN(tuner::CampaignCursor cursor, ReadCursor(record));
      Tick(cursor);
      record.state = state;
      record.message = message;
      record.rng_state = cursor.SerializeAsString();
      return std::vector<WorkItem>();
    };
    auto record = store_->PlanWork(record_.id, plan);
    if (!record.ok()) {
      BT_LOG(kError) << "campaign " << record_.id << ": cannot store its end: "
                     << record.status().message();
      record_.state = state;
      record_.message = message;
      PublishProgress();
      return;
    }
    Adopt(*record);
    BT_LOG(kInfo) << "campaign " << record_.id << " " << ToString(record_.state)
                  << " after " << (record_.samples_ok + record_.samples_failed)
                  << " samples"
                  << (record_.message.empty() ? "" : ": " + record_.message);
  }

  static double UnixSeconds() {
    return std::chrono::duration<double>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // A daemon commits at least this often while it holds items, and a gap
  // longer than kTickGapS between any daemon's ticks is not running time.
  static constexpr double kHeartbeatS = 5;
  static constexpr double kTickGapS = 30;

  TuningStore* const store_;
  const CampaignOptions& options_;
  CampaignRecord record_;
  tuner::CampaignCursor cursor_;  // record_'s, parsed
  DeviceProfile profile_;
  std::unique_ptr<FamilyRotation> rotation_;  // sampling campaigns
  std::vector<FamilyRotation::State> initial_;  // its samplers at the start
  std::map<int64_t, Held> held_;              // by first_seq
  std::deque<int64_t> todo_;                  // seqs to send to a worker
  std::map<int64_t, Candidate> pending_;      // of the items held
  std::map<int64_t, Done> done_;              // measured, not committed
  int64_t restarts_ = 0;                      // not committed yet
  bool skipped_ = false;
  int64_t stored_here_ = 0;
  // The store's share of this daemon's time on the campaign (its log's
  // last line): planning items, claiming them, committing samples.
  double plan_s_ = 0, claim_s_ = 0, commit_s_ = 0;
  Clock::time_point next_claim_ = Clock::now();
  std::deque<std::pair<Clock::time_point, int64_t>> rate_points_;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex events_mu_;
  std::condition_variable events_cv_;
  std::deque<WorkerEvent> events_;
  bool cancel_ = false, stop_ = false, wake_ = false;

  std::mutex progress_mu_;
  CampaignProgressInfo progress_;

  // A guided campaign's ranking thread, while its plan is open; last, so it
  // stops before the members its Wake uses go.
  Clock::time_point guided_started_;
  bool guided_logged_ = false;
  std::unique_ptr<GuidedPrefetch> guided_;
};

// ------------------------------------------------------------ Manager --

CampaignManager::CampaignManager(TuningStore* store, CampaignOptions options)
    : store_(store), options_(std::move(options)) {
  scheduler_ = std::thread(&CampaignManager::SchedulerLoop, this);
}

CampaignManager::~CampaignManager() { Shutdown(); }

void CampaignManager::Shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (running_) running_->RequestStop();
    cv_.notify_all();
  }
  if (scheduler_.joinable()) scheduler_.join();
}

Status CampaignManager::ResumeStored() {
  BT_ASSIGN_OR_RETURN(auto campaigns, store_->ListCampaigns());
  std::lock_guard lock(mu_);
  for (const CampaignRecord& c : campaigns) {
    if (IsTerminal(c.state) || skipped_.count(c.id)) continue;
    if (std::find(queue_.begin(), queue_.end(), c.id) != queue_.end()) continue;
    if (running_ && running_->id() == c.id) continue;
    if (options_.gpus.empty()) {
      if (warned_.insert(c.id).second) {
        BT_LOG(kWarning) << "campaign " << c.id << " is " << ToString(c.state)
                         << " but this daemon has no GPU; it waits for one";
      }
      continue;
    }
    BT_LOG(kInfo) << "campaign " << c.id << " is " << ToString(c.state)
                  << "; resuming it";
    queue_.push_back(c.id);
  }
  cv_.notify_all();
  return OkStatus();
}

StatusOr<CampaignRecord> CampaignManager::Start(const CampaignSpec& given) {
  BT_RETURN_IF_ERROR(Validate(given));
  CampaignSpec spec = given;
  if (options_.gpus.empty()) {
    return FailedPrecondition(
        "no GPU: blocktuned owns no GPU, so it cannot run a campaign (see "
        "'blocktune health' for why); nothing was stored");
  }
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    if (std::find(options_.gpus.begin(), options_.gpus.end(), spec.gpus[i]) ==
        options_.gpus.end()) {
      std::string owned;
      for (int g : options_.gpus)
        owned += (owned.empty() ? "" : ", ") + std::to_string(g);
      return FailedPrecondition("spec.gpus[" + std::to_string(i) + "] is GPU " +
                                std::to_string(spec.gpus[i]) +
                                ", which this daemon does not own; it owns " +
                                owned);
    }
  }
  // The families the GPU must run. Prepare checks again when the campaign
  // runs; here the user hears at once.
  BT_ASSIGN_OR_RETURN(DeviceProfile profile, CampaignProfile(options_, spec));
  BT_ASSIGN_OR_RETURN(auto families, CampaignFamilies(spec, profile));
  if (!spec.families.empty()) {
    for (size_t i = 0; i < families.size(); ++i)
      spec.families[i] = std::string(families[i]->name());
  }
  BT_ASSIGN_OR_RETURN(CampaignRecord record, store_->CreateCampaign(spec));
  std::lock_guard lock(mu_);
  queue_.push_back(record.id);
  cv_.notify_all();
  return record;
}

StatusOr<CampaignRecord> CampaignManager::Cancel(int64_t id) {
  BT_ASSIGN_OR_RETURN(CampaignRecord record, store_->GetCampaign(id));
  if (IsTerminal(record.state)) {
    return FailedPrecondition("campaign " + std::to_string(id) +
                              " is already " +
                              std::string(ToString(record.state)));
  }
  std::unique_lock lock(mu_);
  if (running_ && running_->id() == id) {
    auto run = running_;
    run->RequestCancel();
    cv_.wait_for(lock, std::chrono::seconds(60),
                 [&] { return running_ != run; });
    lock.unlock();
    return store_->GetCampaign(id);
  }
  queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
  lock.unlock();
  // Under the campaign's lock: other daemons may be committing to it; they
  // see the end at their next commit and stop.
  return store_->PlanWork(
      id, [](CampaignRecord& r,
             const WorkTotals&) -> StatusOr<std::vector<WorkItem>> {
        if (!IsTerminal(r.state)) {
          r.state = CampaignState::kCancelled;
          r.message = "cancelled on request";
        }
        return std::vector<WorkItem>();
      });
}

StatusOr<CampaignProgressInfo> CampaignManager::Progress(int64_t id) {
  {
    std::lock_guard lock(mu_);
    if (running_ && running_->id() == id) {
      CampaignProgressInfo p = running_->Snapshot();
      if (p.record.id == id) return p;
    }
  }
  CampaignProgressInfo p;
  BT_ASSIGN_OR_RETURN(p.record, store_->GetCampaign(id));
  BT_ASSIGN_OR_RETURN(auto cursor, ReadCursor(p.record));
  FillFromCursor(cursor, &p);
  // Running on other daemons only: the rate from what this daemon saw of
  // the stored counts over the last ~10 seconds.
  if (p.record.state == CampaignState::kRunning) {
    std::lock_guard lock(mu_);
    auto& points = seen_[id];
    points.emplace_back(Clock::now(), p.done);
    while (points.size() > 2 && Since(points.front().first) > 10.0)
      points.pop_front();
    const double dt = std::chrono::duration<double>(points.back().first -
                                                    points.front().first)
                          .count();
    if (dt > 0.5) {
      p.samples_per_second = (points.back().second - points.front().second) / dt;
      if (p.target > 0 && p.samples_per_second > 0)
        p.eta_s = std::max<int64_t>(0, p.target - p.done) / p.samples_per_second;
    }
  }
  return p;
}

StatusOr<BenchListResult> CampaignManager::Measure(
    const std::vector<Candidate>& list) {
  if (options_.gpus.empty()) {
    return FailedPrecondition("no GPU: blocktuned owns no GPU");
  }
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopping_ || !measuring_; });
    if (stopping_) return Unavailable("blocktuned is shutting down");
    if (running_) {
      return FailedPrecondition("the GPU is busy with campaign " +
                                std::to_string(running_->id()));
    }
    measuring_ = true;
  }
  BenchListOptions o;
  o.worker_path = options_.worker_path;
  o.worker_args = options_.worker_args;
  o.gpu = options_.gpus.front();
  o.kernel_timeout_s = options_.kernel_timeout_s;
  // Shutdown() does not wait for a verification, so the verification
  // watches for it: a query's top 10 can take minutes on a slow kernel.
  o.stop = [this] {
    std::lock_guard lock(mu_);
    return stopping_;
  };
  auto result = BenchmarkList(o, list);
  {
    std::lock_guard lock(mu_);
    measuring_ = false;
    cv_.notify_all();
  }
  return result;
}

void CampaignManager::SchedulerLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    const bool woken = cv_.wait_for(
        lock, std::chrono::milliseconds(options_.poll_ms),
        [&] { return stopping_ || (!queue_.empty() && !measuring_); });
    if (stopping_) return;
    if (!woken) {
      // Idle: campaigns started on other daemons of the store.
      if (measuring_ || options_.gpus.empty()) continue;
      lock.unlock();
      Status s = ResumeStored();
      lock.lock();
      if (!s.ok()) {
        BT_LOG(kWarning) << "cannot list the store's campaigns: "
                         << s.message();
      }
      continue;
    }
    const int64_t id = queue_.front();
    queue_.pop_front();
    lock.unlock();
    auto record = store_->GetCampaign(id);
    lock.lock();
    if (!record.ok() || IsTerminal(record->state) || stopping_) continue;
    auto run = std::make_shared<Run>(store_, options_, *record);
    running_ = run;
    lock.unlock();
    run->Execute();
    lock.lock();
    if (run->skipped()) skipped_.insert(id);
    running_.reset();
    cv_.notify_all();
  }
}

}  // namespace blocktune
