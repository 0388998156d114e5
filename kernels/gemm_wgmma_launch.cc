#include "kernels/gemm_wgmma_launch.h"

namespace blocktune {

StatusOr<std::unique_ptr<LoadedWgmma>> LoadedWgmma::Create(
    const Problem& problem, const WgmmaParams& params,
    const KernelLimits& limits) {
  BT_RETURN_IF_ERROR(ValidateWgmmaParams(params));
  BT_RETURN_IF_ERROR(CanImplementWgmma(problem, params, limits));
  BT_ASSIGN_OR_RETURN(WgmmaKernel k, GenerateGemmWgmma(problem, params));
  return Load(problem, std::move(k));
}

StatusOr<std::unique_ptr<LoadedWgmma>> LoadedWgmma::CreateRs(
    const Problem& problem, const WgmmaParams& params,
    const KernelLimits& limits) {
  BT_RETURN_IF_ERROR(ValidateWgmmaParams(params));
  BT_RETURN_IF_ERROR(CanImplementWgmmaRs(problem, params, limits));
  BT_ASSIGN_OR_RETURN(WgmmaKernel k, GenerateGemmWgmmaRs(problem, params));
  return Load(problem, std::move(k));
}

StatusOr<std::unique_ptr<LoadedWgmma>> LoadedWgmma::Load(const Problem& problem,
                                                         WgmmaKernel kernel) {
  std::unique_ptr<LoadedWgmma> w(new LoadedWgmma);
  w->problem_ = problem;
  w->kernel_ = std::move(kernel);
  BT_ASSIGN_OR_RETURN(w->module_, cuda::Module::Load(w->kernel_.ptx));
  BT_ASSIGN_OR_RETURN(w->function_,
                      w->module_->GetFunction(w->kernel_.entry));
  BT_RETURN_IF_ERROR(cuda::SetMaxDynamicShared(
      w->function_, static_cast<int>(w->kernel_.shared_bytes)));
  BT_RETURN_IF_ERROR(cuda::PreferSharedCarveout(w->function_, 100));
  if (!w->kernel_.reduce_entry.empty()) {
    BT_ASSIGN_OR_RETURN(w->reduce_,
                        w->module_->GetFunction(w->kernel_.reduce_entry));
  }
  return w;
}

Status LoadedWgmma::Launch(const WgmmaOperands& ops,
                           unsigned programs) const {
  const WgmmaKernel& k = kernel_;
  if (ops.a % 16 != 0 || ops.b % 16 != 0 || ops.c % 16 != 0) {
    return InvalidArgument(
        "gemm.wgmma reads A and B and stores C through TMA: all three must "
        "be 16-byte aligned");
  }
  // A swapped kernel (gemm.wgmma_rs, NN) computes C^T = B^T A^T: its A is
  // B, its B is A, its M and N are N and M.
  BT_ASSIGN_OR_RETURN(EncodedTensorMap map_a,
                      EncodeTensorMap(k.map_a, k.swapped ? ops.b : ops.a));
  BT_ASSIGN_OR_RETURN(EncodedTensorMap map_b,
                      EncodeTensorMap(k.map_b, k.swapped ? ops.a : ops.b));
  BT_ASSIGN_OR_RETURN(EncodedTensorMap map_c, EncodeTensorMap(k.map_c, ops.c));
  const GemmContext& g = std::get<GemmContext>(problem_.ctx);
  uint64_t c = ops.c;
  uint32_t m = static_cast<uint32_t>(k.swapped ? g.n : g.m),
           n = static_cast<uint32_t>(k.swapped ? g.m : g.n),
           kk = static_cast<uint32_t>(g.k);
  uint32_t ldc = static_cast<uint32_t>(LeadingDims(problem_)[2]);
  float alpha = ops.alpha, beta = ops.beta;
  // Fewer programs than units walk them grid-stride; cluster pairs launch
  // whole.
  const unsigned grid = programs > 0
                            ? ClampedPrograms(k.grid[0], programs, k.cluster[0])
                            : k.grid[0];
  uint64_t w = ops.workspace;
  if (k.workspace_bytes > 0 && w == 0) {
    return InvalidArgument("gemm.wgmma with kg > 1 needs a workspace of " +
                           std::to_string(k.workspace_bytes) + " bytes");
  }
  BT_RETURN_IF_ERROR(cuda::Launch(
      function_, {grid, k.grid[1], k.grid[2]},
      {k.block[0], k.block[1], k.block[2]}, k.shared_bytes,
      {map_a.bytes, map_b.bytes, &c, &m, &n, &kk, &ldc, &alpha, &beta, &w,
       map_c.bytes}));
  if (k.reduce_entry.empty()) return OkStatus();
  // workspace_bytes = kg * M * N * 4.
  uint32_t kg = static_cast<uint32_t>(k.workspace_bytes / (4 * int64_t{m} * n));
  return cuda::Launch(reduce_, {k.reduce_grid[0], 1, 1},
                      {k.reduce_block[0], 1, 1}, 0,
                      {&w, &c, &m, &n, &ldc, &kg, &alpha, &beta});
}

}  // namespace blocktune
