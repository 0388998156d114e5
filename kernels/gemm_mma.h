// The tensor-core GEMM family `gemm.mma` (issue 17, first step): PTX text
// for
//   C = alpha * op(A) * op(B) + beta * C
// with mma.sync on bf16, fp16 (m16n8k16, fp32 accumulate, output in the
// input type) and tf32 (m16n8k8, fp32 in and out, inputs rounded to the
// nearest tf32: ties to even with sm_90's one-instruction cvt.rn, ties away
// with cvt.rna on sm_80, which has no cvt.rn). Layouts as in gemm_ptx.h: A is
// M x K row-major (T: stored K x M), B is K x N row-major (T: stored N x K).
//
// The algorithm, one program per BM x BN block of C (M_L x N_L of the
// thesis), warps_m x warps_n warps, each warp a (BM/warps_m) x
// (BN/warps_n) tile of m16n8 accumulators:
//   1. operands go global -> shared in 16-byte chunks into a ring of
//      `stages` buffers of BK (U) steps of K (cp.async.cg; narrower pieces
//      where the leading dimension asks for them, see Alignment); copies
//      past M, N or K are zero-filled through cp.async's src-size operand
//      (or predicated loads);
//   2. each shared row of 16-byte chunks is XOR-swizzled (chunk ^ f(row))
//      so that the 8 rows one ldmatrix phase reads fall in 8 different
//      bank groups;
//   3. fragments come from shared memory with ldmatrix (.trans where the
//      operand is contiguous along M or N); tf32 operands contiguous along
//      M or N are read with ld.shared.b32 (ldmatrix.trans moves 16-bit
//      elements only). The loop is software-pipelined: two fragment
//      buffers, so that k step s+1's loads (across a stage boundary too)
//      overlap step s's mma's; an interior program (its tile inside M x N,
//      both operands in 16-byte chunks) copies its full BK stages without
//      bounds arithmetic;
//   4. the epilogue applies alpha and beta in fp32 and writes the output
//      type, predicated on M and N. With K_G > 1 the K range is split over
//      K_G programs (grid y) and their fp32 partial sums are added in a
//      fixed order (deterministic: the same bits every run), either by a
//      second entry (split_reduce 0, launched as a programmatic dependent
//      launch on sm_90 so that it is resident when the main grid drains)
//      or inside the main kernel by a tree (split_reduce 1, see MmaParams).
// Programs walk the tiles of C in a grouped raster order: group_m rows of
// tiles at a time, column by column, so consecutive programs share panels
// of A and B in L2.
//
// Alignment (generator v2): the copy width of each operand follows from its
// leading dimension, not from a parameter: 16-byte cp.async.cg where every
// row starts 16-byte aligned (lda, ldb multiples of 8 elements for bf16 and
// fp16, 4 for tf32); otherwise 8- or 4-byte cp.async.ca pieces of each
// chunk (ld * element bytes a multiple of 8 or 4); otherwise (bf16/fp16 and
// odd ld) 2-byte ld.global.nc loads into registers, issued before the
// step's math and stored to shared memory after it. Any lda, ldb >= the
// minimum is computed; the base addresses of A and B must be aligned to
// the copy width (MmaKernel::a_copy_bytes; LoadedMma::Launch checks).
// M, N and K are free (any value >= 1).
#ifndef BLOCKTUNE_KERNELS_GEMM_MMA_H_
#define BLOCKTUNE_KERNELS_GEMM_MMA_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/context.h"
#include "kernels/status.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change (3: the split-K/narrow-copy v2
// of branch mma-split and the pipelined-loop v2 of mma-square together).
inline constexpr int kGemmMmaGeneratorVersion = 3;
inline constexpr char kGemmMmaFamily[] = "gemm.mma";
// gemm.mma on packed operands (GenerateGemmMmaPacked); its own version.
inline constexpr int kGemmMmaPackedGeneratorVersion = 1;
inline constexpr char kGemmMmaPackedFamily[] = "gemm.mma_pk";

// The math and storage of one product. kBf16/kFp16: that type in and out,
// fp32 accumulation. kTf32: fp32 in and out, tensor-core math on inputs
// rounded to tf32 (round to nearest, ties away from zero).
enum class MmaPrecision { kBf16, kFp16, kTf32 };
std::string_view ToString(MmaPrecision p);
StatusOr<MmaPrecision> MmaPrecisionFromString(std::string_view text);
// Bytes per element of A, B and C.
int ElementBytes(MmaPrecision p);
// The context dtype that goes with a precision (tf32 is fp32 storage).
DType StorageType(MmaPrecision p);

// One problem: the context, the precision, and leading dimensions (0 means
// tight: A N -> K, A T -> M, B N -> N, B T -> K, C -> N).
struct MmaProblem {
  GemmContext ctx;
  MmaPrecision precision = MmaPrecision::kBf16;
  int64_t lda = 0, ldb = 0, ldc = 0;

  int64_t Lda() const;
  int64_t Ldb() const;
  int64_t Ldc() const;
};

// The family's parameters. Domains (MmaParamDomains): bm 16..256, bn
// 8..256, bk 16..256, warps 1..8 per axis (at most 16 warps), stages 2..5,
// kg 1..4096, group_m 1..16, sk (split_reduce) 0..1. Thesis names: bm = M_L, bn
// = N_L, bk = U, kg = K_G; the per-thread tile M_S x N_S is implied by the warp
// tile.
struct MmaParams {
  int64_t bm = 128;
  int64_t bn = 128;
  int64_t bk = 32;
  int64_t warps_m = 2;
  int64_t warps_n = 4;
  int64_t stages = 3;
  int64_t kg = 1;
  int64_t group_m = 8;
  // How the K_G partial sums are added (K_G > 1), both in a fixed order
  // (deterministic):
  //   0 = a second kernel (reduce_entry) adds W[0..K_G-1] per output;
  //   1 = a tree inside the main kernel (generator v2; v1's 1 was one level
  //       of it): the tile's K_G programs form groups of 8 consecutive z;
  //       each stores its partial, fences and counts in on its group's
  //       counter; the last to arrive adds the group's 8 partials in z
  //       order and represents the group one level up, until one program
  //       writes C. ceil(log8 K_G) levels; the counters are zeroed by the
  //       program that completes them, so every launch leaves them zero.
  int64_t split_reduce = 0;

  int64_t WarpTileM() const { return bm / warps_m; }
  int64_t WarpTileN() const { return bn / warps_n; }
  int64_t Threads() const { return 32 * warps_m * warps_n; }
  auto Tie() const {
    return std::tie(bm, bn, bk, warps_m, warps_n, stages, kg, group_m,
                    split_reduce);
  }
  friend bool operator==(const MmaParams& a, const MmaParams& b) {
    return a.Tie() == b.Tie();
  }
};

// "bm=128 bn=128 bk=32 wm=2 wn=4 st=3 kg=1 gm=8 sk=0"
std::string ToString(const MmaParams& p);
// Parses ToString's format; missing keys keep their defaults.
StatusOr<MmaParams> MmaParamsFromString(std::string_view text);

struct MmaParamDomain {
  const char* name;
  std::vector<int64_t> values;
};
// Named integer parameters with their domains (for a later family
// registry and for samplers).
std::vector<MmaParamDomain> MmaParamDomains();

// INVALID_ARGUMENT naming the parameter and its range; checks the warp
// tiling (warp tile a multiple of 16 x 8).
Status ValidateMmaParams(const MmaParams& p);

// What a device offers; defaults are the H100's (227 KiB opt-in shared
// memory per block; sm_80 offers 163 KiB).
struct MmaLimits {
  int max_threads_per_block = 1024;
  int max_dynamic_shared_bytes = 227 * 1024;
  int max_registers_per_thread = 255;
  int registers_per_sm = 65536;
  int compute_capability = 90;  // major * 10 + minor
};

enum class MmaRule {
  kNone,
  kThreads,       // 32 * warps_m * warps_n <= threads per block
  kSharedMemory,  // stages * (A stage + B stage) <= opt-in shared memory
  kRegisters,     // estimate per thread <= 255, and per program <= per SM
  kAlignment,     // not produced since generator v2 (narrow copies);
                  // kept so stored rule names still parse
  kGrid,          // tiles <= 2^31 - 1, K_G <= 65535
};
// The rules in force (kAlignment has not been produced since v2).
inline constexpr MmaRule kMmaRules[] = {MmaRule::kThreads,
                                        MmaRule::kSharedMemory,
                                        MmaRule::kRegisters, MmaRule::kGrid};
const char* ToString(MmaRule rule);

int64_t MmaSharedBytes(MmaPrecision precision, const MmaParams& p);
// The fp32 partial sums when K_G > 1 (split_reduce 0: K_G * M * N; 1: K_G
// whole tiles per tile), and the workspace: the partials, then the
// split_reduce 1 tree's arrival counters (MmaKernel::workspace_bytes,
// counter_offset).
int64_t MmaPartialBytes(const MmaProblem& problem, const MmaParams& p);
int64_t MmaWorkspaceBytes(const MmaProblem& problem, const MmaParams& p);
// Accumulators, fragments, copy bookkeeping and addressing per thread;
// calibrated with ptxas in gemm_mma_test.
// `compute_capability` 80..89 adds tf32's three-instruction cvt.rna
// rounding (sm_90 rounds in one instruction).
int64_t MmaRegisterEstimate(const MmaProblem& problem, const MmaParams& p,
                            int compute_capability = 90);

// The threads, shared-memory and register rules gemm.mma and conv.mma
// share: whether each holds, and the FAILED_PRECONDITION saying why not.
// `registers`: the family's estimate per thread.
bool FitsThreads(const MmaParams& p, const MmaLimits& limits);
bool FitsSharedMemory(MmaPrecision precision, const MmaParams& p,
                      const MmaLimits& limits);
bool FitsRegisters(int64_t registers, const MmaParams& p,
                   const MmaLimits& limits);
Status ThreadsFailure(const MmaParams& p, const MmaLimits& limits);
Status SharedMemoryFailure(MmaPrecision precision, const MmaParams& p,
                           const MmaLimits& limits);
Status RegistersFailure(int64_t registers, const MmaLimits& limits);

// Whether one rule holds, with no allocation (samplers call it).
bool PassesMmaRule(MmaRule rule, const MmaProblem& problem, const MmaParams& p,
                   const MmaLimits& limits);
// The first rule, in kMmaRules order, that fails; kNone if all hold.
MmaRule FirstFailingMmaRule(const MmaProblem& problem, const MmaParams& p,
                            const MmaLimits& limits);
// OK if the kernel of `p` computes `problem` on a device with `limits`;
// FAILED_PRECONDITION naming the rule and the numbers otherwise. `p` must
// validate (ValidateMmaParams) and the context must validate.
Status CanImplementMma(const MmaProblem& problem, const MmaParams& p,
                       const MmaLimits& limits = {});

struct MmaKernel {
  std::string ptx;
  std::string entry = "blocktune_gemm_mma";
  // Present when K_G > 1: adds the partial sums and applies alpha, beta.
  std::string reduce_entry;
  bool reduce_dependent = false;  // GeneratedKernel::reduce_dependent
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  unsigned shared_bytes = 0;  // dynamic; above 48 KiB needs the opt-in
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  // K_G > 1: split_reduce 0: K_G * M * N floats; split_reduce 1: tiles *
  // K_G * BM * BN floats, then tiles * (K_G + 8) 32-bit counters at
  // counter_offset, which must be zero before the first launch (every
  // launch leaves them zero again).
  int64_t workspace_bytes = 0;
  int64_t counter_offset = 0;  // bytes from the workspace to the counters
  // Bytes per copy of A and B (16, 8, 4 or 2), from the problem's lda and
  // ldb: the base addresses must be aligned to them, and the PTX is
  // correct for leading dimensions that keep every row so aligned.
  int a_copy_bytes = 16, b_copy_bytes = 16;
  // min(a_copy_bytes, b_copy_bytes) in elements.
  int64_t align_elements = 8;
  int element_bytes = 2;
  // GenerateGemmMmaPacked: launched before `entry` on the same stream with
  // entry's arguments; copies the packed operands into the workspace.
  std::string pack_entry;
  std::array<unsigned, 3> pack_grid{};
  std::array<unsigned, 3> pack_block{};
};

// Parameters of `entry`, as GenerateGemm's (gemm_ptx.h):
//   .u64 A, B, C, W (workspace; 0 when K_G == 1),
//   .u32 M, N, K, lda, ldb, ldc, .f32 alpha, beta.
// `reduce_entry`: .u64 W, C, .u32 M, N, ldc, K_G, .f32 alpha, beta.
// The launch geometry is for the M, N, K of the problem; the PTX itself is
// correct for any M, N, K and leading dimensions with the problem's copy
// widths (a_copy_bytes, b_copy_bytes). `arch` "sm_80" or later.
StatusOr<MmaKernel> GenerateGemmMma(const MmaProblem& problem,
                                    const MmaParams& p,
                                    const std::string& arch = "sm_90");

// Packed operands (family gemm.mma_pk). gemm.mma copies an operand whose
// rows are not 16-byte aligned in 8-, 4- or 2-byte pieces (see Alignment
// above), up to 3x slower than 16-byte chunks: on the H100 its best bf16
// kernel for 777 x 333 x 1555 NT ran at 0.73x of cuBLASLt. The packed
// kernel first copies each such operand, in its own layout, into the
// workspace with its rows padded to 16 bytes (a pack entry, launched before
// the main one), and the main kernel reads it from there in 16-byte
// chunks. Aligned operands are read in place.
struct MmaPacking {
  bool a = false, b = false;  // which operands are packed
  int64_t rows_a = 0, cols_a = 0, rows_b = 0, cols_b = 0;  // as stored
  int64_t lda = 0, ldb = 0;   // the packed rows, elements (multiples of 16 B)
  int64_t a_offset = 0, b_offset = 0;  // bytes from the workspace
  int64_t workspace_bytes = 0;  // gemm.mma's (split-K) first, then the packs
};
// Whether an operand of `problem` has rows that are not 16-byte aligned.
bool NeedsMmaPacking(const MmaProblem& problem);
// The packing of `problem` with `p`: the operands NeedsMmaPacking names.
MmaPacking PlanMmaPacking(const MmaProblem& problem, const MmaParams& p);
// Places the packs of `pk` (which, rows and leading dimensions set) in the
// workspace after its first `before` bytes (the split-K partials), each at
// a 256-byte boundary: the offsets and workspace_bytes (gemm.mma_pk's and
// gemm.ffma_kpk's layout).
void PlaceMmaPacks(int64_t before, int64_t element_bytes, MmaPacking* pk);
// What the main kernel reads: the problem with the packed operands'
// leading dimensions.
MmaProblem PackedMmaProblem(const MmaProblem& problem, const MmaPacking& pk);
// gemm.mma's rules on the packed problem, and FAILED_PRECONDITION where no
// operand needs packing (gemm.mma reads them in place).
Status CanImplementMmaPacked(const MmaProblem& problem, const MmaParams& p,
                             const MmaLimits& limits = {});
// The main entry is gemm.mma's for PackedMmaProblem, reading the packed
// operands from the workspace; `pack_entry` takes the same parameters.
// Unlike gemm.mma's, the PTX is for this problem's M, N and K only (the
// packs' sizes and offsets are constants in it). The workspace is needed
// (workspace_bytes > 0); A and B may have any leading dimension, and the
// operands read in place must keep their rows' 16-byte alignment.
StatusOr<MmaKernel> GenerateGemmMmaPacked(const MmaProblem& problem,
                                          const MmaParams& p,
                                          const std::string& arch = "sm_90");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_MMA_H_
