// Runtime inference (thesis §4.4): for a context, score every configuration
// of the model's kernel family in the search range with the surrogate and
// keep the best k. The search is exhaustive over the range, so it finds the
// model's global optimum there.
//
// The range: every combination of the parameter values the model's training
// data covered (Surrogate::search_values), in the family's parameter order
// with the last parameter varying fastest, that the family's hardware rules
// accept for the context, with an output tile of at least 32 elements
// (fewer than a warp's threads only wastes lanes), a split that leaves every
// program a reduction step (SplitHasWork: K_G*U <= K), and a working set
// (WorkingSetBytes: operands and the K_G partial sums) that fits in memory
// (1 GiB in all, as a campaign measures; the operands alone when they are
// larger, which then allows no split). The rules that do not look at the
// problem (KernelFamily::RuleUsesProblem) are applied once, at construction.
//
// A family's refining parameters (ParamSpec::refines, ffma's ST) are
// searched in two stages too: the model scores the configurations with
// every refining parameter at its base value (absent_means) first, then the
// other values of the best kRefineShortlist (or 8k) of them, and ranks the
// two sets together. A configuration whose base the range does not hold
// (a rule refuses it) is scored in the first stage. This costs the search
// a grid of one value per refining parameter plus a shortlist, and can
// miss the exhaustive best where that best's base ranks below the
// shortlist (search_refine_test measures it on the shipped models).
//
// An ensemble model is searched in two stages: its first member scores the
// whole range and the ensemble re-scores that member's best 512 (or 8k), so
// a query costs about one network's scoring instead of one per member. That
// can miss the ensemble's exhaustive best by a near-tie (see search.cc).
//
// A model scores the configurations of its own family (Surrogate::family)
// in contexts of its precision; a query over several families runs one
// search per family and compares the predicted times.
#ifndef BLOCKTUNE_MODELS_SEARCH_H_
#define BLOCKTUNE_MODELS_SEARCH_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/surrogate.h"
#include "tuner/device_profile.h"

namespace blocktune {

// One configuration of the model's family with its predicted time (an
// ensemble's mean) and the time it is ranked by: the ensemble's mean less
// kEnsembleRisk of its members' standard deviation, in ln(flop/s), so
// that of two configurations predicted alike, the one the members agree
// on comes first (predicted_s for a single network). A query's answer
// reports the ranking time (server/service.cc MakeTuned).
struct ScoredConfig {
  Params params;
  double predicted_s = 0;
  double ranked_s = 0;
};

// The members' disagreement an ensemble's ranking charges, in standard
// deviations of ln(flop/s). Measured offline, without a GPU
// (bench/eval/risk_offline.sh, bench/results/cpu/ensemble_risk.txt:
// oracle_eval on the measured candidates of the nine evaluations that kept
// them, with the shipped models): against ranking by the mean (0), 1 put
// the top 1 within 5% of the set's best on more contexts in eight of the
// nine (H100 bf16 GEMM 79% -> 83%, conv 52% -> 57%; H100 tf32 GEMM 87% ->
// 90%, conv 68% -> 72%; H200 bf16 conv 68% -> 70%; H200 fp32 GEMM 77% ->
// 79%, conv 62% -> 72%; fp32 GEMM with gemm.gemv 67% -> 76%) and on one
// fewer of 52 in H200 bf16 GEMM (79% -> 77%). The configurations whose
// members disagree are the ones the data covers least, and there the
// model erred mostly on the optimistic side (small MLP shapes, N = 1-2
// decode).
inline constexpr double kEnsembleRisk = 1.0;

// The seconds `c` is ranked by (predicted_s where no ranking time was set).
inline double RankedSeconds(const ScoredConfig& c) {
  return c.ranked_s > 0 ? c.ranked_s : c.predicted_s;
}

// The throughput range a prediction must fall in (Probe, and the search,
// which drops shapes outside it): beyond 10 Pflop/s no GPU computes these
// kernels (an H100's dense FP32 peak is 67 Tflop/s), and below 1 kflop/s a
// GPU kernel of any probe context would run for hours.
inline constexpr double kMinPlausibleFlops = 1e3;
inline constexpr double kMaxPlausibleFlops = 1e16;

// Whether `predicted_s` for a context of `flops` is a time a GPU could take.
bool PlausibleSeconds(double flops, double predicted_s);

struct SearchStats {
  int64_t candidates = 0;  // configurations scored
  int64_t implausible = 0;  // dropped: their prediction failed
                            // PlausibleSeconds (a broken model)
  double seconds = 0;      // enumeration and scoring
};

// The search range alone, for any parameter values (no model needed).
class SearchRange {
 public:
  // `values`: one list per parameter of `family`, in its params() order (a
  // list count that differs leaves the range empty). `family` must outlive
  // the range (registered families do).
  SearchRange(const KernelFamily& family, const SearchValues& values,
              const DeviceProfile& profile);
  // The configurations of the range for `ctx` (which must have validated,
  // and be of the family's op), as positions in the grid, ascending; with
  // `shapes`, each one's KernelFamily::Shape too, in the same order. With
  // `bases_only`, those of them that are bases (see refines()).
  std::vector<int32_t> CandidateIndices(
      const Context& ctx, std::vector<ConfigShape>* shapes = nullptr,
      bool bases_only = false) const;
  // Whether the family has refining parameters (ParamSpec::refines) with
  // more than one value in the range. A base is a configuration with each
  // of them at its base value (absent_means where the range has it, else
  // its first value), or one whose base the range does not hold; the
  // variants of a base are the range's configurations that differ from it
  // in refining parameters alone.
  bool refines() const { return !variant_begin_.empty(); }
  // The variants of the bases `bases` (grid positions) that are candidates
  // for `ctx`, as CandidateIndices gives them, appended to `out` (and their
  // shapes to `shapes`, where given).
  void AppendVariants(const Context& ctx, const std::vector<int32_t>& bases,
                      std::vector<int32_t>* out,
                      std::vector<ConfigShape>* shapes = nullptr) const;
  // The same as configurations.
  std::vector<Params> Candidates(const Context& ctx) const;
  int64_t grid_size() const {
    return params_ ? static_cast<int64_t>(grid_values_.size()) / params_ : 0;
  }
  // Grid configuration i.
  Params grid(int32_t i) const {
    Params p;
    p.size = params_;
    std::copy_n(grid_values_.data() + size_t(i) * params_, params_, p.v.data());
    return p;
  }
  const KernelFamily& family() const { return *family_; }
  // KernelFamily::ParamFeatures of grid configuration i.
  const float* grid_features(int32_t i) const {
    return grid_features_.data() + size_t(i) * params_;
  }

 private:
  const KernelFamily* family_;
  int params_;  // the family's parameter count
  KernelLimits limits_;
  std::vector<int> problem_rules_;  // the rules applied per query
  // The configurations the other rules accept, `params_` values each.
  std::vector<int64_t> grid_values_;
  std::vector<float> grid_features_;
  // Refinement (empty where refines() is false): whether grid position g
  // is a base, and its variants, variant_index_[variant_begin_[g] ..
  // variant_begin_[g + 1]).
  std::vector<char> is_base_;
  std::vector<int32_t> variant_begin_;
  std::vector<int32_t> variant_index_;

  // Whether grid position g passes the per-problem rules and the range's
  // tile, split and memory bounds for `problem` (a K_G workspace of at most
  // `room` bytes); its shape in *shape.
  bool Admits(const Problem& problem, int64_t room, int32_t g,
              ConfigShape* shape) const;
  void IndexRefinements(const std::vector<std::vector<int64_t>>& values,
                        const std::vector<int64_t>& codes);
};

// The number of bases whose variants the search scores (at least 8k). 512
// missed the exhaustive best by 5% on one of search_refine_test's 12
// contexts (gemm 35x8457x2560); 2048 matched on all of them, until the ffma
// domain took the large thread tiles and long loops (2026-12-02): then
// 2048 shared 7 of 1024^3's exhaustive top 10, 4096 shares 9.
inline constexpr size_t kRefineShortlist = 4096;

// How BlockSearch::Top treats refining parameters.
enum class Refinement {
  kShortlist,   // bases first, then the best bases' variants
  kExhaustive,  // every configuration of the range (for comparisons)
};

class BlockSearch {
 public:
  BlockSearch(Surrogate model, const DeviceProfile& profile);

  // The configurations of the range for `ctx` (which must have validated,
  // and be in the model's precision).
  std::vector<Params> Candidates(const Context& ctx) const {
    return range_.Candidates(ctx);
  }
  const KernelFamily& family() const { return range_.family(); }
  // The k best by predicted time, fastest first (k >= 1). Configurations
  // whose prediction is not PlausibleSeconds are left out and counted in
  // stats.
  std::vector<ScoredConfig> Top(
      const Context& ctx, int k, SearchStats* stats = nullptr,
      Refinement refinement = Refinement::kShortlist) const;
  // Scores given configurations of the family for `ctx`, in order; with
  // `ranked`, also the seconds Top ranks them by (ScoredConfig::ranked_s).
  std::vector<double> PredictSeconds(const Context& ctx,
                                     const std::vector<Params>& configs,
                                     std::vector<double>* ranked = nullptr) const;

  // Whether the model's predictions can be used at all: for a probe set of
  // contexts of its op in its precision (square, skinny and deep GEMMs;
  // ResNet-like convolutions), ~1k configurations spread over the range
  // must get a
  // finite time whose throughput is physically plausible, in
  // [kMinPlausibleFlops, kMaxPlausibleFlops]. A model with NaN, infinite or exploding weights
  // fails here, INVALID_ARGUMENT naming a context and configuration, before
  // any query sees it.
  Status Probe() const;

  const Surrogate& model() const { return model_; }
  const SearchRange& range() const { return range_; }
  int64_t grid_size() const { return range_.grid_size(); }
  // The spread an ensemble's ranking charges (kEnsembleRisk unless set;
  // 0 ranks by the mean), for offline comparisons (oracle_eval --risk).
  void set_risk(double risk) { risk_ = risk; }
  double risk() const { return risk_; }

 private:
  Surrogate model_;
  SearchRange range_;
  double risk_ = kEnsembleRisk;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_SEARCH_H_
