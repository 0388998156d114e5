#include "kernels/gemm_mma_launch.h"

namespace blocktune {

StatusOr<std::unique_ptr<LoadedMma>> LoadedMma::Create(
    const MmaProblem& problem, const MmaParams& params,
    const std::string& arch) {
  BT_RETURN_IF_ERROR(ValidateMmaParams(params));
  BT_RETURN_IF_ERROR(CanImplementMma(problem, params));
  std::unique_ptr<LoadedMma> mma(new LoadedMma);
  mma->problem_ = problem;
  BT_ASSIGN_OR_RETURN(mma->kernel_, GenerateGemmMma(problem, params, arch));
  BT_ASSIGN_OR_RETURN(mma->module_, cuda::Module::Load(mma->kernel_.ptx));
  BT_ASSIGN_OR_RETURN(mma->main_,
                      mma->module_->GetFunction(mma->kernel_.entry));
  if (mma->kernel_.shared_bytes > 48 * 1024) {
    BT_RETURN_IF_ERROR(cuda::SetMaxDynamicShared(
        mma->main_, static_cast<int>(mma->kernel_.shared_bytes)));
  }
  BT_RETURN_IF_ERROR(cuda::PreferSharedCarveout(mma->main_, 100));
  if (!mma->kernel_.reduce_entry.empty()) {
    BT_ASSIGN_OR_RETURN(mma->reduce_,
                        mma->module_->GetFunction(mma->kernel_.reduce_entry));
  }
  return mma;
}

Status LoadedMma::Launch(const MmaOperands& ops) const {
  const MmaKernel& k = kernel_;
  if (ops.a % k.a_copy_bytes != 0 || ops.b % k.b_copy_bytes != 0) {
    return InvalidArgument(
        "gemm.mma copies " + std::to_string(k.a_copy_bytes) + "-byte pieces "
        "of A and " + std::to_string(k.b_copy_bytes) +
        "-byte pieces of B: their addresses must be so aligned");
  }
  if (k.workspace_bytes > 0 && ops.workspace == 0) {
    return InvalidArgument("K_G > 1 needs a workspace of " +
                           std::to_string(k.workspace_bytes) + " bytes");
  }
  const GemmContext& g = problem_.ctx;
  uint64_t a = ops.a, b = ops.b, c = ops.c, w = ops.workspace;
  uint32_t m = g.m, n = g.n, kk = g.k;
  uint32_t lda = problem_.Lda(), ldb = problem_.Ldb(), ldc = problem_.Ldc();
  uint32_t kg = k.grid[1];
  float alpha = ops.alpha, beta = ops.beta;
  BT_RETURN_IF_ERROR(cuda::Launch(
      main_, {k.grid[0], k.grid[1], k.grid[2]},
      {k.block[0], k.block[1], k.block[2]}, k.shared_bytes,
      {&a, &b, &c, &w, &m, &n, &kk, &lda, &ldb, &ldc, &alpha, &beta}));
  if (k.reduce_entry.empty()) return OkStatus();
  // A programmatic dependent launch: the reduce programs start while the
  // main grid drains and wait for it in griddepcontrol.wait (sm_90).
  return cuda::LaunchDependent(reduce_, {k.reduce_grid[0]},
                               {k.reduce_block[0]}, 0,
                               {&w, &c, &m, &n, &ldc, &kg, &alpha, &beta});
}

}  // namespace blocktune
