// The Hopper GEMM family `gemm.wgmma_rs`: tf32 GEMMs whose A or B is
// stored M/N-contiguous, on gemm.wgmma's kernel with A read from registers.
//
// Why a second family. wgmma reads a tf32 operand from shared memory only
// K-major (it has no transpose for 32-bit types), so gemm.wgmma refuses
// tf32 with A T or B N (rule precision_layout), and tf32 NN - a product of
// two row-major matrices, the most common call - fell to gemm.mma, at 0.42-
// 0.50x cuBLASLt on squares 2048-8192 (issue 20's tf32 evaluation). wgmma's
// A may come from registers instead, in any layout the threads load, so:
//   TT: the kernel computes C = A B with A (M-major) loaded from shared
//       memory into registers and B K-major from shared memory;
//   NN: the kernel computes C^T = B^T A^T, a TT product (B^T is M-major,
//       A^T K-major), and stores its result transposed into C.
// TN (both operands M/N-major) stays with gemm.mma; NT is gemm.wgmma's.
// It is a family of its own, not gemm.wgmma v5, because gemm.wgmma's PTX is
// unchanged and its measurements (bf16, fp16, tf32 NT, on two GPU models)
// stay valid: a version bump would have made them stale for no change.
//
// The kernel (gemm_wgmma_ptx.cc, Tiling::a_regs and ::c_transposed):
// gemm.wgmma's producer, ring, mbarriers, rasters, clusters and split-K;
// the consumers wait for a stage, load their A fragments (m64 x k8 per
// wgmma, four 32-bit registers per thread) from the swizzled M-major
// panels with ld.shared, round them to tf32 (cvt.rna: B is truncated by
// the tensor core, as in gemm.wgmma), and issue wgmma with A from
// registers and B by descriptor. Two register banks alternate between k
// tiles, so a bank is rewritten only after the group that read it retired.
// With C transposed the epilogue stores from the registers (a thread's
// pair of columns is two rows of C; each warp store writes whole 32-byte
// sectors); otherwise it is gemm.wgmma's (TMA store where beta == 0).
//
// Parameters: gemm.wgmma's (WgmmaParams), in the kernel's frame: for NN,
// bm tiles C's columns (N) and bn its rows (M), and the cluster pair runs
// along N. Shape() reports the tile in the problem's frame.
#ifndef BLOCKTUNE_KERNELS_GEMM_WGMMA_RS_H_
#define BLOCKTUNE_KERNELS_GEMM_WGMMA_RS_H_

#include "kernels/gemm_wgmma.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change, and whenever the binary that
// campaigns measure for the same PTX changes.
//
// v2: the PTX is v1's; bumped with gemm.wgmma v5 for the same reason
// (kGemmWgmmaGeneratorVersion): v1's two-consumer measurements were compiled
// without setmaxnreg.
inline constexpr int kGemmWgmmaRsGeneratorVersion = 2;
inline constexpr char kGemmWgmmaRsFamily[] = "gemm.wgmma_rs";

enum class WgmmaRsRule {
  kNone,
  kComputeCapability,  // exactly 9.0
  kPrecisionLayout,    // tf32, layouts NN or TT
  kSharedMemory,       // gemm.wgmma's formula
  kRegisters,          // accumulators + two banks of A fragments
  kAlignment,          // lda, ldb, ldc multiples of 4 elements (TMA)
  kGrid,               // units <= 2^31 - 1
  kSplitHasWork,       // kg == 1 or kg * bk <= K
  kSwapSplit,          // NN (C stored transposed): kg == 1
  kClusterBox,         // cm = 2: bk * 4 = 128 (B one TMA box per stage)
};
inline constexpr WgmmaRsRule kWgmmaRsRules[] = {
    WgmmaRsRule::kComputeCapability, WgmmaRsRule::kPrecisionLayout,
    WgmmaRsRule::kSharedMemory,      WgmmaRsRule::kRegisters,
    WgmmaRsRule::kAlignment,         WgmmaRsRule::kGrid,
    WgmmaRsRule::kSplitHasWork,      WgmmaRsRule::kSwapSplit,
    WgmmaRsRule::kClusterBox};
const char* ToString(WgmmaRsRule rule);

// Whether the kernel computes the swapped product (layouts NN).
bool WgmmaRsSwaps(const GemmContext& g);
// The TT problem the kernel computes: the problem itself (TT) or, for NN,
// C^T = B^T A^T (M and N exchanged, A and B exchanged with their leading
// dimensions, both layouts T). Needs a tf32 NN or TT problem.
Problem WgmmaRsKernelProblem(const Problem& problem);
// Per consumer thread: the accumulators, two banks of A fragments
// (bk / 8 k steps * m tiles * 4 registers each) and addressing.
int64_t WgmmaRsRegisterEstimate(const WgmmaParams& p);

bool PassesWgmmaRsRule(WgmmaRsRule rule, const Problem& problem,
                       const WgmmaParams& p, const KernelLimits& limits);
WgmmaRsRule FirstFailingWgmmaRsRule(const Problem& problem,
                                    const WgmmaParams& p,
                                    const KernelLimits& limits);
// OK, or FAILED_PRECONDITION naming the rule and the numbers.
Status CanImplementWgmmaRs(const Problem& problem, const WgmmaParams& p,
                           const KernelLimits& limits = {});

// The kernel (entry "blocktune_gemm_wgmma_rs", gemm.wgmma's parameter list,
// `swapped` set for NN: tensor map 0 is then B's, map 1 A's, and the M and
// N parameters take N and M).
StatusOr<WgmmaKernel> GenerateGemmWgmmaRs(const Problem& problem,
                                          const WgmmaParams& p,
                                          const std::string& arch = "sm_90a");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_WGMMA_RS_H_
