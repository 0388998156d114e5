// A generated GEMM or convolution loaded into the current CUDA context, launched as one
// operation: the main kernel and, when K_G > 1, the reduction of its
// partial sums after it on the same stream.
#ifndef BLOCKTUNE_KERNELS_GEMM_LAUNCH_H_
#define BLOCKTUNE_KERNELS_GEMM_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_ptx.h"

namespace blocktune {

// Device addresses and scalars of one C = alpha * op(A) * op(B) + beta * C.
// For a convolution, a is the NHWC input, b the KRSC filter and c the NPQK
// output; the leading dimensions are implied and ignored.
struct GemmOperands {
  uint64_t a = 0, b = 0, c = 0;
  uint64_t workspace = 0;  // GemmKernel::workspace_bytes, when K_G > 1
  int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;
};

class LoadedGemm {
 public:
  // Generates k(x_B) for `ctx` and loads it; needs a current context.
  static StatusOr<std::unique_ptr<LoadedGemm>> Create(
      const Context& ctx, const BlockShape& xb,
      const std::string& arch = "sm_90");
  // Loads `kernel`, generated for `ctx`, from `image`: its PTX or a cubin
  // compiled from it (kernels/ptx_compiler.h).
  static StatusOr<std::unique_ptr<LoadedGemm>> Load(const Context& ctx,
                                                    GemmKernel kernel,
                                                    const std::string& image);

  const GemmKernel& kernel() const { return kernel_; }
  // Enqueues the GEMM or convolution for the shape it was created for.
  Status Launch(const GemmOperands& ops) const;

 private:
  LoadedGemm() = default;
  Context ctx_;
  GemmKernel kernel_;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function main_, reduce_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_LAUNCH_H_
