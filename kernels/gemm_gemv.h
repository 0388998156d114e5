// The generator of `gemm.gemv`: fp32 GEMMs with few columns (decode,
// N = 1 .. 16; skinny products such as a 64x64 covariance over a long K;
// N up to 128) on CUDA cores, as a streaming kernel that reads A's and B's
// rows along K with vector loads instead of tiling them through shared
// memory:
//   C = alpha * A * op(B) + beta * C
// with A M rows of K (layout N) and B N rows of K (layout T), or a single
// contiguous column (layout N with N == 1 and ldb == 1).
//
// One warp computes an R x c tile of C (R rows, c = min(NC, N) columns);
// a program holds W x WN warps, W along M and WN along N, so its tile is
// (R*W) x (c*WN) (grid x over M, y over N). Lane l reads V consecutive
// floats of each of its warp's rows of A and of B, U such vectors per row
// in flight: the main loop walks chunks of 32*V*U elements of K; with
// PF = 1 it loads the next chunk into a second register set while the FMAs
// of this one run (ncu, v2 on an H200: warps waiting on their loads with
// 0.6-1.3 eligible per scheduler, DRAM 20-34% busy). The rest of K is a
// predicated scalar tail. A is streamed past L1
// (L1::no_allocate) where WN == 1; with WN > 1 the WN warps of a program
// read the same rows of A, so it goes through L1 for them to share. B goes
// through the read-only cache. Each lane keeps R*c sums; at the end the
// warp adds them with shfl.sync.bfly and lane i mod 32 writes sum i
// (row i / c, column i mod c). Rows and columns past M and N are read
// clamped and not stored. With K_G > 1 the reduction is split over K_G
// programs (grid z) whose partial sums go to a workspace that gemm.ffma's
// reduce entry adds (kernels/gemm_ptx.h AddSplitReduce).
//
// The PTX is specialised for the context's N (c = min(NC, N)); M, N, K and
// the leading dimensions are the entry's arguments.
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
inline constexpr int kGemmGemvGeneratorVersion = 3;
inline constexpr const char kGemmGemvFamily[] = "gemm.gemv";
// The most columns (N) the family is offered for: past it each of the
// N / (c*WN) column programs reads all of A again, and gemm.ffma's tiles
// win.
inline constexpr int64_t kGemvMaxColumns = 128;

struct GemvParams {
  int64_t rows = 1;    // R: rows of C per warp
  int64_t cols = 8;    // NC: columns of C per warp (c = min(NC, N))
  int64_t warps = 4;   // W: warps per program along M
  int64_t warps_n = 1; // WN: warps per program along N
  int64_t vec = 4;     // V: floats per lane per load
  int64_t unroll = 2;  // U: loads per row in flight (chunks of 32*V*U)
  int64_t prefetch = 0;  // PF: 1 loads the next chunk during this one's FMAs
  int64_t kg = 1;      // K_G: programs splitting K

  int64_t Threads() const { return 32 * warps * warps_n; }
  int64_t RowsPerProgram() const { return rows * warps; }
  // The columns one warp computes for a GEMM of n columns.
  int64_t WarpCols(int64_t n) const { return cols < n ? cols : n; }
  int64_t ColsPerProgram(int64_t n) const { return WarpCols(n) * warps_n; }
  int64_t Chunk() const { return 32 * vec * unroll; }
};

// The parameters' domains, in GemvParams order (R, NC, W, WN, V, U, PF, KG).
const std::vector<int64_t>& GemvRowValues();
const std::vector<int64_t>& GemvColValues();
const std::vector<int64_t>& GemvWarpValues();
const std::vector<int64_t>& GemvWarpNValues();
const std::vector<int64_t>& GemvVectorValues();
const std::vector<int64_t>& GemvUnrollValues();
const std::vector<int64_t>& GemvPrefetchValues();
const std::vector<int64_t>& GemvSplitValues();
// INVALID_ARGUMENT naming "<field>.<R|NC|W|WN|V|U|PF|KG>" for a value
// outside its domain.
Status Validate(const GemvParams& p, std::string_view field = "params");

// The hardware rules, each named, in the order CanImplement tries them.
enum class GemvRule {
  kLayout,      // A N; B T, or B N with N == 1 and ldb == 1
  kColumns,     // 1 <= N <= kGemvMaxColumns
  kColumnTile,  // NC < 2N (no wider than N's power of two: c = min(NC, N)
                // would repeat a narrower NC) and (WN - 1) * c < N (every
                // warp along N has a column)
  kThreads,     // 32 * W * WN <= threads per block
  kVectorLd,    // lda, and ldb where N > 1, multiples of V
  kRegisters,   // GemvRegisterEstimate <= registers per thread, and times
                // the program's threads < the SM's registers
};
inline constexpr GemvRule kGemvRules[] = {
    GemvRule::kLayout,  GemvRule::kColumns,  GemvRule::kColumnTile,
    GemvRule::kThreads, GemvRule::kVectorLd, GemvRule::kRegisters};
const char* ToString(GemvRule rule);

// Registers per thread: the R*U*V loaded elements of A, the c*U*V of B
// (ptxas hoists every load of a chunk; twice that with PF = 1), the R*c
// sums, the R + c pointers and the loop's own (c = min(NC, n)).
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
// "blocktune_gemv" with EntryParams(Op::kGemm)'s parameters, grid
// (ceil(M / (R*W)), ceil(N / (c*WN)), K_G), block 32*W*WN; with K_G > 1
// the reduce entry and workspace of AddSplitReduce.
// vector_a = V, vector_b = V where N > 1 (else 1): those leading
// dimensions must be multiples of them and the operands 4*V-byte aligned.
// Refuses (FAILED_PRECONDITION) what CanImplement on the H100's limits
// refuses.
StatusOr<GemmKernel> GenerateGemv(const Problem& problem, const GemvParams& p,
                                  const std::string& arch = "sm_90");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_GEMV_H_
