// The campaign scheduler: runs tuning campaigns (DESIGN.md, "Processes")
// on the daemon's GPUs, one campaign at a time in the order they were
// started, each on one worker process per GPU.
//
// Several daemons, one campaign. Candidates are numbered (seq) as the
// stream of tuner/candidate_stream.h produces them, and planned in work
// items of item_size candidates (TuningStore::PlanWork): the planner draws
// them under the campaign's lock and stores them with the samplers'
// state after them (the cursor), so any daemon can plan the next item and
// any daemon can measure an item. Every daemon on the store with an idle
// GPU claims items (ClaimWork: a lease of lease_s seconds, renewed while
// it measures) and commits their samples, the campaign's counters and
// per-daemon shares in one transaction (CommitWork). After any stop, kill
// -9 included, the dead daemon's leases run out and its items are claimed
// again; what it committed of them is not measured again (the claim says
// which seqs are stored; the store's unique (campaign, seq) index makes
// sure) and nothing is skipped. The campaign is done when its budget is
// planned and every item is done; the daemon that commits the last one
// ends it. With one daemon (SQLite: always) it claims every item.
//
// Families. A campaign samples every kernel family that implements its
// (op, dtype) and runs on its GPU, or the families its spec names, each
// from a candidate stream of its own: candidate seq comes from family
// seq % F (server/campaign_plan.h). The cursor keeps every family's Rng,
// so the guarantee above holds family by family. A retune_stale campaign
// instead re-measures its planned list of stale configurations (PlanRetune)
// in order; a resume plans again, and what the campaign already stored is
// current by then, so it carries on with the next one. A guided campaign
// (sampler "guided") measures the current models' fastest predictions in
// contexts of each family's domain (GuidedPlanner): its contexts are drawn
// when it first runs, and a thread ranks them a chunk at a time, ahead of
// the GPUs, so that measuring starts after the first chunk instead of
// after the whole list (run46 on the H100: 117.6 s of ranking before the
// first of 96.8 s of measuring). Each chunk's candidates are stored as
// items and the cursor says which context is next, so a resume, or
// another daemon, carries on from there (with the models current then).
//
// Failures. A worker that crashes, exits after a sticky CUDA error, or is
// killed by the watchdog (a sample running past kernel_timeout_s) costs
// only the sample it said it was running: that one is recorded as
// launch_error or timeout with the reason, the samples queued behind it
// go to the restarted worker.
#ifndef BLOCKTUNE_SERVER_CAMPAIGNS_H_
#define BLOCKTUNE_SERVER_CAMPAIGNS_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/device.h"
#include "server/bench_list.h"
#include "server/campaign_plan.h"
#include "server/tuning_store.h"

namespace blocktune {

struct CampaignOptions {
  std::string worker_path;       // blocktune-worker
  std::vector<std::string> worker_args;  // added to every worker's argv
  std::vector<int> gpus;         // ordinals the daemon owns
  bool fake = false;             // the workers are fakes: profile h100-sxm
  double kernel_timeout_s = 30;  // watchdog, per running sample
  int max_failed_starts = 3;     // a GPU whose worker fails this often in a
                                 // row is given up
  int commit_every_ms = 250;
  // Several daemons on one store (issue 22). daemon_name: what `campaign
  // watch` calls this daemon's share (--name, default the host name);
  // holder: this process among all daemons (name/pid), which its leases
  // name. A lease not renewed for lease_s seconds (the daemon died) frees
  // its item for any daemon; items hold item_size candidates; a daemon
  // with idle GPUs looks for campaigns started elsewhere every poll_ms.
  std::string daemon_name = "blocktuned";
  std::string holder = "blocktuned";
  int lease_s = 60;
  int item_size = 64;
  int poll_ms = 2000;
  // A new campaign measures each sampled kernel in this many contexts
  // (FamilyRotation::Next), so the worker compiles once per k samples; 1:
  // every sample its own draw, as the thesis samples. Fixed in the
  // campaign's cursor when it first runs, so every daemon of a fleet and
  // every resume plans the same way; campaigns from before it plan with 1.
  int contexts_per_kernel = 4;
  // The models that guide a guided campaign (sampler "guided"; the daemon's
  // SurrogateRegistry), and the threads its plan's searches run on (beside
  // the workers' compiling, which they slow down). Without
  // one, a guided campaign fails, saying so.
  GuideFinder guide;
  int guide_threads = 4;
};

// What WatchCampaign streams, besides the stored record.
struct CampaignProgressInfo {
  CampaignRecord record;
  int64_t done = 0;
  int64_t target = 0;
  double samples_per_second = 0;
  double acceptance = 0;
  std::map<std::string, int64_t> failures;
  double best_tflops = 0;
  double eta_s = -1;
  double elapsed_s = 0;
  int64_t verified = 0;
  int workers = 0;
  int64_t worker_restarts = 0;
  // Committed samples, ok or failed, by kernel family ("gemm.mma").
  std::map<std::string, int64_t> samples_by_family;
  // Committed samples by daemon name (CampaignOptions::daemon_name).
  std::map<std::string, int64_t> samples_by_daemon;
};

class CampaignManager {
 public:
  CampaignManager(TuningStore* store, CampaignOptions options);
  ~CampaignManager();  // Shutdown()

  // Queues the campaigns left queued or running in the store: by an earlier
  // daemon, or started on another daemon of the store. The scheduler calls
  // it again every poll_ms while the GPUs are idle.
  Status ResumeStored();
  // FAILED_PRECONDITION when the daemon has no GPU, the spec names one it
  // does not own, or a family (spec.families[i], or every family of the op
  // in the dtype) needs a newer GPU than the campaign's first; INVALID_ARGUMENT
  // when no family implements the op in the dtype. Nothing is stored then.
  // spec.families are stored by their registered names.
  StatusOr<CampaignRecord> Start(const CampaignSpec& spec);
  // Stops a queued or running campaign; returns its final record.
  StatusOr<CampaignRecord> Cancel(int64_t id);
  // The live state of campaign `id` (from the store when not running).
  StatusOr<CampaignProgressInfo> Progress(int64_t id);
  // Benchmarks `list` on the daemon's first GPU between campaigns (query
  // verification). FAILED_PRECONDITION, saying why, when the daemon has no
  // GPU or a campaign holds it; a second caller waits for the first.
  StatusOr<BenchListResult> Measure(const std::vector<Candidate>& list);
  bool has_gpu() const { return !options_.gpus.empty(); }

  // Stops the running campaign where it is (it stays "running" in the
  // store, to resume on the next start) and the scheduler.
  void Shutdown();

 private:
  class Run;
  void SchedulerLoop();

  TuningStore* const store_;
  const CampaignOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> queue_;
  std::set<int64_t> skipped_;  // campaigns on GPUs of other daemons
  std::set<int64_t> warned_;   // campaigns this GPU-less daemon logged
  // Campaigns watched here but run elsewhere: (when, samples done) seen.
  std::map<int64_t,
           std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>>>
      seen_;
  std::shared_ptr<Run> running_;
  bool stopping_ = false;
  bool measuring_ = false;  // Measure() has the GPU; no campaign starts
  std::thread scheduler_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_CAMPAIGNS_H_
