// The surrogate's input features (thesis §4.3.1) are its kernel family's
// (KernelFamily::Features): log2 of every parameter and of the context's
// sizes, because performance is products, quotients and maxima of those,
// which a ReLU MLP fits far better in log space. A surrogate of `op` scores
// the configurations of BlockShapeFamily(op) (gemm.ffma, conv.ffma) until
// models are keyed by family (issue 19); these two functions are that
// family's, for callers that hold a block shape.
#ifndef BLOCKTUNE_MODELS_FEATURES_H_
#define BLOCKTUNE_MODELS_FEATURES_H_

#include <string>
#include <vector>

#include "kernels/block_shape.h"
#include "kernels/context.h"

namespace blocktune {

// BlockShapeFamily(op).FeatureNames(): the names a stored model of `op`
// lists, in order.
const std::vector<std::string>& FeatureNames(Op op);

// BlockShapeFamily(OpOf(ctx)).Features of (ctx, xb): log2 of x_B (M_L,
// N_L, M_S, N_S, U, K_G), then of x_C (ContextFeatureNames). Both arguments
// must have validated.
std::vector<float> LogFeatures(const Context& ctx, const BlockShape& xb);

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_FEATURES_H_
