// The text builder the generators (gemm_mma_ptx.cc, gemm_wgmma_ptx.cc,
// gemm_gemv.cc) write their PTX with: a stream of anything std::ostream
// prints; and the small arithmetic they share.
#ifndef BLOCKTUNE_KERNELS_PTX_TEXT_H_
#define BLOCKTUNE_KERNELS_PTX_TEXT_H_

#include <cstdint>
#include <sstream>
#include <string>

namespace blocktune {

// A number as PTX text.
inline std::string N(int64_t v) { return std::to_string(v); }
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// v rounded up to a multiple of `to`.
inline int64_t RoundUp(int64_t v, int64_t to) { return CeilDiv(v, to) * to; }
// The exponent of the least power of two >= v (v >= 1).
inline int Log2(int64_t v) {
  int l = 0;
  while ((int64_t{1} << l) < v) ++l;
  return l;
}
inline bool IsPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

class PtxText {
 public:
  template <typename T>
  PtxText& operator<<(const T& v) {
    out_ << v;
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_PTX_TEXT_H_
