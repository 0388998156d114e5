// Runtime inference (thesis §4.4): for a context, score every block shape in
// the search range with the surrogate and keep the best k. The search is
// exhaustive over the range, so it finds the model's global optimum there.
//
// The range: every combination of the x_B values the model's training data
// covered (Surrogate::search_values), that the hardware rules accept for the
// context, with M_L*N_L >= 32 (fewer elements than a warp's threads only
// wastes lanes) and K_G*U <= K (a split that leaves programs without a
// single reduction step only adds work), and whose K_G partial sums fit
// in memory beside the operands (1 GiB in all, as a campaign measures; no
// split when the operands alone are larger). The context-free rules (threads,
// shared memory, instruction cache) are applied once, at construction.
//
// An ensemble model is searched in two stages: its first member scores the
// whole range and the ensemble re-scores that member's best 512 (or 8k), so
// a query costs about one network's scoring instead of one per member. That
// can miss the ensemble's exhaustive best by a near-tie (see search.cc).
#ifndef BLOCKTUNE_MODELS_SEARCH_H_
#define BLOCKTUNE_MODELS_SEARCH_H_

#include <cstdint>
#include <vector>

#include "models/surrogate.h"
#include "tuner/device_profile.h"

namespace blocktune {

struct ScoredShape {
  BlockShape xb;
  double predicted_s = 0;
};

// The throughput range a prediction must fall in (Probe, and the search,
// which drops shapes outside it): beyond 10 Pflop/s no GPU computes these
// kernels (an H100's dense FP32 peak is 67 Tflop/s), and below 1 kflop/s a
// GPU kernel of any probe context would run for hours.
inline constexpr double kMinPlausibleFlops = 1e3;
inline constexpr double kMaxPlausibleFlops = 1e16;

// Whether `predicted_s` for a context of `flops` is a time a GPU could take.
bool PlausibleSeconds(double flops, double predicted_s);

struct SearchStats {
  int64_t candidates = 0;  // block shapes scored
  int64_t implausible = 0;  // dropped: their prediction failed
                            // PlausibleSeconds (a broken model)
  double seconds = 0;      // enumeration and scoring
};

// The search range alone, for any x_B values (no model needed).
class SearchRange {
 public:
  SearchRange(const SearchValues& values, const DeviceProfile& profile);
  // The block shapes of the range for `ctx` (which must have validated);
  // `index`, when given, receives each one's position in the grid.
  std::vector<BlockShape> Candidates(const Context& ctx,
                                     std::vector<int32_t>* index = nullptr) const;
  int64_t grid_size() const { return static_cast<int64_t>(grid_.size()); }
  // log2 of grid shape i's six components.
  const float* grid_logs(int32_t i) const {
    return grid_logs_.data() + size_t(i) * kBlockParameters;
  }

 private:
  KernelLimits limits_;
  std::vector<BlockShape> grid_;  // context-free rules applied
  std::vector<float> grid_logs_;
};

class BlockSearch {
 public:
  BlockSearch(Surrogate model, const DeviceProfile& profile);

  // The block shapes of the range for `ctx` (which must have validated).
  std::vector<BlockShape> Candidates(const Context& ctx) const {
    return range_.Candidates(ctx);
  }
  // The k best by predicted time, fastest first (k >= 1). Shapes whose
  // prediction is not PlausibleSeconds are left out and counted in stats.
  std::vector<ScoredShape> Top(const Context& ctx, int k,
                               SearchStats* stats = nullptr) const;
  // Scores given block shapes for `ctx`, in order.
  std::vector<double> PredictSeconds(const Context& ctx,
                                     const std::vector<BlockShape>& shapes) const;

  // Whether the model's predictions can be used at all: for a probe set of
  // contexts of its op (square, skinny and deep GEMMs; ResNet-like
  // convolutions), ~1k block shapes spread over the range must get a
  // finite time whose throughput is physically plausible, in
  // [kMinPlausibleFlops, kMaxPlausibleFlops]. A model with NaN, infinite or exploding weights
  // fails here, INVALID_ARGUMENT naming a context and block shape, before
  // any query sees it.
  Status Probe() const;

  const Surrogate& model() const { return model_; }
  int64_t grid_size() const { return range_.grid_size(); }

 private:
  Surrogate model_;
  SearchRange range_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_SEARCH_H_
