// Answers for a query that neither a stored answer nor a model can serve
// (QueryRequest.fallback; Kernel Launcher's load_best_config): the block
// configuration of the nearest stored context of the same op and precision,
// or a safe default of a family that implements the precision. A lookup
// never fails for lack of tuning data; the match says how good the answer
// is.
#ifndef BLOCKTUNE_SERVER_FALLBACK_H_
#define BLOCKTUNE_SERVER_FALLBACK_H_

#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/gemm_ptx.h"
#include "server/tuning_store.h"

namespace blocktune {

// How far apart two contexts of one op and precision are: the sum over
// their dimensions (GEMM M, N, K; convolution N, H, W, C, K, R, S) of the
// squared log2 ratio, plus 1 for every layout, pad, stride or dilation that
// differs. Infinite for contexts of different ops or precisions: a kernel
// tuned for one precision says nothing about another's (and may not
// implement it).
double ContextDistance(const Context& a, const Context& b);

// Whether `kernel` can run for `ctx` where a search would have offered it:
// a registered family of the context's op that implements its precision,
// the family's hardware rules, and a split that leaves every program a
// reduction step (SplitHasWork).
bool FitsContext(const Context& ctx, const KernelConfig& kernel,
                 const KernelLimits& limits);
// The same for a block shape of the op's block-shape family.
bool FitsContext(const Context& ctx, const BlockShape& xb,
                 const KernelLimits& limits);

// The stored answer nearest `ctx` (same op and precision; of `family` when
// it is not empty) whose configuration fits it, fastest first among equally
// near ones; none if no stored answer fits. `limits_of` gives the hardware
// rules of an answer's device.
template <typename LimitsOf>
std::optional<TunedRecord> NearestTuned(const std::vector<TunedRecord>& stored,
                                        const Context& ctx,
                                        LimitsOf&& limits_of,
                                        std::string_view family = "") {
  std::optional<TunedRecord> best;
  double best_distance = 0;
  for (const TunedRecord& t : stored) {
    if (!family.empty() && t.kernel.family != family) continue;
    const double d = ContextDistance(ctx, t.context);
    if (!(d < std::numeric_limits<double>::infinity())) continue;
    if (best && (d > best_distance ||
                 (d == best_distance && t.RankSeconds() >= best->RankSeconds())))
      continue;
    if (!FitsContext(ctx, t.kernel, limits_of(t.device))) continue;
    best = t;
    best_distance = d;
  }
  return best;
}

// A configuration that runs for `ctx` on a device with `limits`, with no
// tuning behind it: the Default of `family` (empty: DefaultFamily of the
// context's op and precision), the first of its short list of moderate
// configurations that fits. FAILED_PRECONDITION if none does, or for a
// precision no family implements (naming it and the families).
StatusOr<KernelConfig> DefaultKernel(const Context& ctx,
                                     const KernelLimits& limits,
                                     std::string_view family = "");
// DefaultKernel of the op's fp32 block-shape family, as a block shape.
StatusOr<BlockShape> DefaultBlockShape(const Context& ctx,
                                       const KernelLimits& limits);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_FALLBACK_H_
