// The text builder the tensor-core generators (gemm_mma_ptx.cc,
// gemm_wgmma_ptx.cc) write their PTX with: a stream of anything
// std::ostream prints.
#ifndef BLOCKTUNE_KERNELS_PTX_TEXT_H_
#define BLOCKTUNE_KERNELS_PTX_TEXT_H_

#include <sstream>
#include <string>

namespace blocktune {

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
