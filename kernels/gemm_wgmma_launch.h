// A generated gemm.wgmma kernel loaded into the current CUDA context and
// launched: the tensor maps of A and B are encoded for the operands'
// device addresses at each launch (cheap host work) and passed by value.
//
// Why a launcher of its own: GeneratedKernel (family.h) describes entry
// parameters as scalars and device addresses; it has no way to say "this
// parameter is a CUtensorMap of operand A with this box". The addition
// that would let a generic launcher do this job (proposed, not made):
//
//   struct TensorMapParam {
//     int param_index;      // which entry parameter (a 128-byte b8 array)
//     char operand;         // 'A', 'B' or 'C': whose device address
//     TensorMap2d map;      // extents, row stride, box, element type
//   };
//   std::vector<TensorMapParam> GeneratedKernel::tensor_maps;
//
// with KernelParam::type "tmap" for those parameters; the launcher encodes
// each map for the operand's address (EncodeTensorMap) and points the
// argument array at it. A second field,
//
//   std::string GeneratedKernel::target;  // "sm_90a": the ptxas -arch /
//                                         // JIT target the PTX needs
//
// would let generic ptxas checks assemble arch-specific PTX (gemm.wgmma's
// Generate("sm_90") returns `.target sm_90a` text, which ptxas
// -arch=sm_90 refuses).
#ifndef BLOCKTUNE_KERNELS_GEMM_WGMMA_LAUNCH_H_
#define BLOCKTUNE_KERNELS_GEMM_WGMMA_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_wgmma.h"

namespace blocktune {

// Device addresses and scalars of one C = alpha * op(A) * op(B) + beta * C;
// the leading dimensions are the problem's.
struct WgmmaOperands {
  uint64_t a = 0, b = 0, c = 0;
  float alpha = 1, beta = 0;
};

class LoadedWgmma {
 public:
  // Checks CanImplementWgmma against `limits`, generates the kernel and
  // loads it (driver JIT for sm_90a); raises the dynamic shared-memory
  // limit. Needs a current context on a compute capability 9.0 device.
  static StatusOr<std::unique_ptr<LoadedWgmma>> Create(
      const Problem& problem, const WgmmaParams& params,
      const KernelLimits& limits = {});

  const WgmmaKernel& kernel() const { return kernel_; }
  const cuda::Function& function() const { return function_; }
  // Encodes the tensor maps and enqueues the product on the default
  // stream. `programs` > 0 launches min(tiles, programs) programs that
  // walk the tiles grid-stride (a persistent grid: the producer loads the
  // next tile while the consumers store the last); 0 launches one program
  // per tile (WgmmaKernel::grid). INVALID_ARGUMENT where A or B is not
  // 16-byte aligned.
  Status Launch(const WgmmaOperands& ops, unsigned programs = 0) const;

 private:
  LoadedWgmma() = default;
  Problem problem_;
  WgmmaKernel kernel_;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function function_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_WGMMA_LAUNCH_H_
