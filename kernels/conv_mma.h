// The tensor-core convolution family `conv.mma` (issue 18): the implicit
// GEMM of thesis §4.1.2 on gemm.mma's pipeline (gemm_mma.h: the cp.async
// ring, the swizzle, ldmatrix fragments, mma.sync, the epilogue and the
// K_G reduction are the same emitters), for
//   Y = alpha * conv(X, F) + beta * Y
// with X the NHWC input, F the KRSC filter and Y the NPQK output, in bf16,
// fp16 (fp32 accumulation) and tf32 (fp32 storage), pad, stride and
// dilation in both dimensions, any N, C, K, R, S.
//
// The implicit GEMM: M = N*P*Q output pixels (rows of Y), N = K output
// channels, and the reduction over (r, s, c). Its order is filter position
// outer, channels inner, in steps of BK channels: stage j of a program is
// filter position (r, s) = divmod(j / CB, S) and channels [c0, c0 + BK),
// c0 = BK * (j % CB), CB = ceil(C / BK). So every stage reads one filter
// tap: a row of A (an output pixel) is BK consecutive channels of one
// input pixel, and a row of B (an output channel) BK consecutive channels
// of one filter tap. Both are contiguous along the reduction, as gemm.mma's
// A N and B T operands: 16-byte chunks along the channels, XOR-swizzled,
// read with ldmatrix. The gather is in the copies' addresses alone:
//   - each copy's row keeps its pixel's (h0, w0) = (p*stride - pad,
//     q*stride - pad) and the address of its input pixel (n, h0, w0);
//   - per stage the filter tap (r, s) gives one offset for all rows,
//     ((r*dil_h)*W + s*dil_w)*C + c0, and the row is in the image where
//     h0 + r*dil_h and w0 + s*dil_w are;
//   - outside the image (padding), past C in the last channel step, past
//     M or N, and past the program's stages, cp.async's src-size is 0: the
//     chunk is zero-filled.
// The copy width follows from C (as gemm.mma's from its leading
// dimensions): 16-byte chunks where C is a multiple of 8 (bf16, fp16) or 4
// (tf32), else 8-, 4- or 2-byte pieces of each chunk, so any C is computed
// (C = 3, the stem, with 2-byte copies: 3 of each 16 channels of a step are
// real, which costs time, not correctness).
//
// A split over the reduction (kg > 1): the stages are shared out over kg
// programs (grid y), their fp32 partial sums go to a workspace and
// gemm.mma's reduce entry adds them in a fixed order (deterministic).
#ifndef BLOCKTUNE_KERNELS_CONV_MMA_H_
#define BLOCKTUNE_KERNELS_CONV_MMA_H_

#include <array>
#include <cstdint>
#include <string>

#include "kernels/context.h"
#include "kernels/gemm_mma.h"
#include "kernels/status.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change.
inline constexpr int kConvMmaGeneratorVersion = 1;
inline constexpr char kConvMmaFamily[] = "conv.mma";

// One problem: the convolution (its dtype is the storage type: bf16, fp16,
// or fp32 for tf32) and the precision.
struct ConvMmaProblem {
  ConvContext ctx;
  MmaPrecision precision = MmaPrecision::kBf16;
};

// The rules of conv.mma, in the order they are tried. gemm.mma's, and:
//   kGather: both operands' chunk columns are the same for all copies of
//     a thread (32*wm*wn a multiple of the chunks per row, bk / (16 bytes
//     of elements)), which the gather's per-row bookkeeping needs;
//   kAddressing: an image and the implicit GEMM's M and K fit the
//     kernel's 32-bit offsets (as conv.ffma's).
enum class ConvMmaRule {
  kNone,
  kThreads,
  kSharedMemory,
  kRegisters,
  kGather,
  kGrid,
  kAddressing,
};
inline constexpr ConvMmaRule kConvMmaRules[] = {
    ConvMmaRule::kThreads, ConvMmaRule::kSharedMemory,
    ConvMmaRule::kRegisters, ConvMmaRule::kGather, ConvMmaRule::kGrid,
    ConvMmaRule::kAddressing};
const char* ToString(ConvMmaRule rule);

// The copy width of both operands in bytes (16, 8, 4 or 2), from C.
int ConvMmaCopyBytes(const ConvMmaProblem& problem);
// Stages of the whole reduction: R * S * ceil(C / bk).
int64_t ConvMmaStages(const ConvContext& ctx, int64_t bk);
int64_t ConvMmaRegisterEstimate(const ConvMmaProblem& problem,
                                const MmaParams& p, int compute_capability);
// K_G * M * N floats where kg > 1.
int64_t ConvMmaWorkspaceBytes(const ConvMmaProblem& problem,
                              const MmaParams& p);

bool PassesConvMmaRule(ConvMmaRule rule, const ConvMmaProblem& problem,
                       const MmaParams& p, const MmaLimits& limits);
// OK, or FAILED_PRECONDITION naming the first failing rule and its
// numbers. `p` must validate (ValidateMmaParams, split_reduce 0).
Status CanImplementConvMma(const ConvMmaProblem& problem, const MmaParams& p,
                           const MmaLimits& limits = {});

// The kernel: entry "blocktune_conv_mma" with conv.ffma's parameters
// (gemm_ptx.h EntryParams(Op::kConv)); with kg > 1 also gemm.mma's reduce
// entry (ReduceParams). The PTX is correct for any convolution whose C
// keeps the copy width (copy_bytes); the geometry is for the problem's.
struct ConvMmaKernel {
  std::string ptx;
  std::string entry = "blocktune_conv_mma";
  std::string reduce_entry;
  bool reduce_dependent = false;  // GeneratedKernel::reduce_dependent
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  unsigned shared_bytes = 0;
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  int64_t workspace_bytes = 0;
  // The input's and the filter's base addresses must be aligned to it.
  int copy_bytes = 16;
  int element_bytes = 2;
};

// `arch` "sm_80" or later. INVALID_ARGUMENT for split_reduce 1 (conv.mma
// adds partial sums with the reduce entry only).
StatusOr<ConvMmaKernel> GenerateConvMma(const ConvMmaProblem& problem,
                                        const MmaParams& p,
                                        const std::string& arch = "sm_90");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_CONV_MMA_H_
