// The PTX emitter of gemm.wgmma (see gemm_wgmma.h for the algorithm).
#include "kernels/gemm_wgmma_ptx.h"

#include <sstream>

#include "kernels/conv_wgmma.h"
#include "kernels/gemm_wgmma_rs.h"
#include "kernels/ptx_text.h"

namespace blocktune::wgmma_internal {
namespace {

using Ptx = PtxText;

// The constant half of a shared-memory matrix descriptor (PTX ISA, "Matrix
// Descriptor Format"): bits 62-63 the swizzle mode (1: 128 bytes), bits
// 32-45 the stride byte offset >> 4, bits 16-29 the leading byte offset
// >> 4; bits 0-13 (the start address >> 4) are added per wgmma.
//   K-major: stride = 1024 (one 8-row swizzle atom to the next along M/N);
//     the leading offset is unused by the 128-byte swizzle (1 by
//     convention).
//   M/N-major: stride = 1024 (8 rows of K to the next 8), leading = the
//     panel size (one 64-column panel of M/N to the next).
uint64_t DescriptorBits(bool kmajor, int64_t panel_bytes) {
  const uint64_t leading = kmajor ? 1 : static_cast<uint64_t>(panel_bytes) >> 4;
  return (uint64_t{1} << 62) | (uint64_t{kAtomBytes >> 4} << 32) |
         (leading << 16);
}

std::string Hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

const char* MmaTypes(DType prec) {
  switch (prec) {
    case DType::kFp16:
      return "f32.f16.f16";
    case DType::kTf32:
      return "f32.tf32.tf32";
    default:
      return "f32.bf16.bf16";
  }
}

// %dst = ceil(%src / d), d > 0.
void EmitCeilDiv(Ptx& p, const std::string& dst, const std::string& src,
                 int64_t d) {
  p << "\tadd.u32 " << dst << ", " << src << ", " << N(d - 1) << ";\n";
  if (IsPow2(d)) {
    p << "\tshr.u32 " << dst << ", " << dst << ", " << N(Log2(d)) << ";\n";
  } else {
    p << "\tdiv.u32 " << dst << ", " << dst << ", " << N(d) << ";\n";
  }
}

// Spins until the phase of parity `parity` of the mbarrier at `bar` has
// completed.
void EmitWait(Ptx& p, const std::string& label, const std::string& bar,
              const std::string& parity) {
  p << label << ":\n"
    << "\tmbarrier.try_wait.parity.shared::cta.b64 %pw, [" << bar << "], "
    << parity << ";\n"
    << "\t@!%pw bra " << label << ";\n";
}

// One TMA box per panel of operand `x` into the stage at %sbuf.
void EmitCopies(Ptx& p, const Tiling& t, char x) {
  const bool a = x == 'a';
  const bool kmajor = a ? t.a_kmajor : t.b_kmajor;
  const int64_t panels = a ? t.a_panels : t.b_panels;
  const int64_t panel_bytes = a ? t.a_panel_bytes : t.b_panel_bytes;
  const int64_t base = a ? 0 : t.a_stage;
  const std::string origin = a ? "%m0" : "%n0", map = a ? "%tma" : "%tmb";
  // A cluster pair's B: this program's half of each panel (rows %rrow on,
  // bytes %rofs on), multicast to both programs of the pair.
  const bool half = !a && t.cm == 2;
  for (int64_t i = 0; i < panels; ++i) {
    // Coordinates: {contiguous, row} of the stored matrix.
    if (kmajor) {
      p << "\tadd.u32 %cx, %k0, " << N(i * t.atom) << ";\n";
      if (half)
        p << "\tadd.u32 %cy, " << origin << ", %rrow;\n";
      else
        p << "\tmov.u32 %cy, " << origin << ";\n";
    } else {
      p << "\tadd.u32 %cx, " << origin << ", " << N(i * t.atom) << ";\n";
      if (half)
        p << "\tadd.u32 %cy, %k0, %rrow;\n";
      else
        p << "\tmov.u32 %cy, %k0;\n";
    }
    p << "\tadd.u32 %dst, %sbuf, " << N(base + i * panel_bytes) << ";\n";
    if (half) {
      p << "\tadd.u32 %dst, %dst, %rofs;\n"
        << "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
           "complete_tx::bytes.multicast::cluster [%dst], ["
        << map << ", {%cx, %cy}], [%fb], %mask;\n";
    } else {
      p << "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
           "complete_tx::bytes [%dst], ["
        << map << ", {%cx, %cy}], [%fb];\n";
    }
  }
}

// The first work unit of this program (its cluster's, with pairs: both
// programs of a pair take the same units) and the stride to the next.
// The cluster split (conv.wgmma_sc, gemm.wgmma_sc): every program of a
// cluster takes its cluster's tile (one split each).
bool UnitsByCluster(const Tiling& t) { return t.cm == 2 || t.split_cluster; }
void EmitFirstUnit(Ptx& p, const Tiling& t) {
  p << "\tmov.u32 %unit, " << (UnitsByCluster(t) ? "%clusterid.x" : "%ctaid.x")
    << ";\n";
}
void EmitNextUnit(Ptx& p, const Tiling& t) {
  p << "\tmov.u32 %tmp, "
    << (UnitsByCluster(t) ? "%nclusterid.x" : "%nctaid.x")
    << ";\n\tadd.u32 %unit, %unit, %tmp;\n";
}

// Releases the buffer whose empty mbarrier is at %prev (one arrival per
// warp, where `pred` holds): to this program's producer and, with a
// cluster pair, to the partner's, whose multicast also fills it.
void EmitRelease(Ptx& p, const Tiling& t, const std::string& pred) {
  p << "\t@" << pred << " mbarrier.arrive.shared::cta.b64 _, [%prev];\n";
  if (t.cm == 2) {
    p << "\t@" << pred << " mapa.shared::cluster.u32 %rprev, %prev, %peer;\n"
      << "\t@" << pred
      << " mbarrier.arrive.shared::cluster.b64 _, [%rprev];\n";
  }
}

// Every thread of the cluster: the partner's mbarriers are initialized
// before use, and neither program exits while the other may still write
// its shared memory or arrive on its mbarriers.
// relaxed (WgmmaParams::relaxed_start): the arrive without release
// semantics, where fence.mbarrier_init.release.cluster already orders the
// only writes the partner reads.
void EmitClusterSync(Ptx& p, bool relaxed = false) {
  p << (relaxed ? "\tbarrier.cluster.arrive.relaxed;\n"
                : "\tbarrier.cluster.arrive.release;\n")
    << "\tbarrier.cluster.wait.acquire;\n";
}

void EmitEpilogueSetup(Ptx& p, const Tiling& t);

// %m0, %n0 of tile %tile in the grouped raster (group_m rows of tiles,
// column by column inside a group); %tiles_n, %tiles_m, %in_group are set.
void EmitRaster(Ptx& p, const Tiling& t) {
  p << "\tdiv.u32 %group, %tile, %in_group;\n"
    << "\tmul.lo.u32 %first_m, %group, " << N(t.group_m) << ";\n"
    << "\tsub.u32 %gsize, %tiles_m, %first_m;\n"
    << "\tmin.u32 %gsize, %gsize, " << N(t.group_m) << ";\n"
    << "\tmul.lo.u32 %tmp, %group, %in_group;\n"
    << "\tsub.u32 %r, %tile, %tmp;\n"
    << "\trem.u32 %tile_m, %r, %gsize;\n"
    << "\tadd.u32 %tile_m, %tile_m, %first_m;\n"
    << "\tdiv.u32 %tile_n, %r, %gsize;\n";
  // With pairs, rows of tiles are rows of pairs: this program's is the
  // pair's first or second.
  if (t.cm == 2) p << "\tmad.lo.u32 %tile_m, %tile_m, 2, %rank;\n";
  p << "\tmul.lo.u32 %m0, %tile_m, " << N(t.bm) << ";\n"
    << "\tmul.lo.u32 %n0, %tile_n, " << N(t.bn) << ";\n";
}

// Work unit %unit: tile %unit % tiles, split %z = %unit / tiles (kg > 1),
// %m0 and %n0 by EmitRaster, and the split's k tiles [%kb, %kend): split z
// runs [z * ktiles / kg, (z + 1) * ktiles / kg), non-empty where
// kg <= ktiles (rule split_has_work).
void EmitUnit(Ptx& p, const Tiling& t) {
  if (t.tail > 1) {
    // The tail split (gemm_wgmma.h): units below %tF are whole tiles; unit
    // %tF + j is tile %tF + j % L, split j / L of %tS. %psplit: a split
    // unit (of a launch whose last round splits).
    p << "\tsetp.ge.u32 %ptail, %unit, %tF;\n"
      << "\tsub.u32 %tj, %unit, %tF;\n"
      << "\trem.u32 %tmp, %tj, %tLd;\n\tadd.u32 %tmp, %tmp, %tF;\n"
      << "\tselp.u32 %tile, %tmp, %unit, %ptail;\n"
      << "\tdiv.u32 %z, %tj, %tLd;\n\tselp.u32 %z, %z, 0, %ptail;\n"
      << "\tselp.u32 %tsd, %tS, 1, %ptail;\n"
      << "\tsetp.gt.and.u32 %psplit, %tS, 1, %ptail;\n";
    EmitRaster(p, t);
    p << "\tmul.lo.u32 %kb, %z, %ktiles;\n\tdiv.u32 %kb, %kb, %tsd;\n"
      << "\tmad.lo.u32 %kend, %z, %ktiles, %ktiles;\n"
      << "\tdiv.u32 %kend, %kend, %tsd;\n";
    return;
  }
  if (t.kg == 1) {
    p << "\tmov.u32 %tile, %unit;\n";
    EmitRaster(p, t);
    p << "\tmov.u32 %kb, 0;\n\tmov.u32 %kend, %ktiles;\n";
    return;
  }
  if (t.split_cluster)  // the cluster split: the cluster's tile, split = rank
    p << "\tmov.u32 %tile, %unit;\n\tmov.u32 %z, %cluster_ctarank;\n";
  else
    p << "\trem.u32 %tile, %unit, %tiles;\n\tdiv.u32 %z, %unit, %tiles;\n";
  EmitRaster(p, t);
  p << "\tmul.lo.u32 %kb, %z, %ktiles;\n\tdiv.u32 %kb, %kb, " << N(t.kg)
    << ";\n"
    << "\tmad.lo.u32 %kend, %z, %ktiles, %ktiles;\n\tdiv.u32 %kend, %kend, "
    << N(t.kg) << ";\n";
}

// conv.wgmma, at a tile's start: the coordinates of its first output pixel
// %m0 = (n, p, q) for the im2col copies (%cwc, %chc, %cnc: the input pixel
// under the filter's first tap, (q * stride_w - pad_w, p * stride_h -
// pad_h) of image n), and the tap and channel walk from the start:
// %tr, %ts the tap, %k0 the first channel of the stage.
void EmitConvTileStart(Ptx& p, const Tiling& t) {
  p << "\tdiv.u32 %cnc, %m0, %PQ;\n\trem.u32 %tmp, %m0, %PQ;\n"
    << "\tdiv.u32 %chc, %tmp, %Qout;\n\trem.u32 %cwc, %tmp, %Qout;\n"
    << "\tmul.lo.u32 %chc, %chc, %sth;\n\tsub.s32 %chc, %chc, %padh;\n"
    << "\tmul.lo.u32 %cwc, %cwc, %stw;\n\tsub.s32 %cwc, %cwc, %padw;\n";
  if (t.kg == 1) {
    p << "\tmov.u32 %tr, 0;\n\tmov.u32 %ts, 0;\n\tmov.u32 %k0, 0;\n";
    return;
  }
  // conv.wgmma_sk: the split starts at k tile %kb = tap * CB + step, tap
  // (%tr, %ts) = divmod(tap, S), channels from step * bk.
  p << "\t// the split's first k tile %kb: tap %kb / CB, channel step %kb % "
       "CB\n"
    << "\tdiv.u32 %tmp, %kb, %CB;\n"
    << "\tmul.lo.u32 %k0, %tmp, %CB;\n\tsub.u32 %k0, %kb, %k0;\n"
    << "\tmul.lo.u32 %k0, %k0, " << N(t.bk) << ";\n"
    << "\tdiv.u32 %tr, %tmp, %Sf;\n\trem.u32 %ts, %tmp, %Sf;\n";
}

// conv.wgmma, one stage: tap (%tr, %ts), channels [%k0, %k0 + bk). A: one
// im2col copy per 128 bytes of channels (bm pixels each), the tap as the
// copy's offsets (W, then H); B: one tiled copy of the filter's (C, R*S,
// K) map per 128 bytes of channels, {channels, tap, output channels}.
void EmitConvCopies(Ptx& p, const Tiling& t) {
  p << "\tmul.lo.u32 %tmp, %ts, %dlw;\n\tcvt.u16.u32 %ow, %tmp;\n"
    << "\tmul.lo.u32 %tmp, %tr, %dlh;\n\tcvt.u16.u32 %oh, %tmp;\n"
    << "\tmad.lo.u32 %rs, %tr, %Sf, %ts;\n";
  for (int64_t i = 0; i < t.a_panels; ++i) {
    p << "\tadd.u32 %cx, %k0, " << N(i * t.atom) << ";\n"
      << "\tadd.u32 %dst, %sbuf, " << N(i * t.a_panel_bytes) << ";\n"
      << "\tcp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::"
         "complete_tx::bytes [%dst], [%tma, {%cx, %cwc, %chc, %cnc}], [%fb], "
         "{%ow, %oh};\n";
  }
  for (int64_t i = 0; i < t.b_panels; ++i) {
    p << "\tadd.u32 %cx, %k0, " << N(i * t.atom) << ";\n"
      << "\tadd.u32 %dst, %sbuf, " << N(t.a_stage + i * t.b_panel_bytes)
      << ";\n"
      << "\tcp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::"
         "complete_tx::bytes [%dst], [%tmb, {%cx, %rs, %n0}], [%fb];\n";
  }
  p << "\t// the next stage: the next channels, or the next tap\n"
    << "\tadd.u32 %k0, %k0, " << N(t.bk) << ";\n"
    << "\tsetp.lt.u32 %pp, %k0, %Cin;\n\t@%pp bra PTAP;\n"
    << "\tmov.u32 %k0, 0;\n\tadd.u32 %ts, %ts, 1;\n"
    << "\tsetp.lt.u32 %pp, %ts, %Sf;\n\t@%pp bra PTAP;\n"
    << "\tmov.u32 %ts, 0;\n\tadd.u32 %tr, %tr, 1;\n"
    << "PTAP:\n";
}

void EmitProducer(Ptx& p, const Tiling& t) {
  p << "\t// ==== producer warpgroup: one thread streams A and B tiles into "
       "the ring with TMA\n";
  if (t.consumers == 2) p << "\tsetmaxnreg.dec.sync.aligned.u32 40;\n";
  p << "\tsetp.ne.u32 %pp, %thr, 0;\n"
    << "\t@%pp bra DONE;\n"
    << "\tmov.b64 %tma, tmap_a;\n\tcvta.param.u64 %tma, %tma;\n"
    << "\tmov.b64 %tmb, tmap_b;\n\tcvta.param.u64 %tmb, %tmb;\n"
    << "\tprefetch.tensormap [%tma];\n\tprefetch.tensormap [%tmb];\n"
    << "\tmov.u32 %st, 0;\n\tmov.u32 %ph, 0;\n";
  if (t.cm == 2) {
    p << "\t// this program's half of every B box: rows and bytes from the "
         "panel's start\n"
      << "\tmul.lo.u32 %rrow, %rank, " << N(t.b_box_rows) << ";\n"
      << "\tmul.lo.u32 %rofs, %rank, " << N(t.b_box_rows * kSwizzleBytes)
      << ";\n"
      << "\tmov.b16 %mask, 3;\n";
  }
  EmitFirstUnit(p, t);
  p << "PTILE:\n"
    << "\tsetp.ge.u32 %pp, %unit, %units;\n\t@%pp bra DONE;\n";
  EmitUnit(p, t);
  p << "\tmov.u32 %kt, %kb;\n";
  if (t.conv)
    EmitConvTileStart(p, t);
  else
    p << "\tmul.lo.u32 %k0, %kb, " << N(t.bk) << ";\n";
  p << "PLOOP:\n"
    << "\tsetp.ge.u32 %pp, %kt, %kend;\n\t@%pp bra PNEXT;\n"
    << "\tmad.lo.u32 %sbuf, %st, " << N(t.stage) << ", %sm;\n"
    << "\tshl.b32 %boff, %st, 3;\n"
    << "\tadd.u32 %fb, %full, %boff;\n\tadd.u32 %eb, %empty, %boff;\n"
    << "\t// wait until the consumers released this buffer (the first pass "
       "waits on parity 1, complete at init)\n"
    << "\txor.b32 %par, %ph, 1;\n";
  EmitWait(p, "PWAIT", "%eb", "%par");
  p << "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%fb], " << N(t.stage)
    << ";\n";
  if (t.conv) {
    EmitConvCopies(p, t);
    p << "\tadd.u32 %kt, %kt, 1;\n";
  } else {
    EmitCopies(p, t, 'a');
    EmitCopies(p, t, 'b');
    p << "\tadd.u32 %kt, %kt, 1;\n\tadd.u32 %k0, %k0, " << N(t.bk) << ";\n";
  }
  p << "\tadd.u32 %st, %st, 1;\n"
    << "\tsetp.eq.u32 %pp, %st, " << N(t.stages) << ";\n"
    << "\tselp.u32 %st, 0, %st, %pp;\n"
    << "\txor.b32 %tmp, %ph, 1;\n\tselp.u32 %ph, %tmp, %ph, %pp;\n"
    << "\tbra PLOOP;\n"
    << "PNEXT:\n";
  EmitNextUnit(p, t);
  p << "\tbra PTILE;\n";
}

std::string AccList(const Tiling& t, int64_t tile, int64_t first_column = 0,
                    int64_t columns = 0) {
  std::string s = "{";
  const int64_t n = t.bn / 2;
  // m64nNk16's accumulators: 4 per 8 columns, in column order.
  const int64_t from = first_column / 2, count = (columns ? columns : t.bn) / 2;
  for (int64_t r = from; r < from + count; ++r) {
    if (r > from) s += ", ";
    s += "%acc" + N(tile * n + r);
  }
  return s + "}";
}

// The consumer warpgroups' start: registers set by setmaxnreg, the
// warpgroup's index %cw, its thread %ctid, warp and lane.
void EmitConsumerStart(Ptx& p, const Tiling& t, const char* what) {
  p << "\t// ==== consumer warpgroups: " << what << "\n"
    << "CONSUMER:\n";
  if (t.consumers == 2) p << "\tsetmaxnreg.inc.sync.aligned.u32 232;\n";
  p << "\tsub.u32 %cw, %wg, 1;\n"
    << "\tand.b32 %ctid, %thr, 127;\n"
    << "\tshr.u32 %warp, %ctid, 5;\n\tand.b32 %lane, %ctid, 31;\n"
    << "\tsetp.eq.u32 %plane, %lane, 0;\n"
    << "\tsetp.eq.u32 %pone, 0, 0;\n";
}

// From the ring's start to a tile's first k tile: the unit loop's head,
// the accumulators zeroed.
void EmitConsumerTileStart(Ptx& p, const Tiling& t) {
  p << "\tmov.u32 %st, 0;\n\tmov.u32 %ph, 0;\n\tmov.u32 %prev, 0;\n";
  EmitFirstUnit(p, t);
  p << "CTILE:\n"
    << "\tsetp.ge.u32 %pp, %unit, %units;\n\t@%pp bra CEXIT;\n";
  EmitUnit(p, t);
  for (int64_t i = 0; i < t.mt * t.bn / 2; ++i)
    p << "\tmov.f32 %acc" << N(i) << ", 0f00000000;\n";
  p << "\tmov.u32 %kt, %kb;\n";
}

// Stage %st's buffer %sbuf, once its full barrier says the copies landed.
void EmitStageWait(Ptx& p, const Tiling& t, const std::string& label) {
  p << "\tmad.lo.u32 %sbuf, %st, " << N(t.stage) << ", %sm;\n"
    << "\tshl.b32 %boff, %st, 3;\n\tadd.u32 %fb, %full, %boff;\n";
  EmitWait(p, label, "%fb", "%ph");
}

// After a k tile's wgmmas: commit them, wait for the previous k tile's
// group and release its buffer, then the next stage.
void EmitStepEnd(Ptx& p, const Tiling& t, bool comment) {
  p << "\twgmma.commit_group.sync.aligned;\n";
  if (comment) {
    p << "\t// the group of the previous k tile has completed: release its "
         "buffer (one arrival per warp)\n";
  }
  p << "\twgmma.wait_group.sync.aligned 1;\n"
    << "\tsetp.ne.u32 %pp, %kt, %kb;\n\tand.pred %pp, %pp, %plane;\n";
  EmitRelease(p, t, "%pp");
  p << "\tadd.u32 %prev, %empty, %boff;\n"
    << "\tadd.u32 %kt, %kt, 1;\n\tadd.u32 %st, %st, 1;\n"
    << "\tsetp.eq.u32 %pp, %st, " << N(t.stages) << ";\n"
    << "\tselp.u32 %st, 0, %st, %pp;\n"
    << "\txor.b32 %tmp, %ph, 1;\n\tselp.u32 %ph, %tmp, %ph, %pp;\n";
}

// A tile's end: its last group, and the release of its last buffer.
void EmitConsumerTileEnd(Ptx& p, const Tiling& t) {
  p << "CDONE:\n\twgmma.wait_group.sync.aligned 0;\n"
    << "\t// release the tile's last buffer: the producer fills it for the "
       "next tile\n";
  EmitRelease(p, t, "%plane");
}

void EmitMainLoop(Ptx& p, const Tiling& t) {
  const int64_t ksteps = t.bk / t.wk;
  EmitConsumerStart(p, t, "wgmma on the ring, one group in flight");
  // The consumer's first m tile, counted over the block.
  p << "\tmul.lo.u32 %aoff, %cw, " << N(t.AOffset(t.mt, 0) - t.AOffset(0, 0))
    << ";\n";
  EmitEpilogueSetup(p, t);
  EmitConsumerTileStart(p, t);
  p << "CLOOP:\n"
    << "\tsetp.ge.u32 %pp, %kt, %kend;\n\t@%pp bra CDONE;\n";
  EmitStageWait(p, t, "CWAIT");
  p << "\tadd.u32 %tmp, %sbuf, %aoff;\n\tshr.u32 %tmp, %tmp, 4;\n"
    << "\tcvt.u64.u32 %da, %tmp;\n"
    << "\tor.b64 %da, %da, " << Hex(DescriptorBits(t.a_kmajor, t.a_panel_bytes))
    << ";\n"
    << "\tadd.u32 %tmp, %sbuf, " << N(t.a_stage) << ";\n"
    << "\tshr.u32 %tmp, %tmp, 4;\n\tcvt.u64.u32 %db, %tmp;\n"
    << "\tor.b64 %db, %db, " << Hex(DescriptorBits(t.b_kmajor, t.b_panel_bytes))
    << ";\n"
    << "\twgmma.fence.sync.aligned;\n";
  const bool tf32 = t.prec == DType::kTf32;
  for (int64_t kk = 0; kk < ksteps; ++kk) {
    p << "\tadd.s64 %dbk, %db, " << N(t.BOffset(kk) >> 4) << ";\n";
    for (int64_t i = 0; i < t.mt; ++i) {
      p << "\tadd.s64 %dak, %da, " << N((t.AOffset(i, kk) - t.AOffset(0, 0)) >> 4)
        << ";\n";
      // b_per_box: a wgmma per B box (its columns, its accumulators).
      const int64_t boxes = t.b_per_box ? t.b_panels : 1;
      const int64_t cols = t.bn / boxes;
      for (int64_t j = 0; j < boxes; ++j) {
        if (t.b_per_box)
          p << "\tadd.s64 %dbj, %dbk, " << N(j * t.b_panel_bytes >> 4) << ";\n";
        p << "\twgmma.mma_async.sync.aligned.m64n" << N(cols) << "k" << N(t.wk)
          << "." << MmaTypes(t.prec) << " " << AccList(t, i, j * cols, cols)
          << ", %dak, " << (t.b_per_box ? "%dbj" : "%dbk") << ", %pone, 1, 1";
        if (!tf32)
          p << ", " << (t.a_kmajor ? "0" : "1") << ", "
            << (t.b_kmajor ? "0" : "1");
        p << ";\n";
      }
    }
  }
  EmitStepEnd(p, t, /*comment=*/true);
  p << "\tbra CLOOP;\n";
  EmitConsumerTileEnd(p, t);
}

// gemm.wgmma_rs: A from registers. The consumers' A tile is M-major in
// shared memory (TMA panels of 32 rows of M, bk rows of K of 128 bytes
// each, 128-byte swizzle: row k's 16-byte unit u at (u ^ (k % 8)) * 16).
// wgmma's m64nNk8 tf32 register fragment of warp w holds rows 16 w + g and
// 16 w + g + 8, columns t and t + 4 of its m64 x k8 slice (g = lane / 4,
// t = lane % 4): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
// Each thread's four byte offsets inside a stage (%ao0..3) are fixed: a k8
// step adds 8 rows (1024 bytes), an m tile two panels; the XOR depends on
// k % 8 alone, which is t or t + 4 at every step.
void EmitRegsSetup(Ptx& p, const Tiling& t) {
  p << "\t// A fragments: this thread's byte offsets in a stage's A panels\n"
    << "\tshr.u32 %tmp, %warp, 1;\n"
    << "\tmad.lo.u32 %apan, %cw, " << N(t.mt * 64 / t.atom) << ", %tmp;\n"
    << "\tmul.lo.u32 %apan, %apan, " << N(t.a_panel_bytes) << ";\n"
    << "\t// byte in the unit: 4 * (row % 4) = 4 * (g % 4)\n"
    << "\tshr.u32 %tmp, %lane, 2;\n\tand.b32 %tmp, %tmp, 3;\n"
    << "\tshl.b32 %tmp, %tmp, 2;\n"
    << "\tadd.u32 %apan, %apan, %tmp;\n"
    << "\t// unit of rows g and g + 8: 4 * (warp % 2) + g / 4, + 2\n"
    << "\tand.b32 %au, %warp, 1;\n\tshl.b32 %au, %au, 2;\n"
    << "\tshr.u32 %tmp, %lane, 4;\n\tadd.u32 %au, %au, %tmp;\n"
    << "\tand.b32 %at, %lane, 3;\n";
  for (int q = 0; q < 4; ++q) {
    // q: a0 (u, t), a1 (u + 2, t), a2 (u, t + 4), a3 (u + 2, t + 4).
    const int du = (q & 1) ? 2 : 0, dk = (q & 2) ? 4 : 0;
    const std::string ao = "%ao" + N(q);
    p << "\tadd.u32 %tmp, %at, " << N(dk) << ";\n"
      << "\tadd.u32 " << ao << ", %au, " << N(du) << ";\n"
      << "\txor.b32 " << ao << ", " << ao << ", %tmp;\n"
      << "\tshl.b32 " << ao << ", " << ao << ", 4;\n"
      << "\tmad.lo.u32 " << ao << ", %tmp, " << N(kSwizzleBytes) << ", "
      << ao << ";\n"
      << "\tadd.u32 " << ao << ", " << ao << ", %apan;\n";
  }
}

// Register A of k step kk, m tile i, in bank `bank`: the index of its first
// of four fragment registers (%fa), and their names.
int64_t FragBase(const Tiling& t, int bank, int64_t kk, int64_t i) {
  return ((bank * (t.bk / t.wk) + kk) * t.mt + i) * 4;
}
std::string FragRegs(const Tiling& t, int bank, int64_t kk, int64_t i) {
  const int64_t base = FragBase(t, bank, kk, i);
  return "{%fa" + N(base) + ", %fa" + N(base + 1) + ", %fa" + N(base + 2) +
         ", %fa" + N(base + 3) + "}";
}

// One k tile with A from registers bank `bank`. wgmma reads its register
// operand until its group completes, so consecutive k tiles use the two
// banks in turn: a bank is written again only after wait_group 1 has
// retired the group (two k tiles back) that read it.
void EmitRegsStep(Ptx& p, const Tiling& t, int bank) {
  const int64_t ksteps = t.bk / t.wk;
  const std::string b = N(bank);
  EmitStageWait(p, t, "CWAIT" + b);
  for (int q = 0; q < 4; ++q)
    p << "\tadd.u32 %ab" << q << ", %sbuf, %ao" << q << ";\n";
  for (int64_t kk = 0; kk < ksteps; ++kk) {
    for (int64_t i = 0; i < t.mt; ++i) {
      const int64_t base = FragBase(t, bank, kk, i);
      const int64_t off = kk * t.wk * kSwizzleBytes +
                          i * (64 / t.atom) * t.a_panel_bytes;
      for (int q = 0; q < 4; ++q) {
        const std::string r = "%fa" + N(base + q);
        p << "\tld.shared.b32 " << r << ", [%ab" << q << "+" << N(off)
          << "];\n"
          << "\tcvt.rna.tf32.f32 " << r << ", " << r << ";\n";
      }
    }
  }
  p << "\tadd.u32 %tmp, %sbuf, " << N(t.a_stage) << ";\n"
    << "\tshr.u32 %tmp, %tmp, 4;\n\tcvt.u64.u32 %db, %tmp;\n"
    << "\tor.b64 %db, %db, " << Hex(DescriptorBits(t.b_kmajor, t.b_panel_bytes))
    << ";\n"
    << "\twgmma.fence.sync.aligned;\n";
  for (int64_t kk = 0; kk < ksteps; ++kk) {
    p << "\tadd.s64 %dbk, %db, " << N(t.BOffset(kk) >> 4) << ";\n";
    for (int64_t i = 0; i < t.mt; ++i) {
      p << "\twgmma.mma_async.sync.aligned.m64n" << N(t.bn) << "k" << N(t.wk)
        << "." << MmaTypes(t.prec) << " " << AccList(t, i) << ", "
        << FragRegs(t, bank, kk, i) << ", %dbk, %pone, 1, 1;\n";
    }
  }
  EmitStepEnd(p, t, /*comment=*/false);
}

void EmitMainLoopRegs(Ptx& p, const Tiling& t) {
  EmitConsumerStart(p, t,
                    "A from shared memory into registers (two banks, k tiles "
                    "alternating), wgmma with B from shared memory, one group "
                    "in flight");
  EmitRegsSetup(p, t);
  EmitEpilogueSetup(p, t);
  EmitConsumerTileStart(p, t);
  p << "CLOOP:\n"
    << "\tsetp.ge.u32 %pp, %kt, %kend;\n\t@%pp bra CDONE;\n";
  EmitRegsStep(p, t, 0);
  p << "\tsetp.ge.u32 %pp, %kt, %kend;\n\t@%pp bra CDONE;\n";
  EmitRegsStep(p, t, 1);
  p << "\tbra CLOOP;\n";
  EmitConsumerTileEnd(p, t);
}

// gemm.wgmma_rs with c_transposed: the kernel's element (row, col) goes to
// C[col * ldc + row]. A thread's pair of columns (col, col + 1) are two
// rows of C: two 4-byte stores, %ptr and %ptr1 a row of C apart. For one
// register the warp's lanes write 8 consecutive floats (32 bytes) in each
// of 4 rows of C: whole 32-byte sectors.
void EmitEpilogueTransposed(Ptx& p, const Tiling& t) {
  const int64_t per_row = t.bn / 2;
  p << "\t// ---- C transposed: kernel (row, col) to C[col * ldc + row]\n"
    << "\tmul.wide.u32 %ldc4, %ldc, 4;\n"
    << "\tshl.b64 %ldc32, %ldc4, 3;\n";
  for (int64_t i = 0; i < t.mt; ++i) {
    for (int64_t h = 0; h < 2; ++h) {
      p << "\tadd.u32 %row, %rbase, " << N(i * 64 + 8 * h) << ";\n"
        << "\tsetp.lt.u32 %prow, %row, %M;\n"
        << "\tmul.wide.u32 %d0, %cbase, %ldc;\n"
        << "\tcvt.u64.u32 %ptr, %row;\n"
        << "\tadd.u64 %d0, %d0, %ptr;\n"
        << "\tshl.b64 %d0, %d0, 2;\n"
        << "\tadd.u64 %ptr, %C, %d0;\n"
        << "\tadd.u64 %ptr1, %ptr, %ldc4;\n";
      for (int64_t j = 0; j < t.bn / 8; ++j) {
        const int64_t col = 8 * j;
        const std::string acc0 = "%acc" + N(i * per_row + 4 * j + 2 * h);
        const std::string acc1 = "%acc" + N(i * per_row + 4 * j + 2 * h + 1);
        if (j > 0) {
          p << "\tadd.u64 %ptr, %ptr, %ldc32;\n"
            << "\tadd.u64 %ptr1, %ptr1, %ldc32;\n";
        }
        p << "\tsetp.gt.and.s32 %pe, %nrem, " << N(col) << ", %prow;\n"
          << "\tsetp.gt.and.s32 %pe1, %nrem, " << N(col + 1) << ", %prow;\n"
          << "\tmul.f32 %v, " << acc0 << ", %alpha;\n"
          << "\tmul.f32 %v1, " << acc1 << ", %alpha;\n"
          << "\tand.pred %pl0, %pe, %pbeta;\n"
          << "\tand.pred %pl1, %pe1, %pbeta;\n"
          << "\tmov.f32 %cf, 0f00000000;\n\tmov.f32 %cf1, 0f00000000;\n"
          << "\t@%pl0 ld.global.f32 %cf, [%ptr];\n"
          << "\t@%pl1 ld.global.f32 %cf1, [%ptr1];\n"
          << "\tfma.rn.f32 %v, %cf, %beta, %v;\n"
          << "\tfma.rn.f32 %v1, %cf1, %beta, %v1;\n"
          << "\t@%pe st.global.f32 [%ptr], %v;\n"
          << "\t@%pe1 st.global.f32 [%ptr1], %v1;\n";
      }
    }
  }
}

// Accumulator register r of m tile i holds row 16*warp + lane/4 + 8*h and
// column 8*j + 2*(lane%4) + c of the tile, r = 4*j + 2*h + c: each thread
// owns pairs of adjacent columns.
//
// The register epilogue (beta != 0, or N not a whole number of 16-byte
// units): the output is stored straight from the registers, C read only
// where beta != 0 (%pbeta; C may hold NaN otherwise). A pair goes out in
// one store (b32, or v2.f32 for tf32) where both columns are inside N and
// %pvec says that every pair is aligned (ldc even, C aligned to the pair);
// otherwise each column alone.
void EmitEpilogue(Ptx& p, const Tiling& t) {
  const bool tf32 = t.prec == DType::kTf32;
  const bool fp16 = t.prec == DType::kFp16;
  const std::string cvt_pair =
      fp16 ? "cvt.rn.f16x2.f32" : "cvt.rn.bf16x2.f32";
  const std::string cvt_in = fp16 ? "cvt.f32.f16" : "cvt.f32.bf16";
  const int64_t per_row = t.bn / 2;
  for (int64_t i = 0; i < t.mt; ++i) {
    for (int64_t h = 0; h < 2; ++h) {
      p << "\tadd.u32 %row, %rbase, " << N(i * 64 + 8 * h) << ";\n"
        << "\tsetp.lt.u32 %prow, %row, %M;\n"
        << "\tmul.wide.u32 %d0, %row, %ldc;\n"
        << "\tadd.u64 %d0, %d0, %cb64;\n"
        << "\tshl.b64 %d0, %d0, " << N(Log2(t.esize)) << ";\n"
        << "\tadd.u64 %ptr, %C, %d0;\n";
      for (int64_t j = 0; j < t.bn / 8; ++j) {
        const int64_t col = 8 * j;
        const std::string acc0 = "%acc" + N(i * per_row + 4 * j + 2 * h);
        const std::string acc1 = "%acc" + N(i * per_row + 4 * j + 2 * h + 1);
        const std::string a0 = "[%ptr+" + N(col * t.esize) + "]";
        const std::string a1 = "[%ptr+" + N((col + 1) * t.esize) + "]";
        p << "\tsetp.gt.and.s32 %pe, %nrem, " << N(col) << ", %prow;\n"
          << "\tsetp.gt.and.s32 %pe1, %nrem, " << N(col + 1) << ", %prow;\n"
          << "\tand.pred %pv, %pe1, %pvec;\n\tnot.pred %pnv, %pv;\n"
          << "\tand.pred %ps0, %pe, %pnv;\n\tand.pred %ps1, %pe1, %pnv;\n"
          << "\tmul.f32 %v, " << acc0 << ", %alpha;\n"
          << "\tmul.f32 %v1, " << acc1 << ", %alpha;\n";
        p << "\tand.pred %pl0, %pe, %pbeta;\n"
          << "\tand.pred %pl1, %pe1, %pbeta;\n";
        if (tf32) {
          p << "\tmov.f32 %cf, 0f00000000;\n\tmov.f32 %cf1, 0f00000000;\n"
            << "\t@%pl0 ld.global.f32 %cf, " << a0 << ";\n"
            << "\t@%pl1 ld.global.f32 %cf1, " << a1 << ";\n";
        } else {
          p << "\tmov.b16 %hs, 0;\n\tmov.b16 %hs1, 0;\n"
            << "\t@%pl0 ld.global.b16 %hs, " << a0 << ";\n"
            << "\t@%pl1 ld.global.b16 %hs1, " << a1 << ";\n"
            << "\t" << cvt_in << " %cf, %hs;\n"
            << "\t" << cvt_in << " %cf1, %hs1;\n";
        }
        p << "\tfma.rn.f32 %v, %cf, %beta, %v;\n"
          << "\tfma.rn.f32 %v1, %cf1, %beta, %v1;\n";
        if (tf32) {
          p << "\t@%pv st.global.v2.f32 " << a0 << ", {%v, %v1};\n"
            << "\t@%ps0 st.global.f32 " << a0 << ", %v;\n"
            << "\t@%ps1 st.global.f32 " << a1 << ", %v1;\n";
        } else {
          p << "\t" << cvt_pair << " %w, %v1, %v;\n"
            << "\t@%pv st.global.b32 " << a0 << ", %w;\n"
            << "\tmov.b32 {%hs, %hs1}, %w;\n"
            << "\t@%ps0 st.global.b16 " << a0 << ", %hs;\n"
            << "\t@%ps1 st.global.b16 " << a1 << ", %hs1;\n";
        }
      }
    }
  }
}

// beta == 0 and N a whole number of 16-byte units (v4; the copy engine
// writes whole 16-byte units of a row, so with a partial unit it would
// write columns past N, measured on the H100): the consumer warpgroup's
// rows go out through its two shared buffers (%ebuf, %ebuf +
// kEpilogueBufferBytes) in chunks of one TMA box: m tile i, columns [c * atom, (c + 1) * atom) of the tile. A thread
// writes its pairs of columns (alpha applied, converted) to the buffer in
// the 128-byte swizzle the box's tensor map names: row r at r * 128, its
// 16-byte unit u at (u ^ (r % 8)) * 16. Every row a thread owns has
// r % 8 = lane / 4, so the XOR is a per-thread constant (%sx, set up with
// %ebase by EmitEpilogueSetup). Then fence.proxy.async (the copy engine
// reads what the threads wrote), a barrier of the warpgroup (%bid), and the
// elected thread (%pel) issues the tensor store and commits it as a bulk
// group. Before a buffer is written again its previous store must have
// read it: the elected thread waits for all but the newest group
// (wait_group.read 1), or all at a tile's first chunk, then the barrier.
void EmitTmaStoreEpilogue(Ptx& p, const Tiling& t) {
  const bool tf32 = t.prec == DType::kTf32;
  const bool fp16 = t.prec == DType::kFp16;
  const int64_t per_row = t.bn / 2;
  const int64_t chunks = t.bn / t.atom;  // whole boxes (Tiling::tma_store)
  // 8-column groups of a chunk: 8 (bf16, fp16: 16 bytes each) or 4 (tf32:
  // 32 bytes each, two units).
  const int64_t groups = t.atom / 8;
  const int64_t group_bytes = 8 * t.esize;
  p << "\t// ---- beta == 0: through shared memory, TMA tensor stores of "
    << N(t.atom) << "-column x 64-row boxes\n"
    << "\tmul.lo.u32 %erow, %cw, " << N(t.rows_per_consumer) << ";\n"
    << "\tadd.u32 %erow, %erow, %m0;\n";
  for (int64_t i = 0; i < t.mt; ++i) {
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t q = i * chunks + c;
      const int64_t buf = (q % 2) * kEpilogueBufferBytes;
      if (q == 0 || q >= 2) {
        p << "\t@%pel cp.async.bulk.wait_group.read " << (q == 0 ? "0" : "1")
          << ";\n\tbar.sync %bid, 128;\n";
      }
      for (int64_t jj = 0; jj < groups; ++jj) {
        const int64_t j = c * groups + jj;  // 8-column group in the tile
        p << "\txor.b32 %tmp, %sx, " << N(jj * group_bytes) << ";\n"
          << "\tadd.u32 %ea, %ebase, %tmp;\n";
        for (int64_t h = 0; h < 2; ++h) {
          const std::string acc0 = "%acc" + N(i * per_row + 4 * j + 2 * h);
          const std::string acc1 = "%acc" + N(i * per_row + 4 * j + 2 * h + 1);
          const std::string at = "[%ea+" + N(buf + h * 8 * kSwizzleBytes) + "]";
          p << "\tmul.f32 %v, " << acc0 << ", %alpha;\n"
            << "\tmul.f32 %v1, " << acc1 << ", %alpha;\n";
          if (tf32) {
            p << "\tst.shared.v2.f32 " << at << ", {%v, %v1};\n";
          } else {
            p << "\t" << (fp16 ? "cvt.rn.f16x2.f32" : "cvt.rn.bf16x2.f32")
              << " %w, %v1, %v;\n"
              << "\tst.shared.b32 " << at << ", %w;\n";
          }
        }
      }
      p << "\tfence.proxy.async.shared::cta;\n\tbar.sync %bid, 128;\n"
        << "\tadd.u32 %cx, %n0, " << N(c * t.atom) << ";\n"
        << "\tadd.u32 %cy, %erow, " << N(i * 64) << ";\n"
        << "\tadd.u32 %dst, %ebuf, " << N(buf) << ";\n"
        << "\t@%pel cp.async.bulk.tensor.2d.global.shared::cta.bulk_group "
           "[%tmc, {%cx, %cy}], [%dst];\n"
        << "\t@%pel cp.async.bulk.commit_group;\n";
    }
  }
}

// K_G > 1: the unscaled fp32 accumulators to W[z][row][col] (M x N,
// row-major), pairs of columns in one v2.f32 store where N is even.
void EmitPartialEpilogue(Ptx& p, const Tiling& t) {
  const int64_t per_row = t.bn / 2;
  p << "\t// ---- split-K: fp32 partial sums to W[z][row][col] for the reduce "
       "entry\n"
    << "\tmul.lo.u32 %tmp, %z, %M;\n";
  for (int64_t i = 0; i < t.mt; ++i) {
    for (int64_t h = 0; h < 2; ++h) {
      p << "\tadd.u32 %row, %rbase, " << N(i * 64 + 8 * h) << ";\n"
        << "\tsetp.lt.u32 %prow, %row, %M;\n"
        << "\tadd.u32 %r, %row, %tmp;\n"
        << "\tmul.wide.u32 %d0, %r, %N;\n"
        << "\tadd.u64 %d0, %d0, %cb64;\n"
        << "\tshl.b64 %d0, %d0, 2;\n"
        << "\tadd.u64 %ptr, %W, %d0;\n";
      for (int64_t j = 0; j < t.bn / 8; ++j) {
        const int64_t col = 8 * j;
        const std::string acc0 = "%acc" + N(i * per_row + 4 * j + 2 * h);
        const std::string acc1 = "%acc" + N(i * per_row + 4 * j + 2 * h + 1);
        const std::string a0 = "[%ptr+" + N(col * 4) + "]";
        const std::string a1 = "[%ptr+" + N((col + 1) * 4) + "]";
        p << "\tsetp.gt.and.s32 %pe, %nrem, " << N(col) << ", %prow;\n"
          << "\tsetp.gt.and.s32 %pe1, %nrem, " << N(col + 1) << ", %prow;\n"
          << "\tand.pred %pv, %pe1, %pwvec;\n\tnot.pred %pnv, %pv;\n"
          << "\tand.pred %ps0, %pe, %pnv;\n\tand.pred %ps1, %pe1, %pnv;\n"
          << "\t@%pv st.global.v2.f32 " << a0 << ", {" << acc0 << ", " << acc1
          << "};\n"
          << "\t@%ps0 st.global.f32 " << a0 << ", " << acc0 << ";\n"
          << "\t@%ps1 st.global.f32 " << a1 << ", " << acc1 << ";\n";
      }
    }
  }
}

// A slot of a tile's fp32 accumulators in register order (the tail
// split's, in global memory, and conv.wgmma_sc's, in shared memory):
// accumulators 4q .. 4q + 3 of consumer thread c at byte (q * threads + c)
// * 16 from the slot, `base` holding this thread's address in it. Stores
// this thread's accumulators with `store` (e.g. "st.global").
void EmitSlotStore(Ptx& p, const Tiling& t, const char* store,
                   const char* base) {
  const int64_t threads = 128 * t.consumers;
  for (int64_t q = 0; q < t.mt * t.bn / 8; ++q) {
    p << "	" << store << ".v4.f32 [" << base << "+" << N(q * threads * 16)
      << "], {%acc" << N(4 * q) << ", %acc" << N(4 * q + 1) << ", %acc"
      << N(4 * q + 2) << ", %acc" << N(4 * q + 3) << "};\n";
  }
}
// Adds the slot at `base` (read with `load`, e.g. "ld.global.cg") to this
// thread's accumulators.
void EmitSlotAdd(Ptx& p, const Tiling& t, const char* load, const char* base) {
  static const char* kVals[] = {"%v", "%v1", "%cf", "%cf1"};
  const int64_t threads = 128 * t.consumers;
  for (int64_t q = 0; q < t.mt * t.bn / 8; ++q) {
    p << "	" << load << ".v4.f32 {%v, %v1, %cf, %cf1}, [" << base << "+"
      << N(q * threads * 16) << "];\n";
    for (int64_t e = 0; e < 4; ++e) {
      p << "	add.f32 %acc" << N(4 * q + e) << ", %acc" << N(4 * q + e)
        << ", " << kVals[e] << ";\n";
    }
  }
}

// conv.wgmma_sc and gemm.wgmma_sc (Tiling::split_cluster): the cluster's
// splits add their sums in the first program's shared memory. Slot z - 1
// holds split z's accumulators in register order, as the tail split's
// slots do: 4q .. 4q + 3 of consumer thread c at byte (q * threads + c) *
// 16. Split z > 0 stores into the first program's slot through
// distributed shared memory and arrives on its mbarrier (release at
// cluster scope: each thread's stores are visible before its arrival
// counts); the first program waits for the
// (kg - 1) * threads arrivals (acquire), adds slots 1 .. kg - 1 in order
// (the same bits every run) and goes on to the tile's epilogue. The other
// splits then exit; the first program waited for every store into its
// shared memory, so none lands after it exits.
void EmitClusterSplitEpilogue(Ptx& p, const Tiling& t) {
  const int64_t acc = t.mt * t.bn / 2;
  const int64_t threads = 128 * t.consumers;
  const int64_t slot_bytes = acc * 4 * threads;  // bm * bn * 4
  p << "\t// ---- " << (t.conv ? "conv" : "gemm")
    << ".wgmma_sc: the splits add their sums in the first "
       "program's shared memory\n"
    << "\tsetp.eq.u32 %pp, %z, 0;\n\t@%pp bra SC_FIRST;\n"
    << "\tsub.u32 %tmp, %z, 1;\n"
    << "\tmad.lo.u32 %tmp, %tmp, " << N(slot_bytes) << ", %rslot;\n"
    << "\tmapa.shared::cluster.u32 %tmp, %tmp, 0;\n";
  EmitSlotStore(p, t, "st.shared::cluster", "%tmp");
  p << "\tmapa.shared::cluster.u32 %tmp, %red, 0;\n"
    << "\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%tmp];\n"
    << "\tbra CNEXT;\n"
    << "SC_FIRST:\n"
    << "\t// the first split: wait for the others' sums, add them in order\n"
    << "SC_WAIT:\n"
    << "\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %pw, "
       "[%red], %rph;\n"
    << "\t@!%pw bra SC_WAIT;\n"
    << "\txor.b32 %rph, %rph, 1;\n"
    // A loop over the slots that ptxas keeps a loop: unrolled, it hoists
    // every slot's loads ahead of the adds (a kernel of 48 accumulators
    // took 120 registers with kg = 2, 216 with 4 and spilled with 5).
    << "\tmov.u32 %tmp, %rslot;\n\tmov.u32 %r, 1;\n"
    << "SC_ADD:\n"
    << "\t.pragma \"nounroll\";\n"
    << "\tsetp.ge.u32 %pp, %r, " << N(t.kg) << ";\n\t@%pp bra SC_ADDED;\n";
  EmitSlotAdd(p, t, "ld.shared", "%tmp");
  p << "\tadd.u32 %tmp, %tmp, " << N(slot_bytes) << ";\n"
    << "\tadd.u32 %r, %r, 1;\n\tbra SC_ADD;\n"
    << "SC_ADDED:\n";
}

// K_G > 1: the workspace's address and pair alignment.
void EmitPartialSetup(Ptx& p, const Tiling& t) {
  if (t.tail > 1) {
    p << "\tld.param.u64 %W, [param_W];\n"
      << "\t// the tail split: this consumer thread's 16-byte column of a "
         "slot, thread 0 of the first consumer counts\n"
      << "\tmad.lo.u32 %tmp, %cw, 128, %ctid;\n\tmul.wide.u32 %tofs, %tmp, "
         "16;\n"
      << "\tsetp.eq.u32 %pfix, %tmp, 0;\n";
    return;
  }
  if (t.kg == 1) return;
  if (t.split_cluster) {
    p << "\t// " << (t.conv ? "conv" : "gemm")
      << ".wgmma_sc: this consumer thread's 16 bytes of a slot "
         "(slots from the reduction's mbarrier + 16), the mbarrier's phase\n"
      << "\tmad.lo.u32 %tmp, %cw, 128, %ctid;\n"
      << "\tshl.b32 %tmp, %tmp, 4;\n\tadd.u32 %rslot, %red, 16;\n"
      << "\tadd.u32 %rslot, %rslot, %tmp;\n\tmov.u32 %rph, 0;\n";
    return;
  }
  p << "\tld.param.u64 %W, [param_W];\n"
    << "\t// W rows are N floats: pairs are 8-byte aligned where N is even\n"
    << "\tand.b32 %tmp, %N, 1;\n\tsetp.eq.u32 %pwvec, %tmp, 0;\n";
}

// The tail split's epilogue of a split unit (%psplit; gemm_wgmma.h). Slot
// s of the workspace holds a tile's fp32 accumulators in register order:
// accumulators 4q .. 4q + 3 of consumer thread c (cw * 128 + ctid) at byte
// (q * threads + c) * 16, so every store and load of a warp is 512
// contiguous bytes. Split z > 0 stores to slot (z - 1) * L + i, fences and
// counts on counter i after a barrier of the consumers (named barrier 3);
// split 0 (tile i's own) waits for S - 1 counts, zeroes the counter, adds
// slots z = 1 .. S - 1 in order and goes on to the tile's epilogue.
void EmitTailEpilogue(Ptx& p, const Tiling& t) {
  const int64_t acc = t.mt * t.bn / 2;
  const int64_t threads = 128 * t.consumers;
  const int64_t slot_bytes = acc * 4 * threads;  // bm * bn * 4
  p << "\t@!%psplit bra TAIL_END;\n"
    << "\t// ---- tail split: tile i = %tile - %tF, its counter and slots\n"
    << "\tsub.u32 %ti, %tile, %tF;\n"
    << "\tmul.wide.u32 %dc, %ti, 4;\n\tadd.u64 %dc, %dc, %W;\n"
    << "\tadd.u64 %dc, %dc, " << N(t.tail_slots * slot_bytes) << ";\n"
    << "\tsetp.eq.u32 %pp, %z, 0;\n\t@%pp bra TAIL_FIX;\n"
    << "\t// split z > 0: the partial sums to slot (z - 1) * L + i\n"
    << "\tsub.u32 %tmp, %z, 1;\n\tmad.lo.u32 %tmp, %tmp, %tL, %ti;\n"
    << "\tmul.wide.u32 %d0, %tmp, " << N(slot_bytes) << ";\n"
    << "\tadd.u64 %d0, %d0, %tofs;\n\tadd.u64 %ptr, %W, %d0;\n";
  EmitSlotStore(p, t, "st.global", "%ptr");
  p << "\tfence.acq_rel.gpu;\n"
    << "\tbar.sync 3, " << N(threads) << ";\n"
    << "\t@%pfix red.release.gpu.global.add.u32 [%dc], 1;\n"
    << "\tbra CNEXT;\n"
    << "TAIL_FIX:\n"
    << "\t// split 0: wait for the other splits, then add their sums in "
       "order\n"
    << "\t@!%pfix bra TAIL_WAITED;\n"
    << "\tsub.u32 %r, %tS, 1;\n"
    << "TAIL_SPIN:\n"
    << "\tld.acquire.gpu.global.u32 %tmp, [%dc];\n"
    << "\tsetp.lt.u32 %pp, %tmp, %r;\n\t@%pp bra TAIL_SPIN;\n"
    << "\tst.relaxed.gpu.global.u32 [%dc], 0;\n"
    << "TAIL_WAITED:\n"
    << "\tbar.sync 3, " << N(threads) << ";\n"
    << "\tfence.acq_rel.gpu;\n"
    << "\tmul.wide.u32 %d0, %ti, " << N(slot_bytes) << ";\n"
    << "\tadd.u64 %d0, %d0, %tofs;\n\tadd.u64 %ptr, %W, %d0;\n"
    << "\tmul.wide.u32 %d0, %tL, " << N(slot_bytes) << ";\n"
    << "\tmov.u32 %r, 1;\n"
    << "TAIL_ADD:\n"
    << "\tsetp.ge.u32 %pp, %r, %tS;\n\t@%pp bra TAIL_END;\n";
  EmitSlotAdd(p, t, "ld.global.cg", "%ptr");
  p << "\tadd.u64 %ptr, %ptr, %d0;\n\tadd.u32 %r, %r, 1;\n"
    << "\tbra TAIL_ADD;\n"
    << "TAIL_END:\n";
}

// The launch-wide part of the epilogue, before the tile loop.
void EmitEpilogueSetup(Ptx& p, const Tiling& t) {
  p << "\tld.param.u64 %C, [param_C];\n\tld.param.u32 %ldc, [param_ldc];\n"
    << "\tld.param.f32 %alpha, [param_alpha];\n"
    << "\tld.param.f32 %beta, [param_beta];\n"
    << "\t// pairs of columns are stored whole where ldc is even and C is "
       "aligned to a pair\n"
    << "\tand.b32 %tmp, %ldc, 1;\n\tsetp.eq.u32 %pvec, %tmp, 0;\n"
    << "\tcvt.u32.u64 %tmp, %C;\n"
    << "\tand.b32 %tmp, %tmp, " << N(2 * t.esize - 1) << ";\n"
    << "\tsetp.eq.and.u32 %pvec, %tmp, 0, %pvec;\n"
    << "\tsetp.neu.f32 %pbeta, %beta, 0f00000000;\n";
  if (!t.tma_store) return EmitPartialSetup(p, t);
  p << "\t// the TMA-store epilogue where beta == 0 and N * element bytes is "
       "a multiple of 16 (%ptma)\n"
    << (t.packed ? "\t// gemm.wgmma_pk: and ldc too (any ldc is taken)\n"
                   "\tor.b32 %tmp, %N, %ldc;\n"
                   "\tand.b32 %tmp, %tmp, "
                 : "\tand.b32 %tmp, %N, ")
    << N(16 / t.esize - 1) << ";\n"
    << "\tsetp.eq.u32 %ptma, %tmp, 0;\n"
    << "\tnot.pred %pl0, %pbeta;\n\tand.pred %ptma, %ptma, %pl0;\n"
    << "\t// the TMA-store epilogue: C's tensor map, this warpgroup's two "
       "buffers, barrier 1 + cw, thread 0 of the warpgroup issues\n"
    << "\tmov.b64 %tmc, tmap_c;\n\tcvta.param.u64 %tmc, %tmc;\n"
    << "\tmad.lo.u32 %ebuf, %cw, " << N(kEpilogueBytesPerConsumer)
    << ", %sm;\n"
    << "\tadd.u32 %ebuf, %ebuf, " << N(t.ring) << ";\n"
    << "\tadd.u32 %bid, %cw, 1;\n"
    << "\tsetp.eq.u32 %pel, %ctid, 0;\n"
    << "\t// this thread's first row (16 * warp + lane / 4) and byte in a "
       "unit; %sx: the swizzle's XOR of its units (row % 8 = lane / 4)\n"
    << "\tshl.b32 %tmp, %warp, 4;\n\tshr.u32 %sx, %lane, 2;\n"
    << "\tadd.u32 %tmp, %tmp, %sx;\n"
    << "\tmad.lo.u32 %ebase, %tmp, " << N(kSwizzleBytes) << ", %ebuf;\n"
    << "\tshl.b32 %sx, %sx, 4;\n";
  if (t.prec == DType::kTf32) {
    // fp32 pairs: 8 bytes; lane % 4 picks unit (lane % 4) / 2 of a
    // 32-byte group and byte 8 * (lane % 2) in it.
    p << "\tand.b32 %tmp, %lane, 1;\n\tshl.b32 %tmp, %tmp, 3;\n"
      << "\tadd.u32 %ebase, %ebase, %tmp;\n"
      << "\tand.b32 %tmp, %lane, 2;\n\tshl.b32 %tmp, %tmp, 3;\n"
      << "\txor.b32 %sx, %sx, %tmp;\n";
  } else {
    // 16-bit pairs: 4 bytes, at byte 4 * (lane % 4) of a 16-byte unit.
    p << "\tand.b32 %tmp, %lane, 3;\n\tshl.b32 %tmp, %tmp, 2;\n"
      << "\tadd.u32 %ebase, %ebase, %tmp;\n";
  }
  EmitPartialSetup(p, t);
}

// The GEMM entry's parameter list after "(": gemm.wgmma's (and
// gemm.wgmma_rs's), and with `packed` gemm.wgmma_pk's main and pack
// entries', which take A, B, lda and ldb after tmap_c.
std::string GemmEntryParams(bool packed) {
  return std::string("\t.param .align 64 .b8 tmap_a[128],\n"
                     "\t.param .align 64 .b8 tmap_b[128],\n"
                     "\t.param .u64 param_C,\n\t.param .u32 param_M,\n"
                     "\t.param .u32 param_N,\n"
                     "\t.param .u32 param_K,\n\t.param .u32 param_ldc,\n"
                     "\t.param .f32 param_alpha,\n\t.param .f32 param_beta,\n"
                     "\t.param .u64 param_W,\n"
                     "\t.param .align 64 .b8 tmap_c[128]") +
         (packed ? ",\n\t.param .u64 param_A,\n\t.param .u64 param_B,\n"
                   "\t.param .u32 param_lda,\n\t.param .u32 param_ldb)\n"
                 : ")\n");
}

}  // namespace

std::string MainEntry(const Tiling& t, const std::string& arch) {
  Ptx p;
  const int64_t threads = 128 * (1 + t.consumers);
  const int64_t acc = t.mt * t.bn / 2;
  if (t.conv && t.split_cluster) {
    p << "//\n// blocktune conv.wgmma_sc v"
      << N(kConvWgmmaClusterSplitGeneratorVersion) << ": " << ToString(t.prec)
      << ", implicit GEMM: A the NHWC input by im2col TMA, B the KRSC filter "
         "(C, R*S, K); each tile's reduction split over the K_G programs of "
         "a cluster, the partial sums added in the first program's shared "
         "memory\n";
  } else if (t.conv && t.kg > 1) {
    p << "//\n// blocktune conv.wgmma_sk v" << N(kConvWgmmaSplitGeneratorVersion)
      << ": " << ToString(t.prec)
      << ", implicit GEMM: A the NHWC input by im2col TMA, B the KRSC filter "
         "(C, R*S, K); each tile's reduction split over K_G programs, fp32 "
         "partial sums to W, the reduce entry below adds them\n";
  } else if (t.conv) {
    p << "//\n// blocktune conv.wgmma v" << N(kConvWgmmaGeneratorVersion) << ": "
      << ToString(t.prec)
      << ", implicit GEMM: A the NHWC input by im2col TMA, B the KRSC filter "
         "(C, R*S, K)\n";
  } else if (t.split_cluster) {
    p << "//\n// blocktune gemm.wgmma_sc v"
      << N(kGemmWgmmaClusterSplitGeneratorVersion) << ": " << ToString(t.prec)
      << ", A " << (t.a_kmajor ? "K-major (N)" : "M-major (T)") << ", B "
      << (t.b_kmajor ? "K-major (T)" : "N-major (N)")
      << "; each tile's K split over the K_G programs of a cluster, the "
         "partial sums added in the first program's shared memory\n";
  } else if (t.a_regs) {
    p << "//\n// blocktune gemm.wgmma_rs v" << N(kGemmWgmmaRsGeneratorVersion)
      << ": " << ToString(t.prec)
      << ", A M-major in shared memory, read into registers; B K-major"
      << (t.c_transposed ? "; C stored transposed (C^T = B^T A^T)" : "")
      << "\n";
  } else if (t.packed) {
    p << "//\n// blocktune gemm.wgmma_pk v"
      << N(kGemmWgmmaPackedGeneratorVersion) << ": " << ToString(t.prec)
      << ", A " << (t.a_kmajor ? "K-major (N)" : "M-major (T)") << ", B "
      << (t.b_kmajor ? "K-major (T)" : "N-major (N)")
      << " as read: packed operands from the workspace (pack entry below)\n";
  } else {
    p << "//\n// blocktune gemm.wgmma v" << N(kGemmWgmmaGeneratorVersion)
      << ": " << ToString(t.prec) << ", A "
      << (t.a_kmajor ? "K-major (N)" : "M-major (T)") << ", B "
      << (t.b_kmajor ? "K-major (T)" : "N-major (N)") << "\n";
  }
  p
    << "// bm=" << N(t.bm) << " bn=" << N(t.bn) << " bk=" << N(t.bk)
    << " stages=" << N(t.stages) << " consumers=" << N(t.consumers)
    << " group_m=" << N(t.group_m) << " K_G=" << N(t.kg)
    << " cluster_m=" << N(t.cm)
    << (t.tail > 1 ? " tail=" + N(t.tail) + " (gemm.wgmma_ts v" +
                         N(kGemmWgmmaTailGeneratorVersion) +
                         ": the last round's tiles split over K)"
                   : std::string())
    << "; " << N(threads) << " threads, "
    << N(t.mt) << " m64n" << N(t.bn) << " tile(s) per consumer warpgroup\n"
    << "// shared: stage " << N(t.stage) << " B (A " << N(t.a_panels)
    << " panel(s) of " << N(t.a_panel_bytes) << " B, B " << N(t.b_panels)
    << " panel(s) of " << N(t.b_panel_bytes) << " B), ring " << N(t.ring)
    << " B, then full[" << N(t.stages) << "], empty[" << N(t.stages)
    << "] mbarriers\n//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n"
    << ".extern .shared .align 1024 .b8 smem[];\n\n";
  if (t.conv) {
    p << ".visible .entry blocktune_conv_wgmma(\n"
      << "\t.param .align 64 .b8 tmap_a[128],\n"
      << "\t.param .align 64 .b8 tmap_b[128],\n"
      << "\t.param .align 64 .b8 tmap_c[128],\n"
      << "\t.param .u64 param_C,\n\t.param .u32 param_M,\n"
      << "\t.param .u32 param_N,\n\t.param .u32 param_K,\n"
      << "\t.param .u32 param_ldc,\n"
      << "\t.param .f32 param_alpha,\n\t.param .f32 param_beta,\n"
      << "\t.param .u32 pCin,\n\t.param .u32 pP,\n\t.param .u32 pQ,\n"
      << "\t.param .u32 pS,\n\t.param .u32 ppadh,\n\t.param .u32 ppadw,\n"
      << "\t.param .u32 psth,\n\t.param .u32 pstw,\n"
      << "\t.param .u32 pdlh,\n\t.param .u32 pdlw"
      << (t.kg > 1 && !t.split_cluster ? ",\n\t.param .u64 param_W)\n"
                                       : ")\n");
  } else {
    p << ".visible .entry blocktune_gemm_wgmma" << (t.a_regs ? "_rs" : "")
      << "(\n" << GemmEntryParams(t.packed);
  }
  p << ".maxntid " << N(threads) << ", 1, 1\n.minnctapersm 1\n"
    << (t.cm == 2 ? ".reqnctapercluster 2, 1, 1\n" : "")
    << (t.split_cluster ? ".reqnctapercluster " + N(t.kg) + ", 1, 1\n" : "")
    << "{\n"
    << "\t.reg .pred %pp, %pw, %plane, %pone, %prow, %pe, %pe1, %pv, %pnv, "
       "%ps0, %ps1, %pvec, %pbeta, %pwvec;\n"
    << "\t.reg .b32 %thr, %wg, %cw, %ctid, %warp, %lane, %M, %N, %K, %ldc;\n"
    << "\t.reg .b32 %tile, %tiles, %tiles_m, %tiles_n, %in_group, %group, "
       "%first_m, %gsize, %r, %tile_m, %tile_n, %m0, %n0, %ktiles;\n"
    << "\t.reg .b32 %sm, %full, %empty, %sbuf, %boff, %fb, %eb, %prev, %dst, "
       "%cx, %cy, %kt, %k0, %st, %ph, %par, %tmp, %aoff;\n"
    << "\t.reg .b32 %rbase, %cbase, %nrem, %row, %w, %unit, %units, %z, %kb, "
       "%kend;\n"
    << (t.cm == 2 ? "\t.reg .b32 %rank, %peer, %rrow, %rofs, %rprev;\n"
                    "\t.reg .b16 %mask;\n"
                  : "")
    << (t.b_per_box ? "\t.reg .b64 %dbj;\n" : "")
    << "\t.reg .b64 %tma, %tmb, %tmc, %da, %db, %dak, %dbk, %C, %ptr, %d0, "
       "%cb64, %W;\n"
    << "\t.reg .b32 %ebuf, %ebase, %ea, %sx, %bid, %erow;\n"
    << "\t.reg .pred %pel, %ptma, %pl0, %pl1;\n"
    << "\t.reg .f32 %alpha, %beta, %v, %v1, %cf, %cf1;\n"
    << "\t.reg .b16 %hs, %hs1;\n"
    << "\t.reg .f32 %acc<" << N(acc) << ">;\n";
  if (t.split_cluster) p << "\t.reg .b32 %red, %rslot, %rph;\n";
  if (t.tail > 1) {
    p << "\t.reg .b32 %tP, %tF, %tL, %tLd, %tS, %tsd, %tj, %ti;\n"
      << "\t.reg .b64 %tofs, %dc;\n"
      << "\t.reg .pred %ptail, %psplit, %pfix;\n";
  }
  if (t.a_regs) {
    p << "\t.reg .b32 %fa<" << N(2 * (t.bk / t.wk) * t.mt * 4)
      << ">, %ab0, %ab1, %ab2, %ab3, %ao0, %ao1, %ao2, %ao3, %apan, %au, "
         "%at;\n";
  }
  if (t.c_transposed) p << "\t.reg .b64 %ptr1, %ldc4, %ldc32;\n";
  p << "\n";
  if (t.conv) {
    p << "\t.reg .b32 %Cin, %Pout, %Qout, %Sf, %padh, %padw, %sth, %stw, "
         "%dlh, %dlw, %PQ, %CB, %cnc, %chc, %cwc, %tr, %ts, %rs;\n"
      << "\t.reg .b16 %ow, %oh;\n\n";
  }
  p << "\tmov.u32 %thr, %tid.x;\n"
    << "\tld.param.u32 %M, [param_M];\n\tld.param.u32 %N, [param_N];\n"
    << "\tld.param.u32 %K, [param_K];\n";
  if (t.conv) {
    p << "\tld.param.u32 %Cin, [pCin];\n\tld.param.u32 %Pout, [pP];\n"
      << "\tld.param.u32 %Qout, [pQ];\n\tld.param.u32 %Sf, [pS];\n"
      << "\tld.param.u32 %padh, [ppadh];\n\tld.param.u32 %padw, [ppadw];\n"
      << "\tld.param.u32 %sth, [psth];\n\tld.param.u32 %stw, [pstw];\n"
      << "\tld.param.u32 %dlh, [pdlh];\n\tld.param.u32 %dlw, [pdlw];\n"
      << "\tmul.lo.u32 %PQ, %Pout, %Qout;\n";
  }
  p
    << "\t// ---- tiles of C: programs take tiles %ctaid.x, + %nctaid.x, ... "
       "(one each when the grid has one program per tile), in a grouped "
       "raster of "
    << N(t.group_m) << " rows of tiles\n";
  if (t.cm == 2) {
    p << "\t// cluster pairs: %tiles_m counts rows of pairs of tiles, %tile "
         "pairs\n"
      << "\tmov.u32 %rank, %cluster_ctarank;\n"
      << "\txor.b32 %peer, %rank, 1;\n";
  }
  EmitCeilDiv(p, "%tiles_m", "%M", t.bm * t.cm);
  EmitCeilDiv(p, "%tiles_n", "%N", t.bn);
  if (t.conv) {
    p << "\t// k tiles: R*S taps (K / C) of ceil(C / bk) channel steps\n";
    EmitCeilDiv(p, "%CB", "%Cin", t.bk);
    p << "\tdiv.u32 %tmp, %K, %Cin;\n\tmul.lo.u32 %ktiles, %tmp, %CB;\n";
  } else {
    EmitCeilDiv(p, "%ktiles", "%K", t.bk);
  }
  p << "\tmul.lo.u32 %tiles, %tiles_m, %tiles_n;\n";
  if (t.tail > 1) {
    // The tail split (gemm_wgmma.h): R = tiles / P whole rounds (%tF
    // units), L = tiles - %tF tiles left, each split %tS ways.
    p << "\t// ---- tail split: the last round's L tiles split over K into "
         "S = min(tail, P / L, ktiles, slots / L + 1) units\n"
      << "\tmov.u32 %tP, %nctaid.x;\n"
      << "\tdiv.u32 %tF, %tiles, %tP;\n\tmul.lo.u32 %tF, %tF, %tP;\n"
      << "\tsub.u32 %tL, %tiles, %tF;\n\tmax.u32 %tLd, %tL, 1;\n"
      << "\tdiv.u32 %tS, %tP, %tLd;\n"
      << "\tmin.u32 %tS, %tS, " << N(t.tail) << ";\n"
      << "\tmin.u32 %tS, %tS, %ktiles;\n"
      << "\tdiv.u32 %tmp, " << N(t.tail_slots) << ", %tLd;\n"
      << "\tadd.u32 %tmp, %tmp, 1;\n\tmin.u32 %tS, %tS, %tmp;\n"
      << "\tsetp.gt.u32 %pp, %tL, " << N(t.tail_slots) << ";\n"
      << "\tselp.u32 %tS, 1, %tS, %pp;\n"
      << "\tmax.u32 %tS, %tS, 1;\n"
      << "\tmad.lo.u32 %units, %tL, %tS, %tF;\n";
  } else if (t.split_cluster) {
    p << "\tmov.u32 %units, %tiles;  // one cluster of K_G splits per tile\n";
  } else {
    p << "\tmul.lo.u32 %units, %tiles, " << N(t.kg) << ";\n";
  }
  p << "\tmul.lo.u32 %in_group, %tiles_n, " << N(t.group_m) << ";\n"
    << "\t// ---- shared memory: the ring from a 1024-byte boundary (the "
       "128-byte swizzle's atom), then the mbarriers\n"
    << "\tmov.u32 %sm, smem;\n\tadd.u32 %sm, %sm, 1023;\n"
    << "\tand.b32 %sm, %sm, -1024;\n"
    << "\tadd.u32 %full, %sm, " << N(t.ring + t.epilogue) << ";\n"
    << "\tadd.u32 %empty, %full, " << N(8 * t.stages) << ";\n";
  if (t.split_cluster)
    p << "\tadd.u32 %red, %empty, " << N(8 * t.stages) << ";\n";
  p << "\tsetp.ne.u32 %pp, %thr, 0;\n\t@%pp bra INIT_DONE;\n";
  for (int64_t s = 0; s < t.stages; ++s) {
    p << "\tmbarrier.init.shared::cta.b64 [%full+" << N(8 * s) << "], 1;\n"
      << "\tmbarrier.init.shared::cta.b64 [%empty+" << N(8 * s) << "], "
      << N(4 * t.consumers * t.cm) << ";\n";
  }
  if (t.split_cluster) {
    p << "\tmbarrier.init.shared::cta.b64 [%red], "
      << N((t.kg - 1) * 128 * t.consumers) << ";\n";
  }
  p << "\tfence.mbarrier_init.release.cluster;\n"
    << "INIT_DONE:\n";
  // The first program's mbarrier is initialized before the others arrive.
  if (t.cm == 2 || t.split_cluster)
    EmitClusterSync(p, t.relaxed_start);
  else
    p << "\tbar.sync 0;\n";
  p << "\tshr.u32 %wg, %thr, 7;\n"
    << "\tsetp.ne.u32 %pp, %wg, 0;\n\t@%pp bra CONSUMER;\n";
  EmitProducer(p, t);
  if (t.a_regs)
    EmitMainLoopRegs(p, t);
  else
    EmitMainLoop(p, t);
  p << "\t// ==== epilogue: C = alpha * acc + beta * C (beta == 0 never "
       "reads C), through shared memory and TMA where %ptma, else from the "
       "registers\n"
    << "\tmul.lo.u32 %rbase, %cw, " << N(t.rows_per_consumer) << ";\n"
    << "\tadd.u32 %rbase, %rbase, %m0;\n"
    << "\tshl.b32 %tmp, %warp, 4;\n\tadd.u32 %rbase, %rbase, %tmp;\n"
    << "\tshr.u32 %tmp, %lane, 2;\n\tadd.u32 %rbase, %rbase, %tmp;\n"
    << "\tand.b32 %tmp, %lane, 3;\n\tshl.b32 %tmp, %tmp, 1;\n"
    << "\tadd.u32 %cbase, %n0, %tmp;\n"
    << "\tcvt.u64.u32 %cb64, %cbase;\n"
    << "\tsub.s32 %nrem, %N, %cbase;\n";
  if (t.tail > 1) EmitTailEpilogue(p, t);
  if (t.split_cluster) {
    EmitClusterSplitEpilogue(p, t);
  } else if (t.kg > 1) {
    EmitPartialEpilogue(p, t);
    p << "\tbra CNEXT;\n";
  }
  if (t.tma_store) {
    p << "\t@!%ptma bra EPI_REGS;\n";
    EmitTmaStoreEpilogue(p, t);
    p << "\tbra CNEXT;\nEPI_REGS:\n";
  }
  if (t.c_transposed)
    EmitEpilogueTransposed(p, t);
  else
    EmitEpilogue(p, t);
  p << "CNEXT:\n";
  EmitNextUnit(p, t);
  p << "\tbra CTILE;\n"
    << "CEXIT:\n";
  if (t.tma_store) {
    p << "\t// the last tensor stores have finished before the program exits\n"
      << "\t@%pel cp.async.bulk.wait_group 0;\n";
  }
  p << "DONE:\n";
  if (t.cm == 2) EmitClusterSync(p);
  p << "\tret;\n}\n";
  return p.str();
}

}  // namespace blocktune::wgmma_internal

namespace blocktune::wgmma_internal {

std::string PackEntry(const Tiling& t, const WgmmaPacking& pack) {
  const int64_t es = t.esize, v = 16 / es;
  // Operands copied row by row in 16-byte chunks (one per thread), and
  // operands copied transposed (tf32 only) in 32 x 32 tiles through shared
  // memory (one per program), so that both the loads and the stores of a
  // warp are whole 128-byte lines.
  const bool row_a = pack.a && !pack.a_transposed;
  const bool row_b = pack.b && !pack.b_transposed;
  const PackWork work = PackWorkOf(pack, es);
  const int64_t chunks_a = work.chunks_a, chunks_b = work.chunks_b;
  const int64_t tiles_a = work.tiles_a, tiles_b = work.tiles_b;
  Ptx p;
  p << "\n// ---- packing (gemm.wgmma_pk): ";
  auto describe = [&](const char* x, bool on, bool tr, int64_t r, int64_t c,
                      int64_t ld, int64_t off) {
    if (!on) return;
    p << x << " " << N(r) << " x " << N(c) << (tr ? " transposed" : "")
      << " -> rows of ld " << N(ld) << " at W+" << N(off) << "; ";
  };
  describe("A", pack.a, pack.a_transposed, pack.rows_a, pack.cols_a, pack.lda,
           pack.a_offset);
  describe("B", pack.b, pack.b_transposed, pack.rows_b, pack.cols_b, pack.ldb,
           pack.b_offset);
  const bool tiles = tiles_a + tiles_b > 0;
  // Without tiles the loop's exit is the entry's end.
  const std::string rows_done = tiles ? "$PACK_ROWS_DONE" : "$PACK_DONE";
  p << "16-byte chunks, one per thread"
    << (tiles ? "; transposed operands in 32 x 32 tiles through shared "
                "memory, one per program"
              : "")
    << "\n"
    << ".visible .entry blocktune_gemm_wgmma_pack(\n"
    << GemmEntryParams(true) << "{\n"
    << "\t.reg .pred %p, %q;\n"
    << "\t.reg .b32 %c, %step, %nt, %r, %i, %row, %col, %left, %ld, %w<4>;\n"
    << (tiles ? "\t.reg .b32 %warp, %lane, %tn, %tk, %sa, %sb, %j;\n"
                "\t.shared .align 16 .b32 pack_tile[1056];\n"
              : "")
    << "\t.reg .b16 %h<8>;\n"
    << "\t.reg .b64 %A, %B, %W, %src, %dst, %x;\n"
    << "\tld.param.u64 %A, [param_A];\n\tcvta.to.global.u64 %A, %A;\n"
    << "\tld.param.u64 %B, [param_B];\n\tcvta.to.global.u64 %B, %B;\n"
    << "\tld.param.u64 %W, [param_W];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tmov.u32 %r, %ctaid.x;\n\tmov.u32 %nt, %ntid.x;\n"
    << "\tmov.u32 %c, %tid.x;\n\tmad.lo.u32 %c, %r, %nt, %c;\n"
    << "\tmov.u32 %r, %nctaid.x;\n\tmul.lo.u32 %step, %r, %nt;\n"
    << "$PACK_LOOP:\n"
    << "\tsetp.ge.u32 %p, %c, " << N(chunks_a + chunks_b) << ";\n"
    << "\t@%p bra " << rows_done << ";\n";
  // Element j of the chunk, predicated on %q, from [%src + off] (zero where
  // not loaded).
  auto element = [&](int64_t j, const std::string& off) {
    const std::string J = N(j);
    if (es == 2)
      p << "\tmov.b16 %h" << J << ", 0;\n\t@%q ld.global.nc.b16 %h" << J
        << ", [%src+" << off << "];\n";
    else
      p << "\tmov.b32 %w" << J << ", 0;\n\t@%q ld.global.nc.b32 %w" << J
        << ", [%src+" << off << "];\n";
  };
  // Operand x's chunk %i (from its first): packed row %row, columns
  // v*%col.. of the stored row, contiguous.
  auto section = [&](const char* x, int64_t first, int64_t cols, int64_t ld,
                     int64_t offset, bool wide) {
    const std::string X = x[0] == 'a' ? "A" : "B";
    p << "\tsub.u32 %i, %c, " << N(first) << ";\n"
      << "\tld.param.u32 %ld, [param_ld" << x << "];\n"
      << "\tdiv.u32 %row, %i, " << N(ld / v) << ";\n"
      << "\trem.u32 %col, %i, " << N(ld / v) << ";\n"
      << "\tmul.lo.u32 %col, %col, " << N(v) << ";\n"
      << "\tsub.s32 %left, " << N(cols) << ", %col;\n"
      << "\tmul.wide.u32 %src, %row, %ld;\n"
      << "\tcvt.u64.u32 %x, %col;\n\tadd.u64 %src, %src, %x;\n"
      << "\tmad.lo.u64 %src, %src, " << N(es) << ", %" << X << ";\n"
      << "\tmul.wide.u32 %dst, %i, 16;\n\tadd.u64 %dst, %dst, %W;\n"
      << "\tadd.u64 %dst, %dst, " << N(offset) << ";\n";
    if (wide) {
      // Stored rows of whole 16-byte units: a whole chunk is one load.
      p << "\tsetp.ge.s32 %p, %left, " << N(v) << ";\n"
        << "\t@!%p bra $PACK_" << X << "_EDGE;\n"
        << "\tld.global.nc.v4.b32 {%w0, %w1, %w2, %w3}, [%src];\n"
        << "\tst.global.v4.b32 [%dst], {%w0, %w1, %w2, %w3};\n"
        << "\tbra.uni $PACK_NEXT;\n"
        << "$PACK_" << X << "_EDGE:\n";
    }
    for (int64_t j = 0; j < v; ++j) {
      p << "\tsetp.gt.s32 %q, %left, " << N(j) << ";\n";
      element(j, N(es * j));
    }
    if (es == 2)
      for (int j = 0; j < 4; ++j)
        p << "\tmov.b32 %w" << N(j) << ", {%h" << N(2 * j) << ", %h"
          << N(2 * j + 1) << "};\n";
    p << "\tst.global.v4.b32 [%dst], {%w0, %w1, %w2, %w3};\n";
  };
  // Stored rows of whole 16-byte units (and a 16-byte aligned base, which
  // the launcher checks): chunks that hold no edge are one 16-byte load.
  if (row_a && row_b) {
    p << "\tsetp.ge.u32 %p, %c, " << N(chunks_a) << ";\n"
      << "\t@%p bra $PACK_B;\n";
  }
  if (row_a) {
    section("a", 0, pack.cols_a, pack.lda, pack.a_offset,
            pack.src_lda * es % 16 == 0);
    p << "\tbra.uni $PACK_NEXT;\n";
  }
  if (row_b) {
    p << "$PACK_B:\n";
    section("b", chunks_a, pack.cols_b, pack.ldb, pack.b_offset,
            pack.src_ldb * es % 16 == 0);
  }
  p << "$PACK_NEXT:\n"
    << "\tadd.u32 %c, %c, %step;\n"
    << "\tbra.uni $PACK_LOOP;\n";
  if (tiles) {
    p << "$PACK_ROWS_DONE:\n";
    // Tile %c (per program, grid-stride): stored rows 32*%tk.. (the packed
    // row's columns) by stored columns 32*%tn.. (packed rows). Warp w
    // loads stored rows w, w+8, w+16, w+24 of the tile (lane: column) into
    // pack_tile[row][33] and stores packed rows w, w+8, .. (lane: column).
    p
      << "\tmov.u32 %r, %tid.x;\n"
      << "\tshr.u32 %warp, %r, 5;\n\tand.b32 %lane, %r, 31;\n"
      << "\tmov.u32 %c, %ctaid.x;\n\tmov.u32 %step, %nctaid.x;\n"
      << "\tmov.u32 %sb, pack_tile;\n"
      << "$PACK_TILE:\n"
      << "\tsetp.ge.u32 %p, %c, " << N(tiles_a + tiles_b) << ";\n"
      << "\t@%p bra $PACK_DONE;\n";
    auto tile = [&](const char* x, int64_t first, int64_t rows, int64_t cols,
                    int64_t tiles_n, int64_t ld, int64_t offset) {
      const std::string X = x[0] == 'a' ? "A" : "B";
      p << "\tsub.u32 %i, %c, " << N(first) << ";\n"
        << "\tld.param.u32 %ld, [param_ld" << x << "];\n"
        << "\trem.u32 %tn, %i, " << N(tiles_n) << ";\n"
        << "\tdiv.u32 %tk, %i, " << N(tiles_n) << ";\n"
        << "\tshl.b32 %tn, %tn, 5;\n\tshl.b32 %tk, %tk, 5;\n"
        // loads: stored row %row = tk + warp + 8i, column %col = tn + lane
        << "\tadd.u32 %col, %tn, %lane;\n"
        << "\tsetp.lt.u32 %q, %col, " << N(cols) << ";\n";
      for (int i = 0; i < 4; ++i) {
        p << "\tadd.u32 %j, %warp, " << N(8 * i) << ";\n"
          << "\tadd.u32 %row, %tk, %j;\n"
          << "\tsetp.lt.and.u32 %p, %row, " << N(rows) << ", %q;\n"
          << "\tmul.wide.u32 %src, %row, %ld;\n"
          << "\tcvt.u64.u32 %x, %col;\n\tadd.u64 %src, %src, %x;\n"
          << "\tmad.lo.u64 %src, %src, 4, %" << X << ";\n"
          << "\tmov.b32 %w0, 0;\n\t@%p ld.global.nc.b32 %w0, [%src];\n"
          << "\tmad.lo.u32 %sa, %j, 33, %lane;\n"
          << "\tmad.lo.u32 %sa, %sa, 4, %sb;\n"
          << "\tst.shared.b32 [%sa], %w0;\n";
      }
      p << "\tbar.sync 0;\n";
      // stores: packed row %row = tn + warp + 8i, column tk + lane
      for (int i = 0; i < 4; ++i) {
        p << "\tadd.u32 %j, %warp, " << N(8 * i) << ";\n"
          << "\tadd.u32 %row, %tn, %j;\n"
          << "\tsetp.lt.u32 %p, %row, " << N(cols) << ";\n"
          << "\tmad.lo.u32 %sa, %lane, 33, %j;\n"
          << "\tmad.lo.u32 %sa, %sa, 4, %sb;\n"
          << "\tld.shared.b32 %w0, [%sa];\n"
          << "\tadd.u32 %col, %tk, %lane;\n"
          << "\tmul.wide.u32 %dst, %row, " << N(ld) << ";\n"
          << "\tcvt.u64.u32 %x, %col;\n\tadd.u64 %dst, %dst, %x;\n"
          << "\tmad.lo.u64 %dst, %dst, 4, %W;\n"
          << "\t@%p st.global.b32 [%dst+" << N(offset) << "], %w0;\n";
      }
      p << "\tbar.sync 0;\n";
    };
    if (tiles_a > 0 && tiles_b > 0) {
      p << "\tsetp.ge.u32 %p, %c, " << N(tiles_a) << ";\n"
        << "\t@%p bra $PACK_TILE_B;\n";
    }
    if (tiles_a > 0) {
      tile("a", 0, pack.rows_a, pack.cols_a, work.tiles_n_a, pack.lda,
           pack.a_offset);
      p << "\tbra.uni $PACK_TILE_NEXT;\n";
    }
    if (tiles_b > 0) {
      p << "$PACK_TILE_B:\n";
      tile("b", tiles_a, pack.rows_b, pack.cols_b, work.tiles_n_b, pack.ldb,
           pack.b_offset);
    }
    p << "$PACK_TILE_NEXT:\n"
      << "\tadd.u32 %c, %c, %step;\n"
      << "\tbra.uni $PACK_TILE;\n";
  }
  p << "$PACK_DONE:\n"
    << "\tret;\n}\n";
  return p.str();
}

}  // namespace blocktune::wgmma_internal
