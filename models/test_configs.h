// Random contexts and block shapes for tests that hold one implementation
// to another over many configurations: sizes spread over the whole range,
// powers of two and ragged ones alike, every layout, convolutions with
// padding, strides and dilations; all validate.
#ifndef BLOCKTUNE_MODELS_TEST_CONFIGS_H_
#define BLOCKTUNE_MODELS_TEST_CONFIGS_H_

#include <algorithm>
#include <cstdint>
#include <random>

#include "kernels/block_shape.h"
#include "kernels/context.h"

namespace blocktune {
namespace testing {

inline int64_t AnyOf(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// In [2^(e-1), 2^e] for e uniform in [0, max_log2] (1 for e = 0).
inline int64_t AnySize(std::mt19937_64& rng, int max_log2) {
  const int64_t hi = int64_t{1} << AnyOf(rng, 0, max_log2);
  return AnyOf(rng, std::max<int64_t>(1, hi / 2), hi);
}

// A GEMM or a convolution, even odds.
inline Context RandomContext(std::mt19937_64& rng) {
  while (rng() % 2) {
    GemmContext g;
    g.m = AnySize(rng, 24);
    g.n = AnySize(rng, 24);
    g.k = AnySize(rng, 24);
    g.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
    g.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
    if (Validate(g).ok()) return g;
  }
  while (true) {
    ConvContext c;
    c.n = AnySize(rng, 8);
    c.h = AnySize(rng, 10);
    c.w = AnySize(rng, 10);
    c.c = AnySize(rng, 12);
    c.k = AnySize(rng, 12);
    c.r = AnyOf(rng, 1, 11);
    c.s = AnyOf(rng, 1, 11);
    c.pad_h = AnyOf(rng, 0, 5);
    c.pad_w = AnyOf(rng, 0, 5);
    c.stride_h = AnyOf(rng, 1, 4);
    c.stride_w = AnyOf(rng, 1, 4);
    c.dilation_h = AnyOf(rng, 1, 3);
    c.dilation_w = AnyOf(rng, 1, 3);
    if (Validate(c).ok()) return c;
  }
}

// Powers of two only where `pow2` (as the shipped models' range is).
inline BlockShape RandomBlockShape(std::mt19937_64& rng, bool pow2 = false) {
  auto any = [&](int max_log2) {
    return pow2 ? int64_t{1} << AnyOf(rng, 0, max_log2) : AnySize(rng, max_log2);
  };
  while (true) {
    const BlockShape xb{any(10), any(10), any(5), any(5), any(7), any(12),
                        1 + static_cast<int64_t>(rng() % kMaxStages)};
    if (Validate(xb).ok()) return xb;
  }
}

}  // namespace testing
}  // namespace blocktune

#endif  // BLOCKTUNE_MODELS_TEST_CONFIGS_H_
