// Answers for a query that neither a stored answer nor a model can serve
// (QueryRequest.fallback; Kernel Launcher's load_best_config): the block
// shape of the nearest stored context, or a safe default. A lookup never
// fails for lack of tuning data; the match says how good the answer is.
#ifndef BLOCKTUNE_SERVER_FALLBACK_H_
#define BLOCKTUNE_SERVER_FALLBACK_H_

#include <optional>
#include <vector>

#include "kernels/gemm_ptx.h"
#include "server/tuning_store.h"

namespace blocktune {

// How far apart two contexts of one op are: the sum over their dimensions
// (GEMM M, N, K; convolution N, H, W, C, K, R, S) of the squared log2
// ratio, plus 1 for every layout, pad, stride or dilation that differs.
// Infinite for contexts of different ops.
double ContextDistance(const Context& a, const Context& b);

// Whether `xb` can run for `ctx` where a search would have offered it: the
// hardware rules of its family (BlockShapeFamily), and a split that leaves
// every program a reduction step (SplitHasWork: K_G*U <= K).
bool FitsContext(const Context& ctx, const BlockShape& xb,
                 const KernelLimits& limits);

// The stored answer nearest `ctx` whose block shape fits it, fastest first
// among equally near ones; none if no stored answer fits. `limits_of`
// gives the hardware rules of an answer's device.
template <typename LimitsOf>
std::optional<TunedRecord> NearestTuned(const std::vector<TunedRecord>& stored,
                                        const Context& ctx,
                                        LimitsOf&& limits_of) {
  std::optional<TunedRecord> best;
  double best_distance = 0;
  for (const TunedRecord& t : stored) {
    if (OpOf(t.context) != OpOf(ctx)) continue;
    const double d = ContextDistance(ctx, t.context);
    if (best && (d > best_distance ||
                 (d == best_distance && t.RankSeconds() >= best->RankSeconds())))
      continue;
    const std::optional<BlockShape> xb = t.kernel.block_shape();
    if (!xb || !FitsContext(ctx, *xb, limits_of(t.device))) continue;
    best = t;
    best_distance = d;
  }
  return best;
}

// A block shape that runs for `ctx` on a device with `limits`, with no
// tuning behind it: its family's Default (the first of a short list of
// moderate shapes, 64x64 tiles of 4x4 per thread first, that fits).
// FAILED_PRECONDITION if none does, or for a precision the family does not
// implement.
StatusOr<BlockShape> DefaultBlockShape(const Context& ctx,
                                       const KernelLimits& limits);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_FALLBACK_H_
