#include "server/campaigns.h"

#include <algorithm>
#include <chrono>

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
  if (spec.retune_stale && cursor.retune_total() > 0) {
    p->target = spec.max_samples > 0
                    ? std::min(spec.max_samples, cursor.retune_total())
                    : cursor.retune_total();
  }
  p->samples_by_family.clear();
  for (const auto& [family, n] : cursor.samples_by_family())
    p->samples_by_family[family] = n;
  // A cursor from before families: one ffma family, fp32.
  if (p->samples_by_family.empty() && p->done > 0 && !spec.retune_stale &&
      cursor.families_size() == 0) {
    p->samples_by_family[std::string(FfmaFamily(spec.op).name())] = p->done;
  }
}

}  // namespace

// ---------------------------------------------------------------- Run --

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

  void Execute() {
    Status s = Prepare();
    if (s.ok()) s = Loop();
    if (!s.ok()) {
      BT_LOG(kError) << "campaign " << record_.id << " failed: " << s.message();
      // Keep every sample that is complete, if the store still takes them.
      if (Status kept = CommitPrefix(); !kept.ok()) {
        BT_LOG(kError) << "campaign " << record_.id
                       << ": cannot store its last samples: " << kept.message();
      }
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
  struct Pending {
    Candidate candidate;
    // Sampling: the family it came from (an index into the rotation and
    // the cursor's families) and that family's sampler after it.
    int family = -1;
    FamilyRotation::State after;
  };
  struct Done {
    SampleRecord sample;
    bool verified = false;
  };

  Status Prepare() {
    BT_ASSIGN_OR_RETURN(cursor_, ReadCursor(record_));
    BT_ASSIGN_OR_RETURN(profile_, CampaignProfile(options_, record_.spec));
    if (!record_.spec.retune_stale) BT_RETURN_IF_ERROR(PrepareSampling());
    next_seq_ = committed_ = cursor_.next_seq();
    record_.state = CampaignState::kRunning;
    record_.message.clear();
    // The families are fixed from here on, even before a sample is in.
    record_.rng_state = cursor_.SerializeAsString();
    WriteBatch batch;
    batch.campaign_updates.push_back(record_);
    BT_RETURN_IF_ERROR(store_->Commit(batch).status());
    for (int gpu : record_.spec.gpus.empty() ? options_.gpus
                                             : record_.spec.gpus) {
      auto slot = std::make_unique<Slot>();
      slot->gpu = gpu;
      slots_.push_back(std::move(slot));
    }
    for (size_t i = 0; i < slots_.size(); ++i) Spawn(static_cast<int>(i));
    started_ = Clock::now();
    PublishProgress();
    BT_LOG(kInfo) << "campaign " << record_.id << " running from sample "
                  << committed_ << " on " << slots_.size() << " GPU(s)";
    return OkStatus();
  }

  // The families and their streams: those of the cursor when the campaign
  // ran before (so a resume draws from the same ones, whatever this build
  // would pick today), else CampaignFamilies.
  Status PrepareSampling() {
    std::vector<const KernelFamily*> families;
    if (cursor_.families_size() > 0) {
      for (const tuner::FamilyCursor& f : cursor_.families()) {
        auto family = FindFamily(f.family());
        if (!family.ok()) {
          return FailedPrecondition("campaign " + std::to_string(record_.id) +
                                    " samples family " + f.family() +
                                    ", which this blocktuned does not have: " +
                                    family.status().message());
        }
        families.push_back(*family);
      }
    } else if (cursor_.rng_size() == 4) {
      // A cursor from before families: the campaign sampled the ffma family
      // of its op (only fp32 ran then), whose state is at the top.
      families = {&FfmaFamily(record_.spec.op)};
    } else {
      BT_ASSIGN_OR_RETURN(families, CampaignFamilies(record_.spec, profile_));
    }
    if (cursor_.families_size() == 0) {
      const bool legacy = cursor_.rng_size() == 4;
      for (const KernelFamily* f : families) {
        tuner::FamilyCursor* fc = cursor_.add_families();
        fc->set_family(std::string(f->name()));
        if (legacy) {
          *fc->mutable_rng() = cursor_.rng();
          fc->set_draws(cursor_.draws());
          fc->set_accepted(cursor_.accepted());
        }
      }
      if (legacy && cursor_.samples_by_family().empty() &&
          cursor_.next_seq() > 0) {
        auto& by_family = *cursor_.mutable_samples_by_family();
        by_family[std::string(families[0]->name())] = cursor_.next_seq();
      }
    }
    BT_ASSIGN_OR_RETURN(
        rotation_,
        FamilyRotation::Make(families, record_.spec.dtype, profile_,
                             record_.spec.sampler, record_.spec.seed));
    for (int i = 0; i < cursor_.families_size(); ++i) {
      const tuner::FamilyCursor& fc = cursor_.families(i);
      if (fc.rng_size() != 4) continue;  // no candidate of it committed yet
      FamilyRotation::State state;
      for (int w = 0; w < 4; ++w) state.rng[w] = fc.rng(w);
      state.draws = fc.draws();
      state.accepted = fc.accepted();
      rotation_->Restore(i, state);
    }
    std::string names;
    for (const KernelFamily* f : families)
      names += (names.empty() ? "" : ", ") + std::string(f->name());
    BT_LOG(kInfo) << "campaign " << record_.id << " samples "
                  << ToString(record_.spec.op) << " "
                  << ToString(record_.spec.dtype) << " from " << names;
    return OkStatus();
  }

  // A retune's list, once the campaign's device is known (a worker said
  // hello, or the campaign ran before).
  Status PlanRetuneNow() {
    const std::string device = record_.device ? record_.device->name : "";
    BT_ASSIGN_OR_RETURN(RetunePlan plan,
                        PlanRetune(*store_, record_.spec, device, profile_));
    cursor_.set_retune_total(committed_ +
                             static_cast<int64_t>(plan.candidates.size()));
    cursor_.set_retune_summary(plan.Summary(record_.spec, device));
    BT_LOG(kInfo) << "campaign " << record_.id << ": "
                  << cursor_.retune_summary();
    retune_ = std::move(plan.candidates);
    retune_next_ = 0;
    PublishProgress();
    return OkStatus();
  }

  StatusOr<Pending> NextCandidate(int64_t seq) {
    Pending p;
    if (retune_) {
      p.candidate = (*retune_)[retune_next_++];
      return p;
    }
    BT_ASSIGN_OR_RETURN(p.candidate, rotation_->Next(seq));
    p.family = static_cast<int>(rotation_->FamilyOf(seq));
    p.after = rotation_->state(p.family);
    return p;
  }

  // How a campaign that ran to its end says what it did.
  std::string DoneMessage() const {
    if (!record_.spec.retune_stale) return "";
    std::string m = cursor_.retune_summary();
    if (cursor_.retune_total() == 0) return m;
    m += "; re-measured " + std::to_string(committed_);
    const int64_t left = cursor_.retune_total() - committed_;
    if (left > 0) {
      m += ", " + std::to_string(left) +
           " left when its budget ran out (a new --retune-stale campaign "
           "carries on with them)";
    }
    return m;
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

  bool BudgetLeft() const {
    const CampaignSpec& spec = record_.spec;
    if (retune_ && retune_next_ >= retune_->size()) return false;
    if (spec.max_samples > 0 && next_seq_ >= spec.max_samples) return false;
    if (spec.minutes > 0 && Elapsed() >= 60.0 * spec.minutes) return false;
    return true;
  }
  double Elapsed() const { return cursor_.elapsed_s() + Since(started_); }

  Status Loop() {
    auto last_commit = Clock::now();
    while (true) {
      std::deque<WorkerEvent> events;
      bool cancel, stop;
      {
        std::unique_lock lock(events_mu_);
        events_cv_.wait_for(lock, std::chrono::milliseconds(50),
                            [&] { return !events_.empty() || cancel_ || stop_; });
        events.swap(events_);
        cancel = cancel_;
        stop = stop_;
      }
      for (WorkerEvent& e : events) Handle(std::move(e));
      if (cancel || stop) {
        BT_RETURN_IF_ERROR(CommitPrefix());
        if (cancel) Finish(CampaignState::kCancelled, "cancelled on request");
        else BT_LOG(kInfo) << "campaign " << record_.id
                           << " paused for shutdown at sample " << committed_;
        return OkStatus();
      }
      Watchdog();
      const bool budget = BudgetLeft();
      if (budget) BT_RETURN_IF_ERROR(Feed());
      if (std::chrono::duration<double, std::milli>(Clock::now() - last_commit)
              .count() >= options_.commit_every_ms) {
        BT_RETURN_IF_ERROR(CommitPrefix());
        last_commit = Clock::now();
      }
      bool outstanding = !requeue_.empty();
      int alive = 0;
      for (const auto& slot : slots_) {
        outstanding |= !slot->sent.empty();
        alive += !slot->given_up;
      }
      if (alive == 0) {
        std::string why;
        for (const auto& slot : slots_) {
          why += (why.empty() ? "" : "; ") + std::string("GPU ") +
                 std::to_string(slot->gpu) + ": " + slot->hello_error;
        }
        return FailedPrecondition("no GPU worker could run: " + why);
      }
      if (!budget && !outstanding) {
        BT_RETURN_IF_ERROR(CommitPrefix());
        if (committed_ < next_seq_) {
          return Internal("samples " + std::to_string(committed_) + ".." +
                          std::to_string(next_seq_ - 1) + " never came back");
        }
        Finish(CampaignState::kDone, DoneMessage());
        return OkStatus();
      }
    }
  }

  Status Feed() {
    if (record_.spec.retune_stale && !retune_) {
      bool ready = false;
      for (const auto& slot : slots_) ready |= slot->ready && !slot->given_up;
      if (!ready) return OkStatus();  // the device is not known yet
      BT_RETURN_IF_ERROR(PlanRetuneNow());
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = *slots_[i];
      if (!slot.ready || slot.given_up || !slot.process) continue;
      while (static_cast<int>(slot.sent.size()) < slot.depth) {
        int64_t seq;
        if (!requeue_.empty()) {
          seq = requeue_.front();
          requeue_.pop_front();
        } else if (BudgetLeft()) {
          seq = next_seq_;
          BT_ASSIGN_OR_RETURN(pending_[seq], NextCandidate(seq));
          ++next_seq_;
        } else {
          break;
        }
        const Pending& p = pending_[seq];
        slot.sent.push_back(seq);
        if (!slot.process->Send(WorkMessage(seq, p.candidate)).ok()) {
          // The worker is going away; its exit event requeues what it had.
          break;
        }
      }
    }
    return OkStatus();
  }

  // A failure the daemon saw itself (a dead or killed worker).
  void Record(int64_t seq, const Slot& slot, SampleStatus status,
              const std::string& error) {
    Measurement m;
    m.status = status;
    m.error = error;
    Record(seq, slot, std::move(m), false);
  }

  void Record(int64_t seq, const Slot& slot, Measurement m, bool verified) {
    auto it = pending_.find(seq);
    if (it == pending_.end() || done_.count(seq)) return;
    Done d;
    SampleRecord& s = d.sample;
    s.device = slot.fingerprint;
    s.campaign_id = record_.id;
    s.seq = seq;
    s.context = it->second.candidate.ctx;
    s.kernel = KernelConfig::Current(*it->second.candidate.family,
                                     it->second.candidate.params);
    s.measurement = std::move(m);
    s.measurement.error = Truncate(s.measurement.error);
    s.measured_unix = NowUnix();
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
      slot.depth = std::clamp(2 * m.hello().compile_threads() + 2, 4, 64);
      if (!record_.device) record_.device = slot.fingerprint;
    } else if (m.has_started()) {
      slot.running = m.started().seq();
      slot.started_at = Clock::now();
    } else if (m.has_result()) {
      const tuner::WorkResult& r = m.result();
      Record(r.seq(), slot, FromWorkResult(r), r.verified());
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
    // What it had not started goes to whichever worker asks next.
    for (int64_t seq : slot.sent) requeue_.push_back(seq);
    std::sort(requeue_.begin(), requeue_.end());
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
      cursor_.set_worker_restarts(cursor_.worker_restarts() + 1);
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

  // Commits the contiguous prefix of finished samples with the cursor.
  Status CommitPrefix() {
    WriteBatch batch;
    int64_t n = committed_;
    std::vector<int64_t> verified_seqs;
    tuner::CampaignCursor cursor = cursor_;
    CampaignRecord record = record_;
    while (true) {
      auto it = done_.find(n);
      if (it == done_.end()) break;
      const SampleRecord& s = it->second.sample;
      if (s.measurement.status == SampleStatus::kOk) {
        ++record.samples_ok;
        const GemmShape g = ImplicitGemm(s.context);
        const double tflops =
            2.0 * g.m * g.n * g.k / s.measurement.median_s * 1e-12;
        cursor.set_best_tflops(std::max(cursor.best_tflops(), tflops));
      } else {
        ++record.samples_failed;
        (*cursor.mutable_failures())[std::string(ToString(s.measurement.status))]++;
      }
      cursor.set_verified(cursor.verified() + it->second.verified);
      (*cursor.mutable_samples_by_family())[s.kernel.family]++;
      // The family's sampler after this candidate.
      const Pending& p = pending_.at(n);
      if (p.family >= 0) {
        tuner::FamilyCursor* fc = cursor.mutable_families(p.family);
        fc->clear_rng();
        for (uint64_t v : p.after.rng) fc->add_rng(v);
        fc->set_draws(p.after.draws);
        fc->set_accepted(p.after.accepted);
      }
      batch.samples.push_back(s);
      ++n;
    }
    if (n > committed_ && cursor.families_size() > 0) {
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
    }
    cursor.set_next_seq(n);
    cursor.set_elapsed_s(Elapsed());
    record.rng_state = cursor.SerializeAsString();
    batch.campaign_updates.push_back(record);
    BT_RETURN_IF_ERROR(store_->Commit(batch).status());
    for (int64_t s = committed_; s < n; ++s) {
      done_.erase(s);
      pending_.erase(s);
    }
    committed_ = n;
    record_ = record;
    // The stored elapsed time is the base from here on.
    cursor_ = cursor;
    started_ = Clock::now();
    rate_points_.emplace_back(Clock::now(), committed_);
    while (rate_points_.size() > 2 &&
           Since(rate_points_.front().first) > 10.0) {
      rate_points_.pop_front();
    }
    PublishProgress();
    return OkStatus();
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

  void Finish(CampaignState state, const std::string& message) {
    record_.state = state;
    record_.message = message;
    tuner::CampaignCursor cursor = cursor_;
    cursor.set_elapsed_s(Elapsed());
    record_.rng_state = cursor.SerializeAsString();
    WriteBatch batch;
    batch.campaign_updates.push_back(record_);
    if (Status s = store_->Commit(batch).status(); !s.ok()) {
      BT_LOG(kError) << "campaign " << record_.id << ": cannot store its end: "
                     << s.message();
    }
    cursor_ = cursor;
    started_ = Clock::now();
    PublishProgress();
    BT_LOG(kInfo) << "campaign " << record_.id << " " << ToString(state)
                  << " after " << committed_ << " samples"
                  << (message.empty() ? "" : ": " + message);
  }

  TuningStore* const store_;
  const CampaignOptions& options_;
  CampaignRecord record_;
  tuner::CampaignCursor cursor_;
  DeviceProfile profile_;
  std::unique_ptr<FamilyRotation> rotation_;  // sampling campaigns
  // retune_stale campaigns, once planned: what is left to measure.
  std::optional<std::vector<Candidate>> retune_;
  size_t retune_next_ = 0;
  int64_t next_seq_ = 0, committed_ = 0;
  Clock::time_point started_ = Clock::now();
  std::map<int64_t, Pending> pending_;
  std::map<int64_t, Done> done_;
  std::deque<int64_t> requeue_;
  std::deque<std::pair<Clock::time_point, int64_t>> rate_points_;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex events_mu_;
  std::condition_variable events_cv_;
  std::deque<WorkerEvent> events_;
  bool cancel_ = false, stop_ = false;

  std::mutex progress_mu_;
  CampaignProgressInfo progress_;
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
    if (IsTerminal(c.state)) continue;
    if (options_.gpus.empty()) {
      BT_LOG(kWarning) << "campaign " << c.id << " is " << ToString(c.state)
                       << " but this daemon has no GPU; it waits for one";
      continue;
    }
    BT_LOG(kInfo) << "campaign " << c.id << " was " << ToString(c.state)
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
  record.state = CampaignState::kCancelled;
  record.message = "cancelled on request";
  WriteBatch batch;
  batch.campaign_updates.push_back(record);
  BT_RETURN_IF_ERROR(store_->Commit(batch).status());
  return store_->GetCampaign(id);
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
    cv_.wait(lock,
             [&] { return stopping_ || (!queue_.empty() && !measuring_); });
    if (stopping_) return;
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
    running_.reset();
    cv_.notify_all();
  }
}

}  // namespace blocktune
