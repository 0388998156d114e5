// Internal to the gemm.mma family (kernels/gemm_mma.h is its contract):
// the derived sizes of one kernel and the PTX emitters that gemm_mma.cc's
// GenerateGemmMma and rules share.
#ifndef BLOCKTUNE_KERNELS_GEMM_MMA_PTX_H_
#define BLOCKTUNE_KERNELS_GEMM_MMA_PTX_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "kernels/gemm_mma.h"
#include "kernels/ptx_text.h"

namespace blocktune::mma_internal {

// CeilDiv, N, Log2, IsPow2: kernels/ptx_text.h.

// The widest copy (16, 8, 4 or 2 bytes, at least one element) that every
// row start of an operand with leading dimension `ld` keeps aligned, given
// a 16-byte aligned base.
inline int64_t CopyBytes(int64_t ld, int64_t esize) {
  int64_t w = 16;
  while (w > esize && (ld * esize) % w != 0) w /= 2;
  return w;
}

// The derived sizes of one (problem, parameters) pair, named as in the PTX
// comments. An operand's shared tile is stored in its global orientation:
// rows of 16-byte chunks along the operand's contiguous dimension, so that
// every cp.async moves 16 contiguous bytes. "kc" operands are contiguous
// along K (A N, B T): rows are M (N) indices. The others (A T, B N) are
// contiguous along M (N): rows are K indices.
struct Tiling {
  MmaPrecision prec;
  int64_t esize, v, ks;  // bytes per element, elements per chunk, K per mma
  bool a_kc, b_kc;
  int64_t bm, bn, bk, wm, wn, mt, nt, warps_m, warps_n, threads, stages, kg,
      group_m, sk;
  int64_t a_rows, a_chunks, a_rb, b_rows, b_chunks, b_rb;
  int64_t a_stage, b_stage, stage;
  int64_t a_copies, b_copies, ksteps;
  int sm = 90;  // the target's number (sm_80 -> 80); set by the generator

  // Bytes per copy instruction of A and B (CopyBytes): 16 (cp.async.cg),
  // 8 or 4 (cp.async.ca pieces of a 16-byte chunk), or 2 (ld.global.b16
  // into registers, stored to shared memory after the step's math).
  int64_t cw_a = 16, cw_b = 16;

  Tiling(MmaPrecision precision, bool a_t, bool b_t, const MmaParams& p,
         int64_t copy_a = 16, int64_t copy_b = 16)
      : prec(precision),
        esize(ElementBytes(precision)),
        v(16 / ElementBytes(precision)),
        ks(precision == MmaPrecision::kTf32 ? 8 : 16),
        a_kc(!a_t),
        b_kc(b_t),
        bm(p.bm),
        bn(p.bn),
        bk(p.bk),
        wm(p.WarpTileM()),
        wn(p.WarpTileN()),
        mt(p.WarpTileM() / 16),
        nt(p.WarpTileN() / 8),
        warps_m(p.warps_m),
        warps_n(p.warps_n),
        threads(p.Threads()),
        stages(p.stages),
        kg(p.kg),
        group_m(p.group_m),
        sk(p.kg > 1 ? p.split_reduce : 0),
        cw_a(copy_a),
        cw_b(copy_b) {
    a_rows = a_kc ? bm : bk;
    a_chunks = (a_kc ? bk : bm) / v;
    b_rows = b_kc ? bn : bk;
    b_chunks = (b_kc ? bk : bn) / v;
    a_rb = a_chunks * 16;
    b_rb = b_chunks * 16;
    a_stage = a_rows * a_rb;
    b_stage = b_rows * b_rb;
    stage = a_stage + b_stage;
    a_copies = CeilDiv(a_rows * a_chunks, threads);
    b_copies = CeilDiv(b_rows * b_chunks, threads);
    ksteps = bk / ks;
  }
  // The XOR swizzle of a row with `chunks` 16-byte chunks: physical chunk =
  // chunk ^ f(row), f(row) = (row / div) % mod. Rows of 128 bytes or more
  // take f = row % 8; narrower rows share a 128-byte line with the rows
  // beside them, and f walks the chunks of the line once per 8 rows. The
  // 8 rows an ldmatrix phase reads (one chunk each) land in 8 different
  // 16-byte bank groups.
  static int64_t SwizzleDiv(int64_t chunks) {
    return chunks >= 8 ? 1 : 8 / chunks;
  }
  static int64_t SwizzleMod(int64_t chunks) {
    return std::min<int64_t>(chunks, 8);
  }
  // Regular copies: the thread count is a multiple of the chunks per row,
  // so all copies of a thread share one chunk column and lie rstep =
  // threads/chunks rows apart: one pointer, offset and bound per operand
  // instead of per copy. Shared offsets are immediates when rstep is a
  // multiple of the swizzle's 8-row period.
  bool RegularA() const { return threads % a_chunks == 0; }
  bool RegularB() const { return threads % b_chunks == 0; }
  int64_t NGroups() const { return CeilDiv(nt, 2); }  // n16 pairs + a single
  bool ScalarA() const { return prec == MmaPrecision::kTf32 && !a_kc; }
  bool ScalarB() const { return prec == MmaPrecision::kTf32 && !b_kc; }
  // tf32 B contiguous along N with NT a multiple of 4: the warp's columns
  // are permuted so that a thread's B words of four n8 tiles are one
  // 16-byte chunk (ld.shared.v4 instead of four ld.shared.b32): mma column
  // r of tile j reads column 4 * perm(r) + 32 * (j/4) + j%4 of the warp's,
  // perm(r) = 4 * (r%2) + r/2, so that the two rows of mma lanes one
  // quarter-warp serves fall in different halves of the 8 bank groups.
  // The accumulator of (j, e) is then column 4 * tig + ColumnOffset(j, e).
  bool VecB() const { return ScalarB() && nt % 4 == 0; }
  int64_t TigColumnShift() const { return VecB() ? 2 : 1; }
  int64_t ColumnOffset(int64_t j, int64_t e) const {
    return VecB() ? 16 * e + 32 * (j / 4) + j % 4 : 8 * j + e;
  }
  int64_t FragAddrA() const {
    if (a_kc) return ksteps;
    return ScalarA() ? 4 * mt : mt;
  }
  int64_t FragAddrB() const {
    if (b_kc) return ksteps;
    if (VecB()) return 2;
    return ScalarB() ? 2 * nt : NGroups();
  }
};

// The split-K tree (split_reduce 1): groups of kSplitRadix programs, the
// last of each to arrive adds the group; SplitLevels(kg) levels. Each tile
// has kg + kSplitCounterPad 32-bit counters (one per level and group).
inline constexpr int64_t kSplitRadix = 8;
inline constexpr int64_t kSplitCounterPad = 8;
inline int64_t SplitLevels(int64_t kg) {
  int64_t levels = 0;
  for (int64_t unit = 1; unit < kg; unit *= kSplitRadix) ++levels;
  return levels;
}

// Threads per program of the K_G reduction entry.
inline constexpr int64_t kReduceThreads = 256;
// Lanes per output of the K_G reduction entry.
int64_t ReduceLanes(int64_t kg);
// ---- The pipeline conv.mma shares (kernels/conv_mma_ptx.cc): everything
// of an entry but where its operands come from.
//
// How one stage of A and B reaches shared memory, and where a program's
// reduction starts and ends. EmitMainBody calls them in this order.
struct StageHooks {
  // Sets %ntiles, the stages of this program (split-K's share: grid y).
  std::function<void(PtxText&)> k_range;
  // The copy bookkeeping of A and B (after the tile origin %m0, %n0).
  std::function<void(PtxText&)> copy_setup;
  // The position of the program's first stage.
  std::function<void(PtxText&)> start;
  // The copies of the current stage into the ring slot at %slot_w, one
  // cp.async commit group's worth; past the program's last stage they
  // zero-fill (a program issues stages-1 such copies at its end).
  std::function<void(PtxText&)> copies;
  // To the next stage.
  std::function<void(PtxText&)> advance;
  // Optional, both or neither: the copies of a stage known to be in bounds
  // (no src-size, no predicates), and %nfast, how many of the first stages
  // are (with %pl: whether the program may take them at all).
  std::function<void(PtxText&)> interior_copies;
  std::function<void(PtxText&)> interior_count;
};
// %dst = f(%row), the swizzle of rows of `chunks` chunks.
void EmitSwizzle(PtxText& p, const std::string& dst, const std::string& row,
                 int64_t chunks);
// One 16-byte chunk of operand x ('a' or 'b'), copy i: global [src] ->
// shared [%dst+imm] with %sz bytes in bounds (the rest zero-filled), in
// pieces of the operand's copy width (Tiling::cw_a, cw_b); `guard` a
// predicate register or empty.
void EmitChunk(PtxText& p, const Tiling& t, char x, int64_t i,
               const std::string& guard, int64_t imm, const std::string& src);
// Regular copies (Tiling::RegularA): %r0<x> (the thread's first row),
// %ch (its chunk column) and the shared offsets %s<x><i>.
void EmitRegularSharedOffsets(PtxText& p, const Tiling& t, char x);
// The stores of 2-byte copies (registers) to the slot at %slot_st.
void EmitDeferredStores(PtxText& p, const Tiling& t, char x);
// The register declarations, the parameter loads (after the entry's
// .param list, which names them pA ... pbeta) and the .maxnreg line.
void EmitDeclarations(PtxText& p, const Tiling& t);
void EmitCommonParams(PtxText& p);
std::string MaxRegisterDirective(const Tiling& t);
// Thread roles, the grouped raster, the cp.async ring's prologue, the
// pipelined main loop, and the epilogue (C, or K_G partials to W).
void EmitMainBody(PtxText& p, const Tiling& t, const std::string& arch,
                  const StageHooks& h);

// The main entry "blocktune_gemm_mma" for `prob` with tiling `t`; with
// `pack`, it reads the packed operands from the workspace (gemm.mma_pk;
// `prob` is then PackedMmaProblem's).
std::string MainEntry(const MmaProblem& prob, const Tiling& t,
                      const std::string& arch,
                      const MmaPacking* pack = nullptr);
// The pack entry "blocktune_gemm_mma_pack": main entry's parameters; each
// thread writes 16-byte chunks of the packed rows (zeros past the stored
// ones), grid-stride over A's packed chunks, then B's.
std::string PackEntry(MmaPrecision prec, const MmaPacking& pack);
// The 16-byte chunks the pack entry writes for A and for B (0 for an
// operand read in place).
inline int64_t PackChunksA(const MmaPacking& pack, int64_t element_bytes) {
  return pack.a ? pack.rows_a * pack.lda * element_bytes / 16 : 0;
}
inline int64_t PackChunksB(const MmaPacking& pack, int64_t element_bytes) {
  return pack.b ? pack.rows_b * pack.ldb * element_bytes / 16 : 0;
}
// The pack entry's launch (gemm.mma_pk's and gemm.ffma_kpk's): a
// grid-stride loop, so any grid is correct; kPackThreads a program and at
// most 16 programs per SM of an H100 (132 SMs), enough to keep its loads
// in flight.
inline constexpr int64_t kPackThreads = 256;
inline constexpr int64_t kMaxPackPrograms = 132 * 16;
inline std::array<unsigned, 3> PackGrid(int64_t chunks) {
  const int64_t programs = (chunks + kPackThreads - 1) / kPackThreads;
  return {static_cast<unsigned>(programs < kMaxPackPrograms ? programs
                                                            : kMaxPackPrograms),
          1, 1};
}
// The K_G reduction entry "blocktune_gemm_mma_reduce"; on sm_90 and later
// it starts with griddepcontrol.wait (launched as a programmatic dependent
// of the main entry).
std::string ReduceEntry(MmaPrecision prec, int64_t lanes,
                        const std::string& arch);
// 90 for "sm_90".
int ArchNumber(const std::string& arch);

// The launch that adds K_G > 1 partial sums of an M x N output (gemm.mma's
// reduce-entry split, and gemm.wgmma's split-K): the reduce entry's PTX, to
// append to the main entry's module, its name and its geometry.
struct ReduceLaunch {
  std::string ptx;
  std::string entry = "blocktune_gemm_mma_reduce";
  std::array<unsigned, 3> grid{};
  std::array<unsigned, 3> block{};
  bool dependent = false;  // the entry waits in griddepcontrol.wait (sm_90)
};
ReduceLaunch MakeReduceLaunch(MmaPrecision prec, int64_t kg, int64_t m,
                              int64_t n, const std::string& arch);
// Appends the launch `r` to a generated kernel `k` (gemm.mma's, conv.mma's,
// gemm.wgmma's or conv.wgmma_sk's): the reduce entry joins the module.
template <typename Kernel>
void AddReduceLaunch(const ReduceLaunch& r, Kernel* k) {
  k->ptx += r.ptx;
  k->reduce_entry = r.entry;
  k->reduce_dependent = r.dependent;
  k->reduce_grid = r.grid;
  k->reduce_block = r.block;
}
// The same for an output stored in `storage` (bf16, fp16; tf32's fp32):
// the wgmma families' split-K (gemm.wgmma, conv.wgmma_sk).
inline ReduceLaunch MakeReduceLaunch(DType storage, int64_t kg, int64_t m,
                                     int64_t n, const std::string& arch) {
  return MakeReduceLaunch(storage == DType::kFp16   ? MmaPrecision::kFp16
                          : storage == DType::kTf32 ? MmaPrecision::kTf32
                                                    : MmaPrecision::kBf16,
                          kg, m, n, arch);
}

}  // namespace blocktune::mma_internal

#endif  // BLOCKTUNE_KERNELS_GEMM_MMA_PTX_H_
