#include "kernels/gemm_wgmma_rs.h"

#include "kernels/gemm_wgmma_ptx.h"

namespace blocktune {

using wgmma_internal::Tiling;

namespace {

bool TfLayoutOk(const GemmContext& g) {
  return g.dtype == DType::kTf32 && g.layout_a == g.layout_b;
}

// The tiling of the kernel problem (always TT): A from registers, C
// transposed where the problem was swapped, which stores from the
// registers (no TMA-store boxes; the shared-memory rule still counts
// gemm.wgmma's buffers, so that it does not look at the problem).
Tiling RsTiling(const GemmContext& user, const WgmmaParams& p) {
  Tiling t(DType::kTf32, /*a_t=*/true, /*b_t=*/true, p);
  t.a_regs = true;
  t.c_transposed = WgmmaRsSwaps(user);
  if (t.c_transposed) t.tma_store = false;
  return t;
}

}  // namespace

const char* ToString(WgmmaRsRule rule) {
  switch (rule) {
    case WgmmaRsRule::kNone:
      return "none";
    case WgmmaRsRule::kComputeCapability:
      return "compute_capability";
    case WgmmaRsRule::kPrecisionLayout:
      return "precision_layout";
    case WgmmaRsRule::kSharedMemory:
      return "shared_memory";
    case WgmmaRsRule::kRegisters:
      return "registers";
    case WgmmaRsRule::kAlignment:
      return "alignment";
    case WgmmaRsRule::kGrid:
      return "grid";
    case WgmmaRsRule::kSplitHasWork:
      return "split_has_work";
    case WgmmaRsRule::kSwapSplit:
      return "swap_split";
    case WgmmaRsRule::kClusterBox:
      return "cluster_box";
  }
  return "?";
}

bool WgmmaRsSwaps(const GemmContext& g) {
  return g.layout_a == Layout::kN && g.layout_b == Layout::kN;
}

Problem WgmmaRsKernelProblem(const Problem& problem) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  if (!WgmmaRsSwaps(g)) return problem;
  const std::array<int64_t, 3> ld = LeadingDims(problem);
  GemmContext s = g;
  s.m = g.n;
  s.n = g.m;
  s.layout_a = Layout::kT;  // B^T: B (K x N, row-major) read M-major
  s.layout_b = Layout::kT;  // A^T: A (M x K, row-major) read K-major
  Problem out(s);
  out.lda = ld[1];
  out.ldb = ld[0];
  out.ldc = ld[2];
  return out;
}

int64_t WgmmaRsRegisterEstimate(const WgmmaParams& p) {
  return WgmmaRegisterEstimate(p) + 2 * (p.bk / 8) * p.MTiles() * 4 + 12;
}

bool PassesWgmmaRsRule(WgmmaRsRule rule, const Problem& problem,
                       const WgmmaParams& p, const KernelLimits& limits) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  switch (rule) {
    case WgmmaRsRule::kNone:
      return true;
    case WgmmaRsRule::kPrecisionLayout:
      return TfLayoutOk(g);
    case WgmmaRsRule::kComputeCapability:
      return PassesWgmmaTileRule(WgmmaRule::kComputeCapability, DType::kTf32,
                                 p, limits);
    case WgmmaRsRule::kSharedMemory:
      return PassesWgmmaTileRule(WgmmaRule::kSharedMemory, DType::kTf32, p,
                                 limits);
    case WgmmaRsRule::kRegisters:
      return WgmmaRsRegisterEstimate(p) <= WgmmaRegisterBudget(p) &&
             WgmmaRsRegisterEstimate(p) <= limits.max_registers_per_thread;
    // gemm.wgmma's rules. The swap of NN exchanges lda with ldb and M with
    // N and keeps K, so alignment and split_has_work read the problem as it
    // is; the grid is the kernel's (samplers call this: no copy elsewhere).
    case WgmmaRsRule::kAlignment:
      return PassesWgmmaRule(WgmmaRule::kAlignment, problem, p, limits);
    case WgmmaRsRule::kGrid:
      return PassesWgmmaRule(WgmmaRule::kGrid, WgmmaRsKernelProblem(problem),
                             p, limits);
    case WgmmaRsRule::kSplitHasWork:
      return PassesWgmmaRule(WgmmaRule::kSplitHasWork, problem, p, limits);
    case WgmmaRsRule::kSwapSplit:
      return p.kg == 1 || !WgmmaRsSwaps(g);
    case WgmmaRsRule::kClusterBox:
      return p.cluster_m == 1 || p.bk * 4 == 128;
  }
  return false;
}

WgmmaRsRule FirstFailingWgmmaRsRule(const Problem& problem,
                                    const WgmmaParams& p,
                                    const KernelLimits& limits) {
  for (WgmmaRsRule rule : kWgmmaRsRules)
    if (!PassesWgmmaRsRule(rule, problem, p, limits)) return rule;
  return WgmmaRsRule::kNone;
}

Status CanImplementWgmmaRs(const Problem& problem, const WgmmaParams& p,
                           const KernelLimits& limits) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  const WgmmaRsRule rule = FirstFailingWgmmaRsRule(problem, p, limits);
  const std::string name = ToString(rule);
  switch (rule) {
    case WgmmaRsRule::kNone:
      return OkStatus();
    case WgmmaRsRule::kPrecisionLayout:
      return FailedPrecondition(
          name + ": gemm.wgmma_rs computes tf32 with layouts NN or TT (one "
          "operand M/N-major, read into registers); got " +
          std::string(ToString(g.dtype)) + " " +
          std::string(ToString(g.layout_a)) +
          std::string(ToString(g.layout_b)) +
          " (NT: gemm.wgmma; TN and other precisions: gemm.mma)");
    case WgmmaRsRule::kRegisters:
      return FailedPrecondition(
          name + ": an estimated " + N(WgmmaRsRegisterEstimate(p)) +
          " registers per consumer thread (" + N(p.MTiles() * p.bn / 2) +
          " accumulators, " + N(2 * (p.bk / 8) * p.MTiles() * 4) +
          " A fragment registers) exceed the budget of " +
          N(WgmmaRegisterBudget(p)) + " with wg = " + N(p.consumers));
    case WgmmaRsRule::kSwapSplit:
      return FailedPrecondition(
          name + ": with layouts NN the kernel stores C transposed from its "
          "registers and has no split-K reduce for it, so kg must be 1; "
          "got kg " + N(p.kg));
    case WgmmaRsRule::kClusterBox:
      return FailedPrecondition(
          name + ": a cluster pair (cm = 2) multicasts B only as one TMA box "
          "per stage: bk * 4 must be 128; got bk " + N(p.bk));
    case WgmmaRsRule::kComputeCapability:
      return FailedPrecondition(
          name + ": gemm.wgmma_rs is sm_90a code (wgmma, setmaxnreg), which "
          "runs on compute capability 9.0 only; the device has " +
          N(limits.compute_capability / 10) + "." +
          N(limits.compute_capability % 10));
    case WgmmaRsRule::kSharedMemory:
      return FailedPrecondition(
          name + ": 1024 + st*(bm+bn)*bk*4 + wg*16384 (where bn*4 is a "
          "multiple of 128) + 16*st = " +
          N(WgmmaSharedBytes(DType::kTf32, p)) + " B exceeds " +
          N(limits.max_dynamic_shared_bytes) + " B");
    case WgmmaRsRule::kAlignment: {
      const std::array<int64_t, 3> ld = LeadingDims(problem);
      return FailedPrecondition(
          name + ": TMA needs 16-byte row strides, so lda, ldb and ldc must "
          "be multiples of 4 elements; got lda " + N(ld[0]) + ", ldb " +
          N(ld[1]) + ", ldc " + N(ld[2]));
    }
    case WgmmaRsRule::kGrid:
      return FailedPrecondition(
          name + ": the kernel's cm*ceil(M/(bm*cm))*ceil(N/bn)*kg exceeds "
          "2^31-1 (M and N exchanged for NN)");
    case WgmmaRsRule::kSplitHasWork:
      return FailedPrecondition(
          name + ": kg * bk = " + N(p.kg * p.bk) + " exceeds K = " + N(g.k) +
          ", so a split would have no k tile");
  }
  return Internal("unknown rule");
}

StatusOr<WgmmaKernel> GenerateGemmWgmmaRs(const Problem& problem,
                                          const WgmmaParams& p,
                                          const std::string& arch) {
  if (OpOf(problem.ctx) != Op::kGemm)
    return InvalidArgument("context: gemm.wgmma_rs computes gemm");
  BT_RETURN_IF_ERROR(Validate(problem.ctx));
  BT_RETURN_IF_ERROR(ValidateWgmmaParams(p));
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  if (g.dtype != DType::kTf32) {
    return InvalidArgument("context.dtype: gemm.wgmma_rs implements tf32, got " +
                           std::string(ToString(g.dtype)));
  }
  if (arch != "sm_90a") {
    return InvalidArgument("arch must be sm_90a (wgmma and setmaxnreg), got '" +
                           arch + "'");
  }
  // Rules that make the generated text itself wrong, whatever the device.
  for (WgmmaRsRule rule :
       {WgmmaRsRule::kPrecisionLayout, WgmmaRsRule::kSplitHasWork,
        WgmmaRsRule::kSwapSplit, WgmmaRsRule::kClusterBox}) {
    if (!PassesWgmmaRsRule(rule, problem, p, KernelLimits{}))
      return CanImplementWgmmaRs(problem, p, KernelLimits{});
  }
  const Problem kp = WgmmaRsKernelProblem(problem);
  WgmmaKernel k = wgmma_internal::AssembleGemmWgmma(kp, p, RsTiling(g, p),
                                                   arch);
  k.entry = "blocktune_gemm_wgmma_rs";
  k.swapped = WgmmaRsSwaps(g);
  // The kernel stores a transposed C from its registers and never reads
  // map_c; the launcher still encodes it, so it describes the real C.
  if (k.swapped) k.map_c = WgmmaTensorMap(problem, p, 'c');
  return k;
}

}  // namespace blocktune
