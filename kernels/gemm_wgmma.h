// The Hopper GEMM family `gemm.wgmma` (issue 23, first step): PTX text for
//   C = alpha * op(A) * op(B) + beta * C
// with wgmma.mma_async on bf16, fp16 (m64nNk16, fp32 accumulate, output in
// the input type, alpha and beta in fp32) and tf32 (m64nNk8, fp32 in and
// out). Layouts as in gemm_ptx.h: A is M x K row-major (T: stored K x M), B
// is K x N row-major (T: stored N x K). Target sm_90a only: wgmma and
// setmaxnreg exist on no other architecture, and sm_90a code runs on
// compute capability 9.0 alone.
//
// The algorithm, one program per bm x bn block of C (M_L x N_L of the
// thesis), warp-specialized:
//   1. warpgroup 0 is the producer: one thread issues TMA copies
//      (cp.async.bulk.tensor.2d, tensor maps built on the host and passed
//      as __grid_constant__ parameters) of A and B tiles of bk (U) steps of
//      K into a ring of `stages` shared buffers. Each buffer has a "full"
//      mbarrier (completed by the copies' byte count) and an "empty"
//      mbarrier (one arrival per consumer warp). Copies past M, N or K are
//      zero-filled by the copy engine itself.
//   2. warpgroups 1..consumers are consumers: each owns bm / consumers rows
//      of the block as (bm / consumers) / 64 wgmma m64 tiles by bn
//      columns, issues wgmma.mma_async with both operands read from shared
//      memory through matrix descriptors, keeps one wgmma group in flight
//      (wait_group 1) and releases a buffer once the group that read it
//      has completed.
//   3. shared tiles use the 128-byte swizzle: each TMA box has an inner
//      extent of exactly 128 bytes (64 bf16/fp16, 32 tf32 elements) and
//      lands 1024-byte aligned, which is the layout the descriptor's
//      128-byte swizzle mode reads. K-contiguous operands (A N, B T) are
//      "K-major" to wgmma; M/N-contiguous operands (A T, B N) are M/N-major
//      and use wgmma's transpose bit (bf16 and fp16 only: wgmma has no
//      transpose for tf32, so rule precision_layout refuses tf32 with A T
//      or B N).
//   4. the epilogue applies alpha (and beta) in fp32. Where beta == 0 and
//      N * element bytes is a multiple of 16 (v4) each consumer warpgroup converts its rows to the output type into a
//      pair of 64-row x 128-byte shared buffers (128-byte swizzle, the TMA
//      layout) and one thread stores each buffer with a TMA tensor store
//      (cp.async.bulk.tensor ... global.shared::cta, the copy engine
//      clipping rows past M and columns past N); the buffers alternate, so
//      the threads fill one while the engine drains the other, and the
//      store of a tile's last chunks runs on while the consumers start the
//      next tile. Elsewhere the threads store the output straight from the
//      accumulator registers, predicated on M and N, reading C only where
//      beta != 0. (The copy engine writes whole 16-byte units of a row: on
//      the H100 a tensor store with N = 1..7 bf16 columns wrote columns
//      N .. 7 too, so a C that is a view into a wider matrix would be
//      overwritten past N.)
// With two consumer warpgroups the producer gives registers away
// (setmaxnreg.dec to 40) and the consumers take them (setmaxnreg.inc to
// 232), under a 168-register cap at entry (.maxntid 384, .minnctapersm 1).
// Split-K (kg = K_G > 1): the work units are tiles * kg, unit u being
// tile u % tiles and split z = u / tiles; split z runs k tiles
// [z * ktiles / kg, (z + 1) * ktiles / kg) (non-empty by rule
// split_has_work: kg * bk <= K), and its epilogue stores the fp32
// accumulators unscaled to W[z][row][col] (row-major M x N). The reduce
// entry (gemm.mma's blocktune_gemm_mma_reduce, launched after the main one
// on the same stream) adds the kg partial sums of each output in a fixed
// order, so every run gives the same bits, then applies alpha and beta.
// Programs walk the work units grid-stride (tile = program, + programs, ...)
// in a grouped raster (group_m rows of tiles at a time, as gemm.mma): with
// one program per tile (WgmmaKernel::grid) each takes one; with fewer (a
// persistent grid, LoadedWgmma::Launch's `programs`) the ring runs on
// across tiles, so the producer loads the next tile while the consumers
// store the last.
//
// tf32: wgmma reads the fp32 operands TMA copied and ignores their low 13
// mantissa bits (truncation), where gemm.mma and cuBLAS's TF32 mode round
// to nearest; the error bound grows by a factor of about two (see
// gemm_wgmma_gpu_test.cc). Rounding would need a pass over shared memory
// or a register-A variant.
//
// Thread-block cluster pairs (v2, cm = 2): the programs of two vertically
// adjacent tiles of C form a cluster (.reqnctapercluster 2, so a plain
// launch forms it; the grid holds whole pairs) and share the B tile: each
// producer loads half of every B box (rows %cluster_ctarank * box/2 on)
// and multicasts it to both programs (cp.async.bulk.tensor ...
// .multicast::cluster, ctaMask 0b11), so each program reads A + B/2 from
// L2 per stage instead of A + B. Each full mbarrier still expects the
// whole stage's bytes (its own A, both halves of B); each empty mbarrier
// counts the consumer warps of both programs (a consumer warp arrives on
// its own and, through mapa, on the partner's), because either producer's
// multicast overwrites that buffer in both. Both programs walk the same
// sequence of pairs; a program whose tile lies past M computes zeros
// (TMA's out-of-bounds fill) and stores nothing, but still loads its half
// of B. A cluster barrier after the mbarrier init and before exit keeps
// either program from touching the other's shared memory before it is
// initialized or after it has exited.
//
// Rule cluster_box: a pair multicasts B only where B is a single TMA box per
// stage (K-major B with bk * element bytes = 128, N-major B with bn *
// element bytes = 128). On the H100 the first v2 kernels with two or more
// B boxes per stage computed the second box's columns wrong in the
// pair's second program (N-major B, bn 128 and 256: gemm_wgmma_gpu_test,
// 2026-11-23), a cause not found yet; one box per stage passed.
// gemm.wgmma_sc's clusters (no multicast) showed it again on 2026-12-05:
// with N-major B and bn = 128 the columns of the second box were wrong in
// every split, with either split's share of K alone
// (bench/results/h100/gemm_sc/README.md), while K-major B, in one box or
// two (bk = 128), and N-major B with bn = 64 passed; the same PTX without
// the cluster (gemm.wgmma's split through W) passes. The cause, found the
// same day: with a wgmma per B box (WgmmaParams::b_per_box) the pair and
// the cluster split of N-major B in two boxes computed right (NN and TN,
// bf16, 1000^3), so a cluster launch breaks one wgmma's read across the
// boxes, not the copies. The rule takes b_per_box kernels; gemm.wgmma_sc
// (v3) emits them, gemm.wgmma (whose new version would make its
// measurements stale) keeps its pairs' N-major B to one box.
//
// Split-K (kg > 1, v3): the grid walks tiles x kg work units; split z of a
// tile runs k tiles [z*ktiles/kg, (z+1)*ktiles/kg) and stores its raw fp32
// sums to W[z] (M x N, row-major); gemm.mma's reduce entry then adds the kg
// partial sums in a fixed order (deterministic) and applies alpha and beta.
// With cluster pairs both programs take the same units.
//
// Status: v1 passed its GPU tests on an H100 (bench/results/h100/
// gemm_wgmma_first_run.txt) and was benchmarked against cuBLASLt
// (tc_bench_wgmma_v1.txt: 0.87x at 4096^3 bf16); v2 (cluster pairs)
// passed them too (tc_bench_wgmma_v2_release_fix.txt). v3 merges split-K.
// v4 (the TMA-store epilogue) passed them on an H100 and runs square
// 2048-8192 at 0.96-1.01x cuBLASLt in bf16, fp16 and tf32
// (bench/results/h100/wgmma_v4/).
//
// The TMA-store epilogue (v4): bench/results/h100/ncu/wgmma_v3_profile
// found the register-direct epilogue (two-element stores, 16 bytes per row
// per warp instruction) took a quarter of the consumers' samples at 2048^3,
// where cuBLASLt's kernel of the same tile ran 17% faster.
//
// The persistent grid is a family of its own, gemm.wgmma_ps (and
// conv.wgmma_ps): the same PTX, launched with as many programs as the
// device holds at once (GeneratedKernel::persistent: the program count
// needs the SM count and the driver's occupancy, which Generate does not
// see, so the launcher counts them). A parameter of gemm.wgmma would have
// bumped its version and made every gemm.wgmma measurement stale for a
// launch change alone (the persistent probe, bench/results/h100/
// conv_wgmma_v1/persistent_probe.txt: 0-3% on GEMMs, up to 30% on
// convolutions with few reduction steps).
//
// Alignment: TMA needs the global row strides of A, B and C to be multiples
// of 16 bytes (lda, ldb, ldc multiples of 8 bf16/fp16 or 4 tf32 elements;
// rule alignment) and the base addresses 16-byte aligned (the launchers
// refuse others). M, N, K are free (any value >= 1).
#ifndef BLOCKTUNE_KERNELS_GEMM_WGMMA_H_
#define BLOCKTUNE_KERNELS_GEMM_WGMMA_H_

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/family.h"
#include "kernels/limits.h"
#include "kernels/status.h"
#include "kernels/tensor_map.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change, and whenever the binary that
// campaigns measure for the same PTX changes (the version is what makes
// old measurements stale).
//
// v5: the PTX is v4's (only the version in its header line differs). Every
// v4 measurement of a kernel with two consumer warpgroups (wg = 2, which
// uses setmaxnreg) was compiled by nvJitLink, which compiles a separate unit
// and drops setmaxnreg (C7504), so the wgmma were serialized (C7512) and
// registers spilled: campaigns timed a slower binary than the one a user
// loads. PtxCompiler now sends such PTX to ptxas as a whole program (or to
// the driver's JIT); v5 makes the old measurements stale, and a
// retune-stale campaign measures them again.
inline constexpr int kGemmWgmmaGeneratorVersion = 5;
inline constexpr char kGemmWgmmaFamily[] = "gemm.wgmma";
// gemm.wgmma on packed operands (GenerateGemmWgmmaPacked); its own version.
inline constexpr int kGemmWgmmaPackedGeneratorVersion = 1;
inline constexpr char kGemmWgmmaPackedFamily[] = "gemm.wgmma_pk";
// gemm.wgmma's kernel launched as a persistent grid (family_wgmma.cc
// WgmmaPersistentFamily): its PTX is gemm.wgmma's, byte for byte (so a
// gemm.wgmma bump changes it and the golden test asks for this one's too);
// its own version, because what it measures is another launch.
inline constexpr int kGemmWgmmaPersistentGeneratorVersion = 1;
inline constexpr char kGemmWgmmaPersistentFamily[] = "gemm.wgmma_ps";
// gemm.wgmma_ps with the tail split (parameter tl = 2..4, below): its own
// family rather than a gemm.wgmma_ps parameter, whose version bump would
// have made gemm.wgmma_ps's measurements stale for kernels that did not
// change (tl = 1 is gemm.wgmma_ps's kernel, byte for byte).
inline constexpr int kGemmWgmmaTailGeneratorVersion = 1;
inline constexpr char kGemmWgmmaTailFamily[] = "gemm.wgmma_ts";
// gemm.wgmma with each tile's K split over the kg = 2..8 programs of one
// thread-block cluster (WgmmaParams::split_cluster), conv.wgmma_sc's split
// on a GEMM: the splits z > 0 add their fp32 sums into the first program's
// shared memory, which stores the tile. One launch, no workspace, no reduce
// entry, for products of fewer tiles than SMs (1000^3 bf16: 64 tiles of
// 128 x 128 on 132 SMs). Its own family, so gemm.wgmma's data stays valid
// (gemm.wgmma's kg > 1 keeps the workspace and reduce entry). One cluster
// per tile (the grid is tiles x kg programs): the first program's slots
// take one tile's sums, and a cluster walking several tiles
// (LoadedWgmma::Launch with fewer programs) could overwrite them before
// they were added.
// v2 (2026-12-05): rule cluster_box holds N-major B to one TMA box per stage
// (bn = 64 in 16-bit types). v1's first H100 run computed the second box's
// columns wrong with N-major B and bn >= 128 (NN and TN); v1 has no
// measurements. Each emitted kernel is byte for byte v1's.
// v3 (2026-12-05): an N-major B of several TMA boxes per stage gets a
// wgmma of N = a box's columns per box (WgmmaParams::b_per_box), and rule
// cluster_box takes it: gemm_wgmma_gpu_test's ClusterBoxWithAWgmmaPerBox
// passed on an H100 (bench/results/h100/gemm_sc/v3/), so a cluster launch
// breaks one wgmma's read across B boxes, not the copies. v2 has no
// measurements either.
inline constexpr int kGemmWgmmaClusterSplitGeneratorVersion = 3;
inline constexpr char kGemmWgmmaClusterSplitFamily[] = "gemm.wgmma_sc";

// The family's parameters. Thesis names: bm = M_L, bn = N_L, bk = U,
// kg = K_G (v2: split-K into a workspace plus a reduce entry).
struct WgmmaParams {
  int64_t bm = 128;        // rows of C per program: 64 * consumers * m tiles
  int64_t bn = 128;        // columns of C per program: the wgmma N
  int64_t bk = 64;         // K per pipeline stage
  int64_t stages = 4;      // shared-memory ring buffers
  int64_t consumers = 1;   // consumer warpgroups (1 or 2)
  int64_t group_m = 8;     // rows of tiles per raster group
  int64_t kg = 1;          // programs splitting K (K_G)
  // Programs per thread-block cluster along M (v2): 2 pairs the programs
  // of two vertically adjacent tiles of C, which share the B tile: each
  // loads half of every B box and multicasts it to both.
  int64_t cluster_m = 1;
  // gemm.wgmma_ts only: the most splits over K of each tile of the
  // persistent grid's last, partly empty round (the tail split below); 1:
  // none. gemm.wgmma and the other families take 1 alone.
  int64_t tail = 1;
  // conv.wgmma_sc and gemm.wgmma_sc only (conv_wgmma.h, above): the kg
  // splits of a tile form one thread-block cluster and add their partial
  // sums in distributed shared memory instead of a workspace and a reduce
  // entry. Not a parameter of
  // its own: the family sets it; the rules (shared memory) and the PTX
  // read it.
  bool split_cluster = false;
  // gemm.wgmma_sc (v3) sets it; gemm.wgmma does not (its cluster pairs
  // would need a new version, which would make its measurements stale):
  // with N-major B in more than one TMA box per stage, one wgmma of
  // N = a box's columns per box, on that box's accumulators, instead of one
  // wgmma of N = bn across the boxes (whose second box reads through the
  // descriptor's leading byte offset). With it, rule cluster_box lets an
  // N-major B have several boxes in a cluster (cm = 2, cluster split): on
  // an H100 the clusters computed right with it and wrong without it
  // (ClusterBoxWithAWgmmaPerBox, 2026-12-05).
  bool b_per_box = false;
  // Experimental, no family sets it: the cluster barrier after the
  // mbarrier init (cluster pairs, the cluster split) arrives relaxed
  // (barrier.cluster.arrive.relaxed; the init's own
  // fence.mbarrier_init.release.cluster orders it) instead of with release
  // semantics, which ptxas emits as MEMBAR.ALL.GPU, ERRBAR and CCTL.IVALL
  // at every program's start (bench/results/h100/gemm_sc/v3/). For
  // gemm_wgmma_gpu_test's timing of the cluster variants; a family would
  // take it with a new version.
  bool relaxed_start = false;

  int64_t Threads() const { return 128 * (1 + consumers); }
  int64_t RowsPerConsumer() const { return bm / consumers; }
  int64_t MTiles() const { return RowsPerConsumer() / 64; }  // per consumer
  auto Tie() const {
    return std::tie(bm, bn, bk, stages, consumers, group_m, kg, cluster_m,
                    tail, split_cluster, b_per_box, relaxed_start);
  }
  friend bool operator==(const WgmmaParams& a, const WgmmaParams& b) {
    return a.Tie() == b.Tie();
  }
};

// "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=1 cm=1" (and " tl=N" where
// tail > 1)
std::string ToString(const WgmmaParams& p);

struct WgmmaParamDomain {
  const char* name;
  std::vector<int64_t> values;
  const char* meaning;
  bool power_of_two;
};
// In WgmmaParams field order: bm, bn, bk, st, wg, gm, kg, cm, tl (the last
// gemm.wgmma_ts's alone).
const std::vector<WgmmaParamDomain>& WgmmaParamDomains();
inline constexpr int kGemmWgmmaParamCount = 8;
inline constexpr int kGemmWgmmaTailParamCount = 9;

// The tail split (gemm.wgmma_ts, tail > 1). A persistent grid of P
// programs over T tiles runs R = T / P whole rounds and then L = T - R * P
// tiles on L programs while P - L idle: 2048x11008x4096 bf16 in 128x256
// tiles is 688 tiles on 132 SMs, 5.2 rounds that take 6 (0.92x cuBLASLt,
// bench/results/h100/eval, 2026-11-28). With tail > 1 the kernel splits
// each of the L tiles over K into S = min(tail, P / L, ktiles, slots / L +
// 1) units, so the last round runs S * L <= P units of ktiles / S k tiles
// each. Work units: 0 .. R*P - 1 are whole tiles; R*P + j (j < S * L) is
// tile R*P + j % L, split z = j / L, k tiles [z * ktiles / S, (z + 1) *
// ktiles / S). Split z > 0 stores its fp32 accumulators to slot (z - 1) *
// L + i of the workspace (i = j % L) and counts itself on tile i's counter
// (release); split 0 waits until the counter reaches S - 1 (acquire),
// zeroes it for the next launch, adds the partial sums in the order z =
// 1 .. S - 1 (the same bits every run) and stores the tile as a whole
// tile. Split 0 waits only for units that wait for nothing, so a grid
// whose programs are not all resident still finishes. P is the launch's
// (%nctaid.x): a launch with one program per tile (or any P that divides
// T) has no tail and splits nothing. Needs kg = 1 and cm = 1 (the
// family's domain). On an H200 (bench/results/h200/wgmma_ts/) 2048x11008x4096
// in 128x256 tiles ran 257.2 us with tl = 1 and 237.9 us with tl = 4 in
// bf16.
inline constexpr int64_t kWgmmaTailSlots = 256;
// The workspace's partial-sum slots: min(tiles, kWgmmaTailSlots), each bm *
// bn fp32; the counters (one 32-bit word per slot, zero before the first
// launch and after every launch) follow them.
int64_t WgmmaTailSlots(const Problem& problem, const WgmmaParams& p);
// Bytes from the workspace to the tail split's counters: the slots' size.
int64_t WgmmaTailCounterOffset(const Problem& problem, const WgmmaParams& p);

// INVALID_ARGUMENT naming the parameter and its range; checks that bm
// splits into m64 tiles per consumer warpgroup.
Status ValidateWgmmaParams(const WgmmaParams& p);

enum class WgmmaRule {
  kNone,
  kComputeCapability,  // exactly 9.0: sm_90a code runs nowhere else
  kPrecisionLayout,    // tf32 needs K-major A and B (A N, B T)
  kTileLayout,         // an N-major B (layout N) needs bn a multiple of 64
  kSwizzleRow,         // bk * element bytes a multiple of 128 (128B swizzle)
  kSharedMemory,       // ring + barriers + alignment slack <= opt-in limit
  kRegisters,          // accumulators + addressing <= the consumer's budget
  kAlignment,          // lda, ldb, ldc multiples of 16 bytes (TMA strides)
  kGrid,               // units <= 2^31 - 1
  kSplitHasWork,       // kg == 1 or kg * bk <= K: every split has a k tile
  kClusterBox,         // cm = 2, cluster split: B in one box (see below)
};
inline constexpr WgmmaRule kWgmmaRules[] = {
    WgmmaRule::kComputeCapability, WgmmaRule::kPrecisionLayout,
    WgmmaRule::kTileLayout,        WgmmaRule::kSwizzleRow,
    WgmmaRule::kSharedMemory,      WgmmaRule::kRegisters,
    WgmmaRule::kAlignment,         WgmmaRule::kGrid,
    WgmmaRule::kSplitHasWork, WgmmaRule::kClusterBox};
const char* ToString(WgmmaRule rule);

// Bytes per element of A, B and C: 2 for bf16/fp16, 4 for tf32.
int WgmmaElementBytes(DType precision);
// Dynamic shared memory: 1024 bytes of alignment slack, the ring, the
// epilogue's two 8 KiB buffers per consumer warpgroup, and two 8-byte
// mbarriers per stage; with split_cluster also 16 bytes (the reduction's
// mbarrier) and kg - 1 slots of bm * bn fp32 partial sums (the cluster's
// other splits', received by its first program: WgmmaClusterSplitBytes).
int64_t WgmmaSharedBytes(DType precision, const WgmmaParams& p);
int64_t WgmmaClusterSplitBytes(const WgmmaParams& p);
// Per consumer thread: the accumulators (m tiles * bn / 2) and addressing.
int64_t WgmmaRegisterEstimate(const WgmmaParams& p);
// Registers a consumer thread may use by the rule: 224 with two consumer
// warpgroups (setmaxnreg gives 232; see the definition), 255 with one.
int64_t WgmmaRegisterBudget(const WgmmaParams& p);

// The rules that look at the precision, the parameters and the device
// alone (compute_capability, swizzle_row, shared_memory, registers), which
// conv.wgmma shares; false for every other rule.
bool PassesWgmmaTileRule(WgmmaRule rule, DType precision,
                         const WgmmaParams& p, const KernelLimits& limits);
// Whether one rule holds, with no allocation (samplers call it). The
// problem is a GEMM whose dtype is bf16, fp16 or tf32.
bool PassesWgmmaRule(WgmmaRule rule, const Problem& problem,
                     const WgmmaParams& p, const KernelLimits& limits);
WgmmaRule FirstFailingWgmmaRule(const Problem& problem, const WgmmaParams& p,
                                const KernelLimits& limits);
// OK, or FAILED_PRECONDITION naming the rule and the numbers.
Status CanImplementWgmma(const Problem& problem, const WgmmaParams& p,
                         const KernelLimits& limits = {});

struct WgmmaKernel {
  std::string ptx;
  std::string entry = "blocktune_gemm_wgmma";
  std::array<unsigned, 3> grid{};  // one program per tile
  std::array<unsigned, 3> block{};
  // The thread-block cluster, fixed in the PTX (.reqnctapercluster): a
  // plain launch forms it; grid[0] is a multiple of cluster[0].
  std::array<unsigned, 3> cluster{1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic; always past 48 KiB: needs opt-in
  // The tensor maps of A, B and C (kernel parameters 0, 1 and 10), to be
  // encoded for the operands' device addresses at launch.
  TensorMapSpec map_a, map_b, map_c;
  // gemm.wgmma_rs on an NN problem (gemm_wgmma_rs.h): the kernel computes
  // C^T = B^T A^T, so map_a is encoded for B's address, map_b for A's, and
  // the M and N parameters take the problem's N and M.
  bool swapped = false;
  int64_t align_elements = 8;  // lda, ldb, ldc must be multiples of this
  int element_bytes = 2;
  // K_G > 1: the fp32 partial sums W[z][M][N] (kg * M * N * 4 bytes) and
  // the reduce entry (gemm.mma's, blocktune_gemm_mma_reduce, in the same
  // module) that adds them in a fixed order and applies alpha and beta.
  int64_t workspace_bytes = 0;
  std::string reduce_entry;  // empty when kg == 1
  bool reduce_dependent = false;  // GeneratedKernel::reduce_dependent
  // tail > 1: bytes from the workspace to the tail split's counters, which
  // must be zero before the first launch (every launch leaves them zero);
  // -1 where there are none.
  int64_t counter_offset = -1;
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  // GenerateGemmWgmmaPacked: the pack entry, launched before `entry` on the
  // same stream with entry's arguments, and where map_a and map_b point:
  // 'A' / 'B' (the operand in place) or 'W' (the workspace, `*_offset`
  // bytes on).
  std::string pack_entry;
  std::array<unsigned, 3> pack_grid{};
  std::array<unsigned, 3> pack_block{};
  char map_a_operand = 'A', map_b_operand = 'B';
  int64_t map_a_offset = 0, map_b_offset = 0;
};

// kg * M * N * 4 where kg > 1; where tail > 1 the tail split's slots and
// counters; else 0.
int64_t WgmmaWorkspaceBytes(const Problem& problem, const WgmmaParams& p);

// The tensor map the kernel of (problem, p) expects for A ('a'), B ('b')
// or C ('c'): the stored matrix's extents and row stride, and the TMA box
// (C: 128 bytes of a row by the 64 rows of one m64 tile).
TensorMapSpec WgmmaTensorMap(const Problem& problem, const WgmmaParams& p,
                             char operand);

// Parameters of `entry`:
//   .param .align 64 .b8 tmap_a[128], tmap_b[128] (CUtensorMap, by value),
//   .u64 C, .u32 M, N, K, ldc, .f32 alpha, beta, .u64 W (the workspace;
//   read only where kg > 1), .param .align 64 .b8 tmap_c[128] (C's
//   CUtensorMap, for the beta == 0 epilogue).
// The PTX is correct for any M, N, K; the tensor maps carry lda, ldb and
// the operands' addresses. `arch` must be "sm_90a".
StatusOr<WgmmaKernel> GenerateGemmWgmma(const Problem& problem,
                                        const WgmmaParams& p,
                                        const std::string& arch = "sm_90a");

// Packed operands (family gemm.wgmma_pk). TMA reads rows that are 16-byte
// but not 128-byte aligned slowly: on the H100 (bench/results/h100/
// wgmma_pk/align.txt) gemm.wgmma's bm=64 bn=128 kernel ran bf16 1000^3 in
// 14.9 us with lda = ldb = 1000 and in 9.0 us with 1024, and rows that are
// not 16-byte aligned it cannot read at all (rule alignment). The packed
// kernel first copies each operand whose rows are not 128-byte aligned
// into the workspace with rows padded to 128 bytes (a pack entry launched
// before the main one); in tf32, whose wgmma reads K-major operands only,
// it also copies an M- or N-major operand (A T, B N) transposed, so that
// the main kernel is gemm.wgmma's for layout NT. Other operands are read
// in place. The family is offered only where some operand's rows are not
// 16-byte aligned (gemm.wgmma cannot read them): where they all are, the
// pack never paid in the H100 evaluation (bench/results/h100/eval, run of
// 2026-11-28: on all 11 such shapes, bf16 and tf32, the oracle's best of
// ~40 gemm.wgmma_pk configurations lost to another family; on 5 of the 7
// shapes with rows that are not, it won). Where it is offered, every
// operand whose rows are not 128-byte aligned is packed. C may have any
// leading dimension: where ldc is not a whole
// number of 16-byte units the epilogue stores from registers (C's tensor
// map, encoded with ldc rounded up so that it encodes, is then not used);
// C's address must be 16-byte aligned.
struct WgmmaPacking {
  bool a = false, b = false;  // which operands are packed
  bool a_transposed = false, b_transposed = false;  // tf32: made K-major
  int64_t rows_a = 0, cols_a = 0, rows_b = 0, cols_b = 0;  // as stored
  int64_t lda = 0, ldb = 0;  // the packed rows, elements (multiples of 128 B)
  int64_t src_lda = 0, src_ldb = 0;  // the rows as stored (the problem's)
  int64_t a_offset = 0, b_offset = 0;  // bytes from the workspace
  int64_t workspace_bytes = 0;  // gemm.wgmma's (split-K) first, then packs
};
// Whether an operand of `problem` has rows that are not 16-byte aligned
// (the family's rule unaligned_rows).
bool NeedsWgmmaPacking(const Problem& problem);
// The packing of `problem` with `p`: the operands whose rows are not
// 128-byte aligned, and in tf32 the operands that are not K-major.
WgmmaPacking PlanWgmmaPacking(const Problem& problem, const WgmmaParams& p);
// What the main kernel computes: the problem with the packed operands'
// layouts and leading dimensions, and ldc rounded up to 16 bytes.
Problem PackedWgmmaProblem(const Problem& problem, const WgmmaPacking& pk);
// Rule pack_size: the packed operands are fewer than 2^31 16-byte chunks.
bool PassesWgmmaPackSize(const Problem& problem, const WgmmaParams& p);
// gemm.wgmma's rules on the packed problem, and FAILED_PRECONDITION
// (rule unaligned_rows) where every operand's rows are 128-byte aligned.
Status CanImplementWgmmaPacked(const Problem& problem, const WgmmaParams& p,
                               const KernelLimits& limits = {});
// The main entry is gemm.wgmma's for PackedWgmmaProblem, with four more
// parameters after tmap_c (.u64 A, B, .u32 lda, ldb: the operands as
// stored, which the pack entry reads); the pack entry takes the same
// parameters. Like gemm.mma_pk's, the PTX is for this problem's M, N and K
// only (the packs' sizes and offsets are constants in it).
StatusOr<WgmmaKernel> GenerateGemmWgmmaPacked(
    const Problem& problem, const WgmmaParams& p,
    const std::string& arch = "sm_90a");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_WGMMA_H_
