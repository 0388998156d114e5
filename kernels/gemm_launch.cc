#include "kernels/gemm_launch.h"

namespace blocktune {

StatusOr<std::unique_ptr<LoadedGemm>> LoadedGemm::Create(
    const GemmContext& ctx, const BlockShape& xb, const std::string& arch) {
  std::unique_ptr<LoadedGemm> gemm(new LoadedGemm);
  gemm->ctx_ = ctx;
  BT_ASSIGN_OR_RETURN(gemm->kernel_, GenerateGemm(ctx, xb, arch));
  BT_ASSIGN_OR_RETURN(gemm->module_, cuda::Module::Load(gemm->kernel_.ptx));
  BT_ASSIGN_OR_RETURN(gemm->main_,
                      gemm->module_->GetFunction(gemm->kernel_.entry));
  if (!gemm->kernel_.reduce_entry.empty()) {
    BT_ASSIGN_OR_RETURN(gemm->reduce_,
                        gemm->module_->GetFunction(gemm->kernel_.reduce_entry));
  }
  return gemm;
}

Status LoadedGemm::Launch(const GemmOperands& ops) const {
  const GemmKernel& k = kernel_;
  uint64_t a = ops.a, b = ops.b, c = ops.c, w = ops.workspace;
  uint32_t m = ctx_.m, n = ctx_.n, kk = ctx_.k;
  uint32_t lda = ops.lda, ldb = ops.ldb, ldc = ops.ldc;
  uint32_t kg = k.grid[2];
  float alpha = ops.alpha, beta = ops.beta;
  BT_RETURN_IF_ERROR(cuda::Launch(
      main_, {k.grid[0], k.grid[1], k.grid[2]},
      {k.block[0], k.block[1], k.block[2]}, 0,
      {&a, &b, &c, &w, &m, &n, &kk, &lda, &ldb, &ldc, &alpha, &beta}));
  if (k.reduce_entry.empty()) return OkStatus();
  return cuda::Launch(reduce_, {k.reduce_grid[0]}, {k.reduce_block[0]}, 0,
                      {&w, &c, &m, &n, &ldc, &kg, &alpha, &beta});
}

}  // namespace blocktune
