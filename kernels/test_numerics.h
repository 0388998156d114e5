// Host-side conversions the GPU tests of the tensor-core families use to
// make inputs and read outputs in bf16 and fp16 (test code only).
#ifndef BLOCKTUNE_KERNELS_TEST_NUMERICS_H_
#define BLOCKTUNE_KERNELS_TEST_NUMERICS_H_

#include <cstdint>
#include <cstring>

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

}  // namespace blocktune::test_numerics

#endif  // BLOCKTUNE_KERNELS_TEST_NUMERICS_H_
