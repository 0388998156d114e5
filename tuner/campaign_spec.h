// What a tuning campaign is asked to do, and where it stands. The campaign
// runner (issue 5) executes a spec; the store persists both so a campaign
// survives a daemon restart.
#ifndef BLOCKTUNE_TUNER_CAMPAIGN_SPEC_H_
#define BLOCKTUNE_TUNER_CAMPAIGN_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kernels/operation.h"
#include "kernels/status.h"
#include "tuner/sampler.h"

namespace blocktune {

inline constexpr int64_t kMaxCampaignMinutes = 30 * 24 * 60;
inline constexpr int64_t kMaxCampaignSamples = 1'000'000'000;
inline constexpr int kMaxGpuIndex = 63;

struct CampaignSpec {
  Op op = Op::kGemm;
  DType dtype = DType::kFp32;
  std::vector<int> gpus;    // GPU ordinals; empty: every GPU the daemon owns
  // "bayes", "uniform", or "guided": every candidate is one of the
  // configurations the family's current model on the campaign's GPU ranks
  // fastest (its first 6 and 2 of its ranks 7-64), in contexts drawn from
  // the family's domain (server/campaign_plan.h PlanGuided; needs
  // max_samples).
  std::string sampler = "bayes";
  int64_t minutes = 0;      // time budget; 0 = no time limit
  int64_t max_samples = 0;  // sample budget; 0 = no sample limit
  uint64_t seed = 0;        // sampler seed, so a campaign can be replayed
  std::string label;        // free text for people, may be empty
  // Families to sample; empty: every family that implements (op, dtype)
  // and runs on the campaign's GPU. Candidates alternate between them
  // (candidate seq goes to family seq % size). With retune_stale: only the
  // stale samples of these families.
  std::vector<std::string> families;
  // Re-measure the stale samples' contexts and parameters with the current
  // generators instead of sampling (server/campaign_plan.h PlanRetune).
  bool retune_stale = false;
  // Where a drawn context's work, 2*M*N*K of its (implicit) GEMM, may lie
  // (tuner/sampler.h WorkBounds): at least min_flops (0: no lower bound)
  // and at most max_flops (0: the default, 2^36). A campaign for large
  // products sets both, e.g. min_flops 2^36 and max_flops 2^40: the
  // default campaign never draws them, and the models extrapolate there.
  double min_flops = 0;
  double max_flops = 0;

  auto Tie() const {
    return std::tie(op, dtype, gpus, sampler, minutes, max_samples, seed,
                    label, families, retune_stale, min_flops, max_flops);
  }
  friend bool operator==(const CampaignSpec& a, const CampaignSpec& b) {
    return a.Tie() == b.Tie();
  }
};

// A guided campaign (sampler "guided") measures the models' own answers.
inline bool IsGuided(const CampaignSpec& spec) {
  return spec.sampler == "guided";
}
// A retune_stale or guided campaign measures a list instead of drawing from
// samplers: a retune plans its whole list when it first runs; a guided one
// draws its list's contexts when it first runs and has the models rank
// them a chunk at a time, while the first chunks are measured
// (server/campaigns.cc GuidedPrefetch).
inline bool PlansListAtOnce(const CampaignSpec& spec) {
  return spec.retune_stale || IsGuided(spec);
}

// At least one budget must be set, so no campaign runs forever by accident;
// a retune_stale campaign may have none (it ends when every stale sample is
// re-measured). Each of `families` must be a registered family of the op
// that implements the dtype, named once; the error names
// "spec.families[i]" and lists the allowed ones. Whether the campaign's GPU
// runs them is checked where the GPU is known (CampaignManager::Start).
// max_flops is 0 or in [1, 2^50], min_flops in [0, the effective max_flops),
// and neither applies to a retune_stale campaign (it re-measures stored
// contexts).
Status Validate(const CampaignSpec& spec, std::string_view field = "spec");

// The bounds the spec's samplers draw within (max_flops 0: the default).
WorkBounds WorkOf(const CampaignSpec& spec);

enum class CampaignState { kQueued, kRunning, kDone, kCancelled, kFailed };

std::string_view ToString(CampaignState state);
StatusOr<CampaignState> CampaignStateFromString(
    std::string_view text, std::string_view field = "state");
// Done, cancelled and failed campaigns never change state again.
bool IsTerminal(CampaignState state);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_CAMPAIGN_SPEC_H_
