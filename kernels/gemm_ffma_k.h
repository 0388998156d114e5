// The generator of `gemm.ffma_k`: fp32 GEMMs on CUDA cores whose operands
// both run along K (layout NT: A M rows of K, B N rows of K), staged in
// shared memory K-major, as they lie in memory:
//   C = alpha * A * B^T + beta * C
//
// gemm.ffma puts each operand in shared memory M- or N-major, so an NT
// operand is transposed on its way in (a 16-byte load becomes four 4-byte
// stores or cp.async: its L1 pipe was the limit on the H100, issue 18's
// note), and gemm.gemv reads each lane's own slice of K, so every product
// needs two loads of its own. Here a warp's lanes are LM along M by
// LN = 32 / LM along N; lane (lm, ln) computes TM x TN outputs, rows
// lm + LM*i and columns ln + LN*j of its warp's tile (strided, so that the
// LM lanes of a load read LM consecutive rows). Per four elements of K a
// lane reads TM 16-byte vectors of A and TN of B from shared memory (the
// LN lanes that share a row of A, and the LM that share a row of B, read
// the same address: one broadcast) and does 4*TM*TN FMAs. Rows in shared
// memory are KC + 4 floats apart, so LM consecutive rows of a 16-byte read
// fall in distinct banks.
//
// A program of WM x WN x WK warps owns a (LM*TM*WM) x (LN*TN*WN) tile of
// C. K goes through shared memory KC at a time in a ring of ST stages
// filled by cp.async (16-byte copies, zero-filled past K; ST - 1 stages in
// flight). With WK > 1 the WM x WN warp tile is computed by WK groups of
// warps, group g reading elements [g*KC/WK, (g+1)*KC/WK) of every stage
// (a split of K inside the program: more warps per SM for a small tile
// without a larger workspace); at the end groups 1 .. WK-1 leave their
// sums in shared memory and group 0 adds them and writes C.
// With K_G > 1 the reduction is split over K_G programs (grid z) whose
// partial sums go to a workspace that gemm.ffma's reduce entry adds
// (kernels/gemm_ptx.h AddSplitReduce). With CL > 1 (sm_90: thread-block
// clusters) the CL consecutive splits of a cluster (1 x 1 x CL, fixed in
// the PTX) first add their sums through distributed shared memory: each
// leaves its tile in its own shared memory, and program r of the cluster
// adds slice r of the tile over the CL programs in rank order (a fixed
// order: the same bits every run), so the workspace holds K_G / CL partial
// sums, not K_G, and where K_G = CL the cluster writes C itself and there
// is no reduce entry. On sm_90 (v4) the reduce entry is a programmatic
// dependent launch: the main entry executes griddepcontrol.launch_dependents
// first thing, so the reduce programs are scheduled as soon as every main
// program has started, and they wait in griddepcontrol.wait until the main
// grid's sums are complete and visible (no launch gap between the two).
// The PTX depends on the parameters only; M, N, K and the leading
// dimensions are the entry's arguments.
#ifndef BLOCKTUNE_KERNELS_GEMM_FFMA_K_H_
#define BLOCKTUNE_KERNELS_GEMM_FFMA_K_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/gemm_mma.h"
#include "kernels/gemm_ptx.h"
#include "kernels/limits.h"
#include "kernels/status.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change (family_golden_test).
inline constexpr int kGemmFfmaKGeneratorVersion = 5;
inline constexpr const char kGemmFfmaKFamily[] = "gemm.ffma_k";

struct FfmaKParams {
  int64_t lanes_m = 8;  // LM: lanes of a warp along M (LN = 32 / LM)
  int64_t tm = 4;       // TM: rows of C per lane
  int64_t tn = 4;       // TN: columns of C per lane
  int64_t wm = 2;       // WM: warps per program along M
  int64_t wn = 2;       // WN: warps per program along N
  int64_t kc = 32;      // KC: elements of K per shared-memory stage
  int64_t stages = 3;   // ST: stages of the cp.async ring
  int64_t kg = 1;       // K_G: programs splitting K (v5: 3, 5, 6, 7 too)
  int64_t wk = 1;       // WK: groups of WM x WN warps splitting each stage
  int64_t cl = 1;       // CL: splits of K per cluster, added in DSMEM

  int64_t LanesN() const { return 32 / lanes_m; }
  // Threads of one group of WM x WN warps, and of the program.
  int64_t GroupThreads() const { return 32 * wm * wn; }
  int64_t Threads() const { return GroupThreads() * wk; }
  int64_t TileM() const { return lanes_m * tm * wm; }
  int64_t TileN() const { return LanesN() * tn * wn; }
  // Bytes of one row of a stage (KC floats and 4 of padding).
  int64_t RowBytes() const { return (kc + 4) * 4; }
  int64_t StageBytes() const { return (TileM() + TileN()) * RowBytes(); }
  int64_t RingBytes() const { return stages * StageBytes(); }
  // The ring, reused at the end for WK - 1 groups' sums (4 bytes each),
  // and with CL > 1 for the program's own (the cluster reads them).
  int64_t ReduceBytes() const {
    const int64_t groups = cl > 1 ? (wk > 1 ? wk - 1 : 1) : wk - 1;
    return groups * TileM() * TileN() * 4;
  }
  int64_t SharedBytes() const {
    return RingBytes() > ReduceBytes() ? RingBytes() : ReduceBytes();
  }
  // Partial sums in the workspace: K_G / CL; 1 means none (C is written
  // by the main entry).
  int64_t Partials() const { return kg / cl; }
};

// The parameters' domains, in FfmaKParams order (LM, TM, TN, WM, WN, KC,
// ST, KG, WK, CL; WK takes FfmaKWarpValues).
const std::vector<int64_t>& FfmaKLaneValues();
const std::vector<int64_t>& FfmaKThreadTileValues();
const std::vector<int64_t>& FfmaKWarpValues();
const std::vector<int64_t>& FfmaKStepValues();
const std::vector<int64_t>& FfmaKStageValues();
const std::vector<int64_t>& FfmaKSplitValues();
const std::vector<int64_t>& FfmaKClusterValues();
// INVALID_ARGUMENT naming "<field>.<LM|TM|TN|WM|WN|KC|ST|KG|WK|CL>" for a value
// outside its domain.
Status Validate(const FfmaKParams& p, std::string_view field = "params");

// The hardware rules, each named, in the order CanImplement tries them.
enum class FfmaKRule {
  kLayout,     // A N and B T: both operands' rows run along K
  kTile,       // the tile no more than twice M and N (TileM < 2M,
               // TileN < 2N): a wider one only repeats a narrower one
  kThreads,    // 32 * WM * WN * WK <= threads per block
  kKWarps,     // WK divides KC / 4: each group reads whole 16-byte vectors
  kVectorLd,   // lda and ldb multiples of 4 (16-byte copies)
  kShared,     // SharedBytes (the ring, or the WK - 1 groups' sums if
               // larger) <= the dynamic shared memory per block
  kRegisters,  // FfmaKRegisterEstimate <= registers per thread, and times
               // the program's threads < the SM's registers
  kCluster,    // CL = 1, or CL <= K_G on compute capability 9.0 or later
               // (thread-block clusters and distributed shared memory)
};
inline constexpr FfmaKRule kFfmaKRules[] = {
    FfmaKRule::kLayout,   FfmaKRule::kTile,   FfmaKRule::kThreads,
    FfmaKRule::kKWarps,   FfmaKRule::kVectorLd, FfmaKRule::kShared,
    FfmaKRule::kRegisters, FfmaKRule::kCluster};
const char* ToString(FfmaKRule rule);

// 16-byte copies per thread per stage of A and of B.
int64_t FfmaKCopiesA(const FfmaKParams& p);
int64_t FfmaKCopiesB(const FfmaKParams& p);
// Registers per thread: the TM*TN sums, two sets of fragments (4*(TM+TN)
// each: ptxas loads the next four elements' during this one's FMAs), the
// 64-bit copy pointers and the loop's own.
int64_t FfmaKRegisterEstimate(const FfmaKParams& p);

// Whether `rule` holds for `problem` (a fp32 GEMM that validates) and `p`
// (valid). No allocation.
bool Passes(FfmaKRule rule, const Problem& problem, const FfmaKParams& p,
            const KernelLimits& limits);
// OK, or FAILED_PRECONDITION "<rule>: ..." naming the first rule that
// fails, the fields and the allowed values.
Status CanImplement(const Problem& problem, const FfmaKParams& p,
                    const KernelLimits& limits);

// The kernel for `problem` on `arch` ("sm_80", "sm_90"): entry
// "blocktune_ffma_k" with EntryParams(Op::kGemm)'s parameters, grid
// (ceil(M / TileM), ceil(N / TileN), K_G), block 32*WM*WN*WK, dynamic shared
// memory SharedBytes (GemmKernel has no field for it: the family sets
// GeneratedKernel::dynamic_shared_bytes); with K_G / CL > 1 the reduce
// entry and workspace of AddSplitReduce for K_G / CL partial sums (that
// count fixed in its PTX). vector_a = vector_b = 4. Refuses
// (FAILED_PRECONDITION) what CanImplement on the H100's limits at `arch`'s
// compute capability refuses (CL > 1 below sm_90).
StatusOr<GemmKernel> GenerateFfmaK(const Problem& problem,
                                   const FfmaKParams& p,
                                   const std::string& arch = "sm_90");

// Packed operands (family gemm.ffma_kpk). gemm.ffma_k copies 16 bytes at a
// time, so it refuses an operand whose rows are not whole 16-byte units
// (lda or ldb not a multiple of 4: rule vector_ld), and gemm.ffma reads
// such rows in 4-byte pieces: fp32 777 x 333 x 1555 NT ran at 0.61x of
// cuBLASLt on the H200 (eval-v4). gemm.ffma_kpk first copies each such
// operand into the workspace with its rows padded to 4 floats (zeros past
// K; gemm.mma_pk's pack entry, 4-byte elements), then runs gemm.ffma_k's
// main entry on the copies, whose PTX differs from gemm.ffma_k's only in
// where it reads them (the workspace at a constant offset, a constant
// leading dimension). Aligned operands are read in place. The workspace
// holds gemm.ffma_k's partial sums first, then the packs.
inline constexpr int kGemmFfmaKPackedGeneratorVersion = 2;
inline constexpr const char kGemmFfmaKPackedFamily[] = "gemm.ffma_kpk";
// Whether some operand's rows are not whole 16-byte units.
bool NeedsFfmaKPacking(const Problem& problem);
// The packing with `p`: the operands NeedsFfmaKPacking names, as stored
// (NT: A M rows of K, B N rows of K).
MmaPacking PlanFfmaKPacking(const Problem& problem, const FfmaKParams& p);
// What the main entry reads: `problem` with the packed leading dimensions.
Problem PackedFfmaKProblem(const Problem& problem, const MmaPacking& pk);
// The layout rule and "unaligned_rows" on `problem`, then gemm.ffma_k's
// rules on the packed problem.
Status CanImplementFfmaKPacked(const Problem& problem, const FfmaKParams& p,
                               const KernelLimits& limits);
// The pack entry, then gemm.ffma_k's main entry reading the packs (and its
// reduce entry where K_G / CL > 1). The PTX is for this problem's M, N and
// K (the packs' sizes and offsets are constants in it).
StatusOr<GemmKernel> GenerateFfmaKPacked(const Problem& problem,
                                         const FfmaKParams& p,
                                         const std::string& arch = "sm_90");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_FFMA_K_H_
