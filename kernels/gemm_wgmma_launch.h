// A generated gemm.wgmma kernel loaded into the current CUDA context and
// launched: the tensor maps of A, B and C are encoded for the operands'
// device addresses at each launch (cheap host work) and passed by value.
//
// The tuner's generic launcher (tuner/kernel_launch.h LoadedKernel) runs
// gemm.wgmma from GeneratedKernel::tensor_maps and ::target with the same
// EncodeTensorMap; this one stays for the kernel tests, which need no
// tuner and add the persistent-grid launch (`programs`).
#ifndef BLOCKTUNE_KERNELS_GEMM_WGMMA_LAUNCH_H_
#define BLOCKTUNE_KERNELS_GEMM_WGMMA_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_wgmma.h"
#include "kernels/gemm_wgmma_rs.h"

namespace blocktune {

// Device addresses and scalars of one C = alpha * op(A) * op(B) + beta * C;
// the leading dimensions are the problem's.
struct WgmmaOperands {
  uint64_t a = 0, b = 0, c = 0;
  float alpha = 1, beta = 0;
  // kg > 1: WgmmaKernel::workspace_bytes of device memory.
  uint64_t workspace = 0;
};

class LoadedWgmma {
 public:
  // Checks CanImplementWgmma against `limits`, generates the kernel and
  // loads it (driver JIT for sm_90a); raises the dynamic shared-memory
  // limit. Needs a current context on a compute capability 9.0 device.
  static StatusOr<std::unique_ptr<LoadedWgmma>> Create(
      const Problem& problem, const WgmmaParams& params,
      const KernelLimits& limits = {});

 private:
  static StatusOr<std::unique_ptr<LoadedWgmma>> Load(const Problem& problem,
                                                     WgmmaKernel kernel);

 public:

  // The same for gemm.wgmma_rs (gemm_wgmma_rs.h): tf32 NN and TT.
  static StatusOr<std::unique_ptr<LoadedWgmma>> CreateRs(
      const Problem& problem, const WgmmaParams& params,
      const KernelLimits& limits = {});

  const WgmmaKernel& kernel() const { return kernel_; }
  const cuda::Function& function() const { return function_; }
  // Encodes the tensor maps and enqueues the product on the default
  // stream. `programs` > 0 launches min(tiles, programs) programs that
  // walk the tiles grid-stride (a persistent grid: the producer loads the
  // next tile while the consumers store the last); 0 launches one program
  // per tile (WgmmaKernel::grid). INVALID_ARGUMENT where A, B or C is not
  // 16-byte aligned.
  Status Launch(const WgmmaOperands& ops, unsigned programs = 0) const;

 private:
  LoadedWgmma() = default;
  Problem problem_;
  WgmmaKernel kernel_;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function function_;
  cuda::Function reduce_;  // kg > 1
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_WGMMA_LAUNCH_H_
