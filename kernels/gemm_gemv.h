// The generator of `gemm.gemv`: fp32 GEMMs with few columns (decode:
// N = 1 .. 8) on CUDA cores, as a streaming kernel that reads A once at
// memory bandwidth instead of tiling it through shared memory:
//   C = alpha * A * op(B) + beta * C
// with A M rows of K (layout N) and B N rows of K (layout T), or a single
// contiguous column (layout N with N == 1 and ldb == 1).
//
// One warp computes R rows of C, all N columns, W warps per program. Lane l
// reads V consecutive floats of each of its warp's rows (ld.global.nc,
// L1::no_allocate: A is streamed once) and of each column of B (through
// the read-only cache: every warp reads it), U such vectors per row in
// flight: the main loop walks chunks of 32*V*U elements of K; the rest of
// K is a predicated scalar tail. Each lane keeps R*N sums; at the end the
// warp adds them with shfl.sync.bfly and lane r*N + j writes C[row r][j].
// With K_G > 1 the reduction is split over K_G programs (grid z) whose
// partial sums go to a workspace that gemm.ffma's reduce entry adds
// (kernels/gemm_ptx.h AddSplitReduce).
//
// The PTX is specialised for the context's N (the sums live in registers);
// M, K and the leading dimensions are the entry's arguments.
#ifndef BLOCKTUNE_KERNELS_GEMM_GEMV_H_
#define BLOCKTUNE_KERNELS_GEMM_GEMV_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/gemm_ptx.h"
#include "kernels/limits.h"
#include "kernels/status.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change (family_golden_test).
inline constexpr int kGemmGemvGeneratorVersion = 1;
inline constexpr const char kGemmGemvFamily[] = "gemm.gemv";
// The most columns the kernel keeps sums for.
inline constexpr int64_t kGemvMaxColumns = 8;

struct GemvParams {
  int64_t rows = 1;    // R: rows of C per warp
  int64_t warps = 4;   // W: warps per program
  int64_t vec = 4;     // V: floats per lane per load
  int64_t unroll = 2;  // U: loads per row in flight (chunks of 32*V*U)
  int64_t kg = 1;      // K_G: programs splitting K

  int64_t Threads() const { return 32 * warps; }
  int64_t RowsPerProgram() const { return rows * warps; }
  int64_t Chunk() const { return 32 * vec * unroll; }
};

// The parameters' domains, in GemvParams order (R, W, V, U, KG).
const std::vector<int64_t>& GemvRowValues();
const std::vector<int64_t>& GemvWarpValues();
const std::vector<int64_t>& GemvVectorValues();
const std::vector<int64_t>& GemvUnrollValues();
const std::vector<int64_t>& GemvSplitValues();
// INVALID_ARGUMENT naming "<field>.<R|W|V|U|KG>" for a value outside its
// domain.
Status Validate(const GemvParams& p, std::string_view field = "params");

// The hardware rules, each named, in the order CanImplement tries them.
enum class GemvRule {
  kLayout,     // A N; B T, or B N with N == 1 and ldb == 1
  kColumns,    // 1 <= N <= 8
  kVectorLd,   // lda, and ldb where N > 1, multiples of V
  kRegisters,  // GemvRegisterEstimate <= registers per thread
};
inline constexpr GemvRule kGemvRules[] = {GemvRule::kLayout, GemvRule::kColumns,
                                          GemvRule::kVectorLd,
                                          GemvRule::kRegisters};
const char* ToString(GemvRule rule);

// Registers per thread: the R*U*V loaded elements of A, the N*U*V of B
// (ptxas hoists every load of a chunk), the R*N sums, the R + N pointers
// and the loop's own.
int64_t GemvRegisterEstimate(const GemvParams& p, int64_t n);

// Whether `rule` holds for `problem` (a fp32 GEMM that validates, its
// leading dimensions at least its rows') and `p` (valid). No allocation.
bool Passes(GemvRule rule, const Problem& problem, const GemvParams& p,
            const KernelLimits& limits);
// OK, or FAILED_PRECONDITION "<rule>: ..." naming the first rule that
// fails, the fields and the allowed values.
Status CanImplement(const Problem& problem, const GemvParams& p,
                    const KernelLimits& limits);

// The kernel for `problem` on `arch` ("sm_80", "sm_90"): entry
// "blocktune_gemv" with EntryParams(Op::kGemm)'s parameters (pN unread:
// the PTX is for the context's N), grid (ceil(M / (R*W)), 1, K_G), block
// 32*W; with K_G > 1 the reduce entry and workspace of AddSplitReduce.
// vector_a = V, vector_b = V where N > 1 (else 1): those leading
// dimensions must be multiples of them and the operands 4*V-byte aligned.
// Refuses (FAILED_PRECONDITION) what CanImplement on the H100's limits
// refuses.
StatusOr<GemmKernel> GenerateGemv(const Problem& problem, const GemvParams& p,
                                  const std::string& arch = "sm_90");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_GEMV_H_
