// Internal to the gemm.wgmma family (kernels/gemm_wgmma.h is its contract):
// the derived sizes of one kernel, shared by the rules, the tensor maps and
// the PTX emitter.
#ifndef BLOCKTUNE_KERNELS_GEMM_WGMMA_PTX_H_
#define BLOCKTUNE_KERNELS_GEMM_WGMMA_PTX_H_

#include <cstdint>
#include <string>

#include "kernels/gemm_wgmma.h"
#include "kernels/ptx_text.h"

namespace blocktune::wgmma_internal {

// CeilDiv, N, Log2, IsPow2: kernels/ptx_text.h.

// The swizzle atom: 8 rows of 128 bytes, 1024-byte aligned.
inline constexpr int64_t kSwizzleBytes = 128;
inline constexpr int64_t kAtomBytes = 1024;
// The epilogue's staging per consumer warpgroup: two buffers of 64 rows of
// 128 bytes (one TMA store box of C each).
inline constexpr int64_t kEpilogueBufferBytes = 64 * kSwizzleBytes;
inline constexpr int64_t kEpilogueBytesPerConsumer = 2 * kEpilogueBufferBytes;
// The TMA-store epilogue stores whole 128-byte boxes of a row: only where
// bn * element bytes is a multiple of 128; other tiles keep the register
// epilogue and need no buffers. The rules' shared-memory size and the
// kernel's layout both take it from here.
inline bool TmaStoreEpilogue(int64_t bn, int64_t esize) {
  return bn * esize % kSwizzleBytes == 0;
}
inline int64_t EpilogueBytes(int64_t bn, int64_t esize, int64_t consumers) {
  return TmaStoreEpilogue(bn, esize) ? consumers * kEpilogueBytesPerConsumer
                                     : 0;
}

// The tensor-map element type of a precision (tf32: fp32 storage).
inline TensorMapType MapTypeOf(DType precision) {
  return precision == DType::kFp16   ? TensorMapType::kFp16
         : precision == DType::kBf16 ? TensorMapType::kBf16
                                     : TensorMapType::kFp32;
}

// The shared tiles of one stage. Every TMA box is 128 bytes wide (`atom`
// elements) and lands in one "panel": rows of 128 bytes one after another.
//   K-major operand (A N, B T): panels of rows = M (N) indices, one panel
//     per 128 bytes of K: bk * esize / 128 panels of bm (bn) rows.
//   M/N-major operand (A T, B N): panels of rows = K indices, one panel per
//     64 (bf16/fp16) columns of M (N): bm / 64 (bn / 64) panels of bk rows.
// A stage is the A panels, then the B panels; the ring is `stages` stages,
// then the epilogue's buffers (EpilogueBytes), then the full and the empty
// mbarriers (8 bytes each). With a cluster pair (cm = 2) the layout is the
// same; the B panels are filled half by each program of the pair.
struct Tiling {
  DType prec;
  int64_t esize;  // bytes per element of A, B, C
  int64_t wk;     // K per wgmma: 16 (bf16, fp16) or 8 (tf32)
  int64_t atom;   // elements per 128-byte row
  bool a_kmajor, b_kmajor;
  int64_t bm, bn, bk, stages, consumers, group_m, kg, cm, mt, rows_per_consumer;
  int64_t a_panels, b_panels, a_panel_bytes, b_panel_bytes;
  int64_t a_stage, b_stage, stage, ring, epilogue;
  bool tma_store;  // TmaStoreEpilogue
  // conv.wgmma (conv_wgmma.h): A is the input read by im2col copies, B the
  // filter by rank-3 tiled copies, the entry and its parameters are the
  // convolution's. Both operands are K-major.
  bool conv = false;
  // gemm.wgmma_rs (gemm_wgmma_rs.h), tf32 only: the consumers read A, an
  // M-major tile in shared memory, into registers (wgmma's register
  // operand has no layout restriction) and round it to tf32; B stays a
  // K-major shared operand. Where c_transposed, the kernel's C is stored
  // transposed: its element (i, j) goes to C[j * ldc + i] (the swapped
  // product C^T = B^T A^T of an NN problem), through the register
  // epilogue alone.
  bool a_regs = false;
  bool c_transposed = false;
  // gemm.wgmma_pk (GenerateGemmWgmmaPacked): the entry takes A, B, lda and
  // ldb after tmap_c (for the pack entry), and ldc may be any value: the
  // TMA-store epilogue needs it, as N, a whole number of 16-byte units.
  bool packed = false;
  // gemm.wgmma_ts (gemm_wgmma.h, the tail split): the most splits of a
  // tile of the last round (1: none, and not a line of the PTX differs),
  // and the workspace's slots (WgmmaTailSlots), counters after them.
  int64_t tail = 1;
  int64_t tail_slots = 0;
  // conv.wgmma_sc and gemm.wgmma_sc (WgmmaParams::split_cluster, kg > 1):
  // the kg splits of a tile are one cluster (.reqnctapercluster kg), split
  // z = the program's rank in it; splits z > 0 store their accumulators
  // into slot z - 1 of the first program's shared memory (after the
  // mbarriers: an 8-byte mbarrier, 8 bytes of padding, then kg - 1 slots
  // of bm * bn fp32) and arrive on its mbarrier; the first program waits,
  // adds the slots in order and stores the tile with the ordinary
  // epilogue.
  bool split_cluster = false;
  // WgmmaParams::b_per_box where it applies: N-major B in several boxes.
  bool b_per_box = false;
  // WgmmaParams::relaxed_start.
  bool relaxed_start = false;

  Tiling(DType precision, bool a_t, bool b_t, const WgmmaParams& p)
      : prec(precision),
        esize(WgmmaElementBytes(precision)),
        wk(32 / WgmmaElementBytes(precision)),
        atom(kSwizzleBytes / WgmmaElementBytes(precision)),
        a_kmajor(!a_t),
        b_kmajor(b_t),
        bm(p.bm),
        bn(p.bn),
        bk(p.bk),
        stages(p.stages),
        consumers(p.consumers),
        group_m(p.group_m),
        kg(p.kg),
        cm(p.cluster_m),
        mt(p.MTiles()),
        rows_per_consumer(p.RowsPerConsumer()) {
    const int64_t k_panels = CeilDiv(bk * esize, kSwizzleBytes);
    a_panels = a_kmajor ? k_panels : CeilDiv(bm, atom);
    b_panels = b_kmajor ? k_panels : CeilDiv(bn, atom);
    a_panel_bytes = (a_kmajor ? bm : bk) * kSwizzleBytes;
    b_panel_bytes = (b_kmajor ? bn : bk) * kSwizzleBytes;
    a_stage = a_panels * a_panel_bytes;
    b_stage = b_panels * b_panel_bytes;
    stage = a_stage + b_stage;
    ring = stages * stage;
    tma_store = TmaStoreEpilogue(bn, esize);
    epilogue = EpilogueBytes(bn, esize, consumers);
    b_box_rows = (b_kmajor ? bn : bk) / cm;
    tail = p.tail;
    split_cluster = p.split_cluster && p.kg > 1;
    b_per_box = p.b_per_box && !b_kmajor && b_panels > 1;
    relaxed_start = p.relaxed_start;
  }
  // Rows of one B TMA box: a whole panel, or with a cluster pair (cm = 2)
  // half of one, each program of the pair loading one half of every panel
  // and multicasting it to both (bn and bk are multiples of 16, so a half
  // panel is whole 8-row swizzle atoms).
  int64_t b_box_rows = 0;
  // Byte offset, inside a stage's A tile, of the m64 x wk slice that
  // wgmma `kk` (K step inside the stage) of m tile `tile` (counted over the
  // whole block) reads.
  int64_t AOffset(int64_t tile, int64_t kk) const {
    const int64_t kb = kk * wk * esize;  // bytes of K before it
    if (a_kmajor)
      return (kb / kSwizzleBytes) * a_panel_bytes + tile * 64 * kSwizzleBytes +
             kb % kSwizzleBytes;
    return tile * a_panel_bytes + kk * wk * kSwizzleBytes;
  }
  int64_t BOffset(int64_t kk) const {
    const int64_t kb = kk * wk * esize;
    if (b_kmajor)
      return (kb / kSwizzleBytes) * b_panel_bytes + kb % kSwizzleBytes;
    return kk * wk * kSwizzleBytes;
  }
};

// GenerateGemmWgmma's kernel for a problem that passed its rules, with the
// tiling `t` (gemm.wgmma_rs passes its own): the PTX, the grid, split-K's
// reduce entry, the tensor maps of `problem`'s A, B and C.
WgmmaKernel AssembleGemmWgmma(const Problem& problem, const WgmmaParams& p,
                              const Tiling& t, const std::string& arch);

// The main entry: "blocktune_gemm_wgmma" (gemm_wgmma.h lists its
// parameters) or, where t.conv, "blocktune_conv_wgmma" (conv_wgmma.h).
std::string MainEntry(const Tiling& t, const std::string& arch);

// What gemm.wgmma_pk's pack entry walks: the 16-byte chunks of the operands
// copied row by row (one per thread) and the 32 x 32 tiles of those copied
// transposed (one per program; tiles_n_*: tiles across the stored columns,
// the packed rows). The entry's loops and its launch's grid both use it.
struct PackWork {
  int64_t chunks_a = 0, chunks_b = 0;
  int64_t tiles_n_a = 0, tiles_n_b = 0, tiles_a = 0, tiles_b = 0;
};
inline PackWork PackWorkOf(const WgmmaPacking& pack, int64_t element_bytes) {
  const int64_t v = 16 / element_bytes;
  PackWork w;
  if (pack.a && !pack.a_transposed) w.chunks_a = pack.rows_a * pack.lda / v;
  if (pack.b && !pack.b_transposed) w.chunks_b = pack.rows_b * pack.ldb / v;
  // Whole tiles along the packed rows: ld is a multiple of 32 tf32 elements.
  w.tiles_n_a = CeilDiv(pack.cols_a, 32);
  w.tiles_n_b = CeilDiv(pack.cols_b, 32);
  if (pack.a_transposed) w.tiles_a = w.tiles_n_a * (pack.lda / 32);
  if (pack.b_transposed) w.tiles_b = w.tiles_n_b * (pack.ldb / 32);
  return w;
}

// gemm.wgmma_pk's pack entry "blocktune_gemm_wgmma_pack", with the main
// entry's parameters (t.packed): copies the operands `pack` names into the
// workspace in 16-byte chunks, rows padded to pack.lda / pack.ldb (zeros
// past the stored columns), transposed where pack says so. One chunk per
// thread, grid-stride.
std::string PackEntry(const Tiling& t, const WgmmaPacking& pack);

}  // namespace blocktune::wgmma_internal

#endif  // BLOCKTUNE_KERNELS_GEMM_WGMMA_PTX_H_
