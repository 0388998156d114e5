// A generated gemm.mma kernel loaded into the current CUDA context and
// launched as one operation: the main entry and, when K_G > 1, the
// reduction of its partial sums after it on the same stream.
#ifndef BLOCKTUNE_KERNELS_GEMM_MMA_LAUNCH_H_
#define BLOCKTUNE_KERNELS_GEMM_MMA_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_mma.h"

namespace blocktune {

// Device addresses and scalars of one C = alpha * op(A) * op(B) + beta * C;
// the leading dimensions are the problem's.
struct MmaOperands {
  uint64_t a = 0, b = 0, c = 0;
  uint64_t workspace = 0;  // MmaKernel::workspace_bytes, when K_G > 1
  float alpha = 1, beta = 0;
};

class LoadedMma {
 public:
  // Generates the kernel for `problem` and loads it (driver JIT); raises
  // the dynamic shared-memory limit past 48 KiB where the kernel needs it.
  // Needs a current context.
  static StatusOr<std::unique_ptr<LoadedMma>> Create(
      const MmaProblem& problem, const MmaParams& params,
      const std::string& arch = "sm_90");

  const MmaKernel& kernel() const { return kernel_; }
  const cuda::Function& main_function() const { return main_; }
  // Enqueues the product (with K_G > 1 and split_reduce 0, the reduce
  // entry as a programmatic dependent launch). INVALID_ARGUMENT where A or
  // B is not aligned to the kernel's copy width (MmaKernel::a_copy_bytes,
  // b_copy_bytes).
  Status Launch(const MmaOperands& ops) const;

 private:
  LoadedMma() = default;
  MmaProblem problem_;
  MmaKernel kernel_;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function main_, reduce_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_MMA_LAUNCH_H_
