#include "kernels/gemm_launch.h"

namespace blocktune {

StatusOr<std::unique_ptr<LoadedGemm>> LoadedGemm::Create(
    const Context& ctx, const BlockShape& xb, const std::string& arch) {
  BT_ASSIGN_OR_RETURN(GemmKernel kernel, GenerateKernel(ctx, xb, arch));
  const std::string ptx = kernel.ptx;
  return Load(ctx, std::move(kernel), ptx);
}

StatusOr<std::unique_ptr<LoadedGemm>> LoadedGemm::Load(
    const Context& ctx, GemmKernel kernel, const std::string& image) {
  std::unique_ptr<LoadedGemm> gemm(new LoadedGemm);
  gemm->ctx_ = ctx;
  gemm->kernel_ = std::move(kernel);
  BT_ASSIGN_OR_RETURN(gemm->module_, cuda::Module::Load(image));
  BT_ASSIGN_OR_RETURN(gemm->main_,
                      gemm->module_->GetFunction(gemm->kernel_.entry));
  BT_RETURN_IF_ERROR(cuda::PreferSharedCarveout(gemm->main_, 100));
  if (!gemm->kernel_.reduce_entry.empty()) {
    BT_ASSIGN_OR_RETURN(gemm->reduce_,
                        gemm->module_->GetFunction(gemm->kernel_.reduce_entry));
  }
  return gemm;
}

namespace {

Status CheckVectorOperand(const char* name, uint64_t address, int64_t ld,
                          int64_t vector) {
  if (vector == 1) return OkStatus();
  if (address % (4 * vector) != 0 || ld % vector != 0) {
    return InvalidArgument(
        std::string(name) + ": this kernel reads it in vectors of " +
        std::to_string(vector) + " floats, so its address must be " +
        std::to_string(4 * vector) + "-byte aligned and its leading " +
        "dimension a multiple of " + std::to_string(vector) + "; got ld " +
        std::to_string(ld));
  }
  return OkStatus();
}

}  // namespace

Status LoadedGemm::Launch(const GemmOperands& ops) const {
  const GemmKernel& k = kernel_;
  if (std::holds_alternative<GemmContext>(ctx_)) {
    BT_RETURN_IF_ERROR(CheckVectorOperand("a", ops.a, ops.lda, k.vector_a));
    BT_RETURN_IF_ERROR(CheckVectorOperand("b", ops.b, ops.ldb, k.vector_b));
  } else {
    BT_RETURN_IF_ERROR(CheckVectorOperand("filter", ops.b,
                                          ImplicitGemm(ctx_).k, k.vector_b));
  }
  const GemmShape g = ImplicitGemm(ctx_);
  uint64_t a = ops.a, b = ops.b, c = ops.c, w = ops.workspace;
  uint32_t m = g.m, n = g.n, kk = g.k;
  uint32_t lda = ops.lda, ldb = ops.ldb, ldc = ops.ldc;
  uint32_t kg = k.grid[2];
  float alpha = ops.alpha, beta = ops.beta;
  std::vector<void*> args = {&a,   &b,   &c,   &w,     &m,    &n,
                             &kk,  &lda, &ldb, &ldc, &alpha, &beta};
  // Convolution shape: H, W, C, P, Q, S, pad, stride, dilation.
  uint32_t conv[12] = {};
  if (const auto* cv = std::get_if<ConvContext>(&ctx_)) {
    lda = cv->c;
    ldb = g.k;
    ldc = g.n;
    const int64_t values[12] = {cv->h,        cv->w,        cv->c,
                                cv->P(),      cv->Q(),      cv->s,
                                cv->pad_h,    cv->pad_w,    cv->stride_h,
                                cv->stride_w, cv->dilation_h, cv->dilation_w};
    for (int i = 0; i < 12; ++i) {
      conv[i] = static_cast<uint32_t>(values[i]);
      args.push_back(&conv[i]);
    }
  }
  BT_RETURN_IF_ERROR(cuda::Launch(main_, {k.grid[0], k.grid[1], k.grid[2]},
                                  {k.block[0], k.block[1], k.block[2]}, 0,
                                  args));
  if (k.reduce_entry.empty()) return OkStatus();
  return cuda::Launch(reduce_, {k.reduce_grid[0]}, {k.reduce_block[0]}, 0,
                      {&w, &c, &m, &n, &ldc, &kg, &alpha, &beta});
}

}  // namespace blocktune
