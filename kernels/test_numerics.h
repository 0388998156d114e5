// Host-side conversions the GPU tests of the tensor-core families use to
// make inputs and read outputs in bf16 and fp16, random operands in a
// precision, and the per-element error bound of DESIGN.md "Verification
// per precision" (test code only).
#ifndef BLOCKTUNE_KERNELS_TEST_NUMERICS_H_
#define BLOCKTUNE_KERNELS_TEST_NUMERICS_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm_mma.h"

namespace blocktune::test_numerics {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t ToBf16(float f) {  // round to nearest even (finite inputs)
  uint32_t u = Bits(f);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16ToFloat(uint16_t h) { return FromBits(uint32_t{h} << 16); }
inline uint16_t ToFp16(float f) {  // the compiler's conversion: nearest even
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float Fp16ToFloat(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}

inline float RoundTf32(float f) {  // sm_90's cvt.rn.tf32.f32: ties even
  uint32_t u = Bits(f);
  u = (u + 0xfff + ((u >> 13) & 1)) & 0xffffe000u;
  return FromBits(u);
}

// Host storage of one operand in the precision's type, and its values as
// the tensor cores multiply them (already rounded).
struct HostMatrix {
  std::vector<uint16_t> h;    // bf16 / fp16 bits
  std::vector<float> f;       // tf32 storage (fp32), unrounded
  std::vector<double> value;  // what the kernel multiplies
};

// n values uniform in [-1, 1].
inline HostMatrix Random(MmaPrecision prec, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  HostMatrix m;
  m.value.resize(n);
  if (prec == MmaPrecision::kTf32) {
    m.f.resize(n);
    for (size_t i = 0; i < n; ++i) {
      m.f[i] = uni(rng);
      m.value[i] = RoundTf32(m.f[i]);
    }
  } else {
    m.h.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const float x = uni(rng);
      m.h[i] = prec == MmaPrecision::kBf16 ? ToBf16(x) : ToFp16(x);
      m.value[i] = prec == MmaPrecision::kBf16 ? Bf16ToFloat(m.h[i])
                                               : Fp16ToFloat(m.h[i]);
    }
  }
  return m;
}

inline const void* Data(const HostMatrix& m) {
  return m.h.empty() ? static_cast<const void*>(m.f.data())
                     : static_cast<const void*>(m.h.data());
}

// Output element i of a buffer in the precision's output type.
inline double OutputValue(MmaPrecision prec, const std::vector<uint8_t>& bytes,
                          size_t i) {
  if (prec == MmaPrecision::kTf32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  uint16_t u;
  std::memcpy(&u, bytes.data() + 2 * i, 2);
  return prec == MmaPrecision::kBf16 ? Bf16ToFloat(u) : Fp16ToFloat(u);
}

// The tolerance per element:
//   |C - C_ref| <= c * u * |alpha| * sum_k |a_ik||b_kj|
//                  + u_out * |C_ref| + 2^-22 * |beta * C_old| + a_out
// with c = 1, u the unit roundoff of the math type (bf16 2^-8, fp16 2^-11,
// tf32 2^-11), u_out that of the output type (bf16 2^-8, fp16 2^-11, fp32
// 2^-24) and a_out half the output type's subnormal spacing (tiny results
// round absolutely: fp16 2^-25).
struct MmaBound {
  double u, u_out, abs_out;
  // `input_scale` widens the inputs' part: 4 for tf32 operands that are
  // truncated instead of rounded (wgmma: each off by up to 2^-10, their
  // product by 2 * 2^-10 = 4 * 2^-11).
  explicit MmaBound(MmaPrecision prec, double input_scale = 1)
      : u(input_scale * (prec == MmaPrecision::kBf16 ? std::ldexp(1.0, -8)
                                                     : std::ldexp(1.0, -11))),
        u_out(prec == MmaPrecision::kBf16   ? std::ldexp(1.0, -8)
              : prec == MmaPrecision::kFp16 ? std::ldexp(1.0, -11)
                                            : std::ldexp(1.0, -24)),
        abs_out(prec == MmaPrecision::kFp16   ? std::ldexp(1.0, -25)
                : prec == MmaPrecision::kBf16 ? std::ldexp(1.0, -134)
                                              : std::ldexp(1.0, -149)) {}
  double Bound(double alpha, double abs_sum, double ref,
               double beta_old) const {
    return u * std::fabs(alpha) * abs_sum + u_out * std::fabs(ref) +
           std::ldexp(1.0, -22) * std::fabs(beta_old) + abs_out;
  }
  // The fp32-accumulation scale K * 2^-24 * sum|a||b| (+ output rounding):
  // how far under the bound an honest kernel stays.
  double AccumulationScale(int64_t k, double alpha, double abs_sum,
                           double ref) const {
    return k * std::ldexp(1.0, -24) * std::fabs(alpha) * abs_sum +
           u_out * std::fabs(ref) + abs_out;
  }
};

}  // namespace blocktune::test_numerics

#endif  // BLOCKTUNE_KERNELS_TEST_NUMERICS_H_
