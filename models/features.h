// The surrogate's input features (thesis §4.3.1): log2 of every component
// of x_B and x_C, because performance is products, quotients and maxima of
// those components, which a ReLU MLP fits far better in log space.
#ifndef BLOCKTUNE_MODELS_FEATURES_H_
#define BLOCKTUNE_MODELS_FEATURES_H_

#include <string>
#include <vector>

#include "kernels/block_shape.h"
#include "kernels/context.h"

namespace blocktune {

// Names of LogFeatures' entries for contexts of `op`, in order.
const std::vector<std::string>& FeatureNames(Op op);

// log2 of x_B (M_L, N_L, M_S, N_S, U, K_G), then of x_C: for GEMM M, N, K
// and the two layouts as 0/1; for convolution N, P, Q, C, K, R, S, the
// strides and dilations, then log2(1 + pad) per axis. Both arguments must
// have validated.
std::vector<float> LogFeatures(const Context& ctx, const BlockShape& xb);

}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_FEATURES_H_
