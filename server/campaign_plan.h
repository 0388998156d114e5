// What a campaign measures, and in which order (DESIGN.md, "Kernel families
// and precision"; issue 19):
//
//   - a sampling campaign draws from every kernel family that implements its
//     (op, dtype) and runs on its GPU, or from the families it names. Each
//     family has a candidate stream of its own (tuner/candidate_stream.h:
//     its Rng, its Naive Bayes tables); candidate seq comes from family
//     seq % F, so the n-th candidate is fixed by the spec alone and a
//     campaign resumes exactly when it restores each family's Rng;
//   - a retune_stale campaign re-measures, with today's generators, the
//     (context, family, parameters) of the stale samples (VersionFilter
//     kStale) of its (op, dtype) on its device, once each, in a fixed order;
//   - a guided campaign (sampler "guided") measures, in contexts drawn from
//     each family's domain, the configurations that family's current model
//     predicts fastest: where a model is wrong about its own best answers,
//     it learns it from the next training (issue 20, model quality).
//
// The scheduler (server/campaigns.h) runs what these produce; nothing here
// talks to a GPU.
#ifndef BLOCKTUNE_SERVER_CAMPAIGN_PLAN_H_
#define BLOCKTUNE_SERVER_CAMPAIGN_PLAN_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/family.h"
#include "server/tuning_store.h"
#include "tuner/campaign_spec.h"
#include "tuner/candidate_stream.h"
#include "tuner/device_profile.h"

namespace blocktune {

// The families a campaign of `spec` measures on a GPU of `profile`, in
// rotation order: spec.families (by their registered names) when given,
// else every registered family of the op that implements the dtype, runs on
// the GPU (KernelFamily::min_compute_capability) and, for a sampling
// campaign, has a built-in sampling domain, in registry order.
// INVALID_ARGUMENT naming spec.dtype when no family of the op implements
// it; FAILED_PRECONDITION naming spec.families[i] for a named family the
// GPU cannot run (or that has no sampling domain), and saying why when none
// of the op's families for the dtype runs on it.
StatusOr<std::vector<const KernelFamily*>> CampaignFamilies(
    const CampaignSpec& spec, const DeviceProfile& profile);

// The sampler seed of a campaign's index-th family: `seed` itself for the
// first, so a one-family campaign draws exactly what it drew before
// campaigns had several families; a splitmix64 step of (seed, index) for
// the others.
uint64_t FamilySeed(uint64_t seed, size_t index);

// A sampling campaign's candidates: one CandidateStream per family, in
// rotation. Not thread-safe; the campaign's thread owns it.
class FamilyRotation {
 public:
  // One family's sampler after its last candidate: what a campaign's
  // cursor keeps per family.
  struct State {
    std::array<uint64_t, 4> rng{};
    int64_t draws = 0;  // since the campaign began, over every resume
    int64_t accepted = 0;
  };

  // A stream per family (its built-in domain in `dtype`, seeded
  // FamilySeed(seed, i)); the Naive Bayes warm-ups run here. Errors as
  // CandidateStream::Make, and INVALID_ARGUMENT for no family or a family
  // without `dtype`.
  static StatusOr<std::unique_ptr<FamilyRotation>> Make(
      const std::vector<const KernelFamily*>& families, DType dtype,
      const DeviceProfile& profile, const std::string& sampler, uint64_t seed,
      const WorkBounds& work = {});

  size_t size() const { return streams_.size(); }
  const KernelFamily& family(size_t i) const { return *families_[i]; }
  // Which family candidate `seq` comes from.
  size_t FamilyOf(int64_t seq) const { return seq % streams_.size(); }

  // Carries family i on after a stop (a state from state(i)).
  void Restore(size_t i, const State& state);
  State state(size_t i) const;

  // Candidate `seq`, drawn from family FamilyOf(seq). A campaign asks for
  // seq = n, n+1, n+2 ... after restoring every family to where candidate
  // n-1 left it.
  //
  // With contexts_per_kernel k > 1, a family's candidates come in groups
  // of k: the first is the stream's next candidate, the others are the
  // same kernel in other contexts (CandidateStream::Another, seeded from
  // the campaign's seed and seq), so the worker compiles once for k
  // samples. Groups are aligned on seq (family-local index seq / size()
  // a multiple of k starts one); a group whose first candidate was drawn
  // before the last Restore, or whose kernel finds no other context,
  // starts afresh with the stream's next candidate.
  StatusOr<Candidate> Next(int64_t seq);
  void set_contexts_per_kernel(int k) { contexts_per_kernel_ = k < 1 ? 1 : k; }
  int contexts_per_kernel() const { return contexts_per_kernel_; }

 private:
  FamilyRotation() = default;
  std::vector<const KernelFamily*> families_;
  std::vector<std::unique_ptr<CandidateStream>> streams_;
  std::vector<State> base_;  // restored counters; the stream adds its own
  uint64_t seed_ = 0;
  int contexts_per_kernel_ = 1;
};

// What a retune_stale campaign re-measures, and what it leaves out.
struct RetunePlan {
  // Distinct (context, family, parameters), ordered by family name, then
  // context (op, then its fields in ToString order), then parameters.
  std::vector<Candidate> candidates;
  // Stale samples of the spec's op and dtype (and families, when named)
  // on the device.
  int64_t stale_samples = 0;
  // Stale samples whose (context, family, parameters) an earlier one has.
  int64_t duplicates = 0;
  // Configurations that already have a current sample on the device:
  // re-measured by this campaign before a stop, or measured since by
  // another. Leaving them out is what makes a resumed retune continue
  // exactly where it stopped.
  int64_t already_current = 0;
  // Configurations today's family refuses on this device (ValidateParams
  // or CanImplement), by "<family> <rule>", and those whose family this
  // build no longer has, by "<family> unknown family".
  int64_t skipped = 0;
  std::map<std::string, int64_t> skipped_by_reason;

  // One line for the campaign's message, e.g. "retune of gemm bf16 on
  // NVIDIA H100: 7 stale samples: 5 configurations to re-measure, 1
  // duplicate, 1 skipped (gemm.mma params: 1)"; "no stale samples of ...:
  // nothing to re-measure" when there are none.
  std::string Summary(const CampaignSpec& spec,
                      std::string_view device_name) const;
};

// Reads `store` for the stale samples of spec.op in spec.dtype on devices
// named `device_name` ('' = every device), of spec.families when given, and
// plans their re-measurement with the current generators on `profile`.
// Failed samples are re-measured too: a newer generator may have fixed them.
StatusOr<RetunePlan> PlanRetune(TuningStore& store, const CampaignSpec& spec,
                                std::string_view device_name,
                                const DeviceProfile& profile);

// ---------------------------------------------------------------- guided --

// How many configurations a guided campaign measures in each context. Eight
// is the re-benchmarked top 10 of a query with room for more contexts. The
// first kGuidedTopK - kGuidedExplore are the model's fastest predictions
// (its optimism about its own first answers); the other kGuidedExplore are
// drawn uniformly from its ranks kGuidedTopK - kGuidedExplore + 1 ..
// kGuidedExploreRanks (its pessimism: at 8192^3 bf16 on the H100 the
// fastest configuration measured, 1388.5 us, was the model's 51st, predicted
// 1.93 ms, which measuring its top 8 alone never reaches).
inline constexpr int kGuidedTopK = 8;
inline constexpr int kGuidedExplore = 2;
inline constexpr int kGuidedExploreRanks = 64;

// A family's current model, as a guided campaign asks it.
struct GuideModel {
  int64_t id = 0;  // the model's id in the store, for the campaign's summary
  // The k configurations the model predicts fastest for `ctx` (in the
  // model's precision), fastest first; fewer when the range has fewer.
  std::function<std::vector<Params>(const Context& ctx, int k)> top;
};
// The current model of `family` for `dtype` on the device named `device`;
// NOT_FOUND, saying so, when there is none.
using GuideFinder = std::function<StatusOr<GuideModel>(
    const KernelFamily& family, DType dtype, const std::string& device)>;

// What a guided campaign measures.
struct GuidedPlan {
  // In order: context after context (the families' contexts interleaved,
  // family i's j-th context at position j * F + i), each context's
  // configurations in the model's order (its top ones, then the drawn
  // ones); spec.max_samples of them.
  std::vector<Candidate> candidates;
  int64_t contexts = 0;
  // Families left out for want of a model on the device, with the reason.
  std::vector<std::string> unguided;
  // One line for the campaign's message, e.g. "guided by model 12
  // (gemm.ffma): 1000 contexts x (top 6 + 2 of ranks 7-64) = 8000
  // candidates".
  std::string summary;
};

// A guided campaign's plan in pieces, so that a campaign can measure the
// first contexts' candidates while the models rank the next ones (the
// ranking is the slow part: 117.6 s on the H100 host's CPU for 2,000
// contexts of gemm.ffma and gemm.ffma_k, run46, against 96.8 s of
// measuring). Make draws every context (fast) and finds each family's
// model; Search ranks a range of them. The contexts, and each one's
// candidates, depend on the spec and the models alone, so any range gives
// what PlanGuided gives for it. Search is safe to call from one thread at
// a time; the models' searches it runs may serve queries meanwhile.
class GuidedPlanner {
 public:
  // The contexts and models of PlanGuided(spec, profile, device_name,
  // find), with its errors.
  static StatusOr<std::unique_ptr<GuidedPlanner>> Make(
      const CampaignSpec& spec, const DeviceProfile& profile,
      const std::string& device_name, const GuideFinder& find);

  // How many contexts the plan has: ceil(spec.max_samples / kGuidedTopK).
  int64_t contexts() const { return static_cast<int64_t>(jobs_.size()); }

  // The candidates of contexts [begin, end) (clamped to contexts()), in
  // the order of GuidedPlan::candidates, ranked on `threads` threads;
  // `*answered` (when given) counts the contexts that had any. `stop`
  // (when given) is read between contexts: once true, the rest are left
  // out and the result is partial.
  std::vector<Candidate> Search(int64_t begin, int64_t end, int threads,
                                int64_t* answered = nullptr,
                                const std::atomic<bool>* stop = nullptr) const;

  // GuidedPlan::summary for `answered` contexts and `candidates`.
  std::string Summary(int64_t answered, int64_t candidates) const;
  const std::vector<std::string>& unguided() const { return unguided_; }

 private:
  GuidedPlanner() = default;
  struct Guided {
    const KernelFamily* family;
    GuideModel model;
  };
  struct Job {
    size_t family;  // index into guided_
    Context ctx;
  };
  uint64_t seed_ = 0;
  std::vector<Guided> guided_;
  std::vector<Job> jobs_;
  std::vector<std::string> unguided_;
  std::string ids_;
};

// Plans a guided campaign of `spec` (sampler "guided", max_samples > 0) on
// a GPU of `profile` named `device_name`: the contexts of family i come from
// its built-in domain in spec.dtype, drawn by a uniform candidate stream
// seeded FamilySeed(spec.seed, i), each context once; in each, the family's
// model ranks its kGuidedExploreRanks fastest configurations, and the plan
// takes the first kGuidedTopK - kGuidedExplore and kGuidedExplore of the
// rest, drawn by an Rng of the spec's seed and the context's place. The
// searches run on
// `threads` threads; the plan depends on the spec and the models alone.
// FAILED_PRECONDITION, saying how to get one, when no family has a model
// on the device; INVALID_ARGUMENT as Validate(spec) says, or for a spec that
// is not guided; the errors of CampaignFamilies. (GuidedPlanner in one
// piece.)
StatusOr<GuidedPlan> PlanGuided(const CampaignSpec& spec,
                                const DeviceProfile& profile,
                                const std::string& device_name,
                                const GuideFinder& find, int threads);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_CAMPAIGN_PLAN_H_
