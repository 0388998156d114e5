// The PTX emitters of gemm.mma (see gemm_mma.h for the algorithm).
#include "kernels/gemm_mma_ptx.h"

#include <cstdlib>
#include <functional>
#include <sstream>

#include "kernels/ptx_text.h"

namespace blocktune::mma_internal {

int ArchNumber(const std::string& arch) {
  return arch.size() > 3 ? std::atoi(arch.c_str() + 3) : 0;
}

using Ptx = PtxText;

// %dst = f(%row) for rows of `chunks` chunks.
void EmitSwizzle(Ptx& p, const std::string& dst, const std::string& row,
                 int64_t chunks) {
  const int64_t div = Tiling::SwizzleDiv(chunks),
                mod = Tiling::SwizzleMod(chunks);
  if (mod == 1) {
    p << "\tmov.u32 " << dst << ", 0;\n";
    return;
  }
  p << "\tshr.u32 " << dst << ", " << row << ", " << N(Log2(div)) << ";\n"
    << "\tand.b32 " << dst << ", " << dst << ", " << N(mod - 1) << ";\n";
}

// One 16-byte chunk of operand x, copy i: global [src] -> shared
// [%dst+imm], %sz bytes of it in bounds (the rest zero-filled), issued
// only where `guard` (a predicate register, or empty) holds. By the
// operand's copy width (Tiling::cw_a): one cp.async.cg of 16 bytes; 16/cw
// cp.async.ca pieces of 8 or 4 bytes; or (2 bytes) eight predicated
// ld.global.b16 into %h<x>, stored later by EmitDeferredStores.
void EmitChunk(Ptx& p, const Tiling& t, char x, int64_t i,
               const std::string& guard, int64_t imm, const std::string& src) {
  const int64_t cw = x == 'a' ? t.cw_a : t.cw_b;
  const std::string g = guard.empty() ? "" : "@" + guard + " ";
  if (cw == 16) {
    p << "	" << g << "cp.async.cg.shared.global [%dst+" << N(imm) << "], ["
      << src << "], 16, %sz;\n";
    return;
  }
  if (cw >= 4) {
    for (int64_t q = 0; q < 16 / cw; ++q) {
      p << "	sub.s32 %szq, %sz, " << N(q * cw) << ";\n"
        << "	max.s32 %szq, %szq, 0;\n\tmin.s32 %szq, %szq, " << N(cw)
        << ";\n"
        << "	" << g << "cp.async.ca.shared.global [%dst+" << N(imm + q * cw)
        << "], [" << src << "+" << N(q * cw) << "], " << N(cw)
        << ", %szq;\n";
    }
    return;
  }
  for (int64_t e = 0; e < 8; ++e) {
    const std::string h = "%h" + std::string(1, x) + N(8 * i + e);
    p << "	setp.gt.s32 %pe, %sz, " << N(2 * e) << ";\n";
    if (!guard.empty()) p << "	and.pred %pe, %pe, " << guard << ";\n";
    p << "	mov.b16 " << h << ", 0;\n"
      << "	@%pe ld.global.nc.b16 " << h << ", [" << src << "+" << N(2 * e)
      << "];\n";
  }
}

// Regular copy bookkeeping (Tiling::RegularA): the thread's chunk column
// ch = tid % chunks and first row r0 = tid / chunks; copy i is row
// r0 + i*rstep. Registers per operand: %p (the pointer of copy 0), %rs
// (rstep rows in bytes), %s (shared offset of copy 0, or one per copy when
// the swizzle differs), %r0, and %kk (K offset, contiguous-K) or %cb (bytes
// in bounds of the chunk, M/N-contiguous) and %rl (rows left to the M/N
// bound, contiguous-K).
void EmitRegularSharedOffsets(Ptx& p, const Tiling& t, char x) {
  const bool a = x == 'a';
  const std::string s(1, x);
  const bool kc = a ? t.a_kc : t.b_kc;
  const int64_t rows = a ? t.a_rows : t.b_rows;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  const int64_t rb = a ? t.a_rb : t.b_rb;
  const int64_t copies = a ? t.a_copies : t.b_copies;
  const int64_t rstep = t.threads / chunks;
  p << "\t// ---- " << (a ? "A" : "B") << " copies: " << N(copies)
    << " per thread of the " << N(rows) << " x " << N(chunks)
    << " chunk tile (rows along " << (kc ? (a ? "M" : "N") : "K")
    << ", chunks along " << (kc ? "K" : (a ? "M" : "N")) << "), copy i at row "
    << "r0 + " << N(rstep) << "*i of chunk column tid % " << N(chunks) << "\n"
    << "\tdiv.u32 %r0" << s << ", %thr, " << N(chunks) << ";\n"
    << "\trem.u32 %ch, %thr, " << N(chunks) << ";\n";
  const bool same_swizzle = rstep % 8 == 0 || copies == 1;
  for (int64_t i = 0; i < (same_swizzle ? 1 : copies); ++i) {
    p << "\tadd.u32 %row, %r0" << s << ", " << N(i * rstep) << ";\n";
    EmitSwizzle(p, "%x", "%row", chunks);
    p << "\txor.b32 %x, %x, %ch;\n\tshl.b32 %x, %x, 4;\n"
      << "\tmad.lo.u32 %s" << s << N(i) << ", %row, " << N(rb) << ", %x;\n";
  }
}

namespace {

void EmitRegularCopySetup(Ptx& p, const Tiling& t, char x) {
  const bool a = x == 'a';
  const std::string s(1, x);
  const bool kc = a ? t.a_kc : t.b_kc;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  const int64_t rstep = t.threads / chunks;
  const std::string origin = a ? "%m0" : "%n0", bound = a ? "%M" : "%N",
                    ld = a ? "%lda" : "%ldb", base = a ? "%A" : "%B";
  const int lg = Log2(t.esize);
  EmitRegularSharedOffsets(p, t, x);
  if (kc) {
    p << "\tadd.u32 %g, %r0" << s << ", " << origin << ";\n"
      << "\tsub.s32 %rl" << s << ", " << bound << ", %g;\n"
      << "\tmul.lo.u32 %kk" << s << "0, %ch, " << N(t.v) << ";\n"
      << "\tadd.u32 %y, %kbeg, %kk" << s << "0;\n"
      << "\tmul.wide.u32 %d0, %g, " << ld << ";\n"
      << "\tcvt.u64.u32 %d1, %y;\n";
  } else {
    p << "\tmul.lo.u32 %g, %ch, " << N(t.v) << ";\n"
      << "\tadd.u32 %g, %g, " << origin << ";\n"
      << "\tsub.s32 %cb" << s << "0, " << bound << ", %g;\n"
      << "\tmax.s32 %cb" << s << "0, %cb" << s << "0, 0;\n"
      << "\tmin.s32 %cb" << s << "0, %cb" << s << "0, " << N(t.v) << ";\n"
      << "\tshl.b32 %cb" << s << "0, %cb" << s << "0, " << N(lg) << ";\n"
      << "\tadd.u32 %y, %kbeg, %r0" << s << ";\n"
      << "\tmul.wide.u32 %d0, %y, " << ld << ";\n"
      << "\tcvt.u64.u32 %d1, %g;\n";
  }
  p << "\tadd.u64 %d0, %d0, %d1;\n\tshl.b64 %d0, %d0, " << N(lg) << ";\n"
    << "\tadd.u64 %p" << s << "0, " << base << ", %d0;\n"
    << "\tmul.wide.u32 %rs" << s << ", " << ld << ", " << N(rstep * t.esize)
    << ";\n";
  if (kc) {
    p << "\tmov.u64 %step" << s << ", " << N(t.bk * t.esize) << ";\n";
  } else {
    p << "\tmul.wide.u32 %step" << s << ", " << ld << ", " << N(t.bk * t.esize)
      << ";\n";
  }
}

void EmitRegularCopies(Ptx& p, const Tiling& t, char x) {
  const bool a = x == 'a';
  const std::string s(1, x);
  const bool kc = a ? t.a_kc : t.b_kc;
  const int64_t rows = a ? t.a_rows : t.b_rows;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  const int64_t rb = a ? t.a_rb : t.b_rb;
  const int64_t copies = a ? t.a_copies : t.b_copies;
  const int64_t rstep = t.threads / chunks;
  const int64_t off = a ? 0 : t.a_stage;
  const bool same_swizzle = rstep % 8 == 0 || copies == 1;
  if (kc) {  // bytes of the chunk inside K, the same for every copy
    p << "\tsub.s32 %sz0, %krem, %kk" << s << "0;\n"
      << "\tmax.s32 %sz0, %sz0, 0;\n\tmin.s32 %sz0, %sz0, " << N(t.v) << ";\n"
      << "\tshl.b32 %sz0, %sz0, " << N(Log2(t.esize)) << ";\n";
  } else {  // K rows left past this thread's first row
    p << "\tsub.s32 %kr, %krem, %r0" << s << ";\n";
  }
  p << "\tmov.u64 %pcp, %p" << s << "0;\n";
  for (int64_t i = 0; i < copies; ++i) {
    const bool guarded = (i + 1) * t.threads > rows * chunks;
    if (guarded) {
      p << "\tsetp.lt.u32 %pg, %r0" << s << ", " << N(rows - i * rstep)
        << ";\n";
    }
    if (kc) {
      p << "\tsetp.gt.s32 %pk, %rl" << s << ", " << N(i * rstep) << ";\n"
        << "\tselp.b32 %sz, %sz0, 0, %pk;\n";
    } else {
      p << "\tsetp.gt.s32 %pk, %kr, " << N(i * rstep) << ";\n"
        << "\tselp.b32 %sz, %cb" << s << "0, 0, %pk;\n";
    }
    const std::string soff = same_swizzle ? "%s" + s + "0" : "%s" + s + N(i);
    const int64_t imm = off + (same_swizzle ? i * rstep * rb : 0);
    p << "\tadd.u32 %dst, %slot_w, " << soff << ";\n";
    EmitChunk(p, t, x, i, guarded ? "%pg" : "", imm, "%pcp");
    if (i + 1 < copies) p << "\tadd.u64 %pcp, %pcp, %rs" << s << ";\n";
  }
  p << "\tadd.u64 %p" << s << "0, %p" << s << "0, %step" << s << ";\n";
}

// Per-thread copy bookkeeping of one operand ('a' or 'b'): copy i moves
// chunk e = tid + i*threads of the rows x chunks tile.
void EmitCopySetup(Ptx& p, const Tiling& t, char x) {
  if (x == 'a' ? t.RegularA() : t.RegularB())
    return EmitRegularCopySetup(p, t, x);
  const bool a = x == 'a';
  const std::string s(1, x);
  const bool kc = a ? t.a_kc : t.b_kc;
  const int64_t rows = a ? t.a_rows : t.b_rows;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  const int64_t rb = a ? t.a_rb : t.b_rb;
  const int64_t copies = a ? t.a_copies : t.b_copies;
  const std::string origin = a ? "%m0" : "%n0", bound = a ? "%M" : "%N",
                    ld = a ? "%lda" : "%ldb", base = a ? "%A" : "%B";
  const int lg = Log2(t.esize);
  p << "\t// ---- " << (a ? "A" : "B") << " copies: " << N(copies)
    << " per thread of the " << N(rows) << " x " << N(chunks)
    << " chunk tile (rows along " << (kc ? (a ? "M" : "N") : "K")
    << ", chunks along " << (kc ? "K" : (a ? "M" : "N")) << ")\n";
  for (int64_t i = 0; i < copies; ++i) {
    const std::string I = N(i);
    p << "\tadd.u32 %e, %thr, " << N(i * t.threads) << ";\n";
    if ((i + 1) * t.threads > rows * chunks) {  // some threads have none
      p << "\tsetp.lt.u32 %q" << s << I << ", %e, " << N(rows * chunks)
        << ";\n";
    }
    p << "\tdiv.u32 %row, %e, " << N(chunks) << ";\n"
      << "\trem.u32 %ch, %e, " << N(chunks) << ";\n";
    EmitSwizzle(p, "%x", "%row", chunks);
    p << "\txor.b32 %x, %x, %ch;\n\tshl.b32 %x, %x, 4;\n"
      << "\tmad.lo.u32 %s" << s << I << ", %row, " << N(rb) << ", %x;\n";
    if (kc) {
      p << "\tadd.u32 %g, %row, " << origin << ";\n"
        << "\tsetp.lt.u32 %v" << s << I << ", %g, " << bound << ";\n"
        << "\tmul.lo.u32 %kk" << s << I << ", %ch, " << N(t.v) << ";\n"
        << "\tadd.u32 %y, %kbeg, %kk" << s << I << ";\n"
        << "\tmul.wide.u32 %d0, %g, " << ld << ";\n"
        << "\tcvt.u64.u32 %d1, %y;\n";
    } else {
      p << "\tmov.u32 %rk" << s << I << ", %row;\n"
        << "\tmul.lo.u32 %g, %ch, " << N(t.v) << ";\n"
        << "\tadd.u32 %g, %g, " << origin << ";\n"
        << "\tsub.s32 %cb" << s << I << ", " << bound << ", %g;\n"
        << "\tmax.s32 %cb" << s << I << ", %cb" << s << I << ", 0;\n"
        << "\tmin.s32 %cb" << s << I << ", %cb" << s << I << ", " << N(t.v)
        << ";\n"
        << "\tshl.b32 %cb" << s << I << ", %cb" << s << I << ", " << N(lg)
        << ";\n"
        << "\tadd.u32 %y, %kbeg, %row;\n"
        << "\tmul.wide.u32 %d0, %y, " << ld << ";\n"
        << "\tcvt.u64.u32 %d1, %g;\n";
    }
    p << "\tadd.u64 %d0, %d0, %d1;\n\tshl.b64 %d0, %d0, " << N(lg) << ";\n"
      << "\tadd.u64 %p" << s << I << ", " << base << ", %d0;\n";
  }
  if (kc) {
    p << "\tmov.u64 %step" << s << ", " << N(t.bk * t.esize) << ";\n";
  } else {
    p << "\tmul.wide.u32 %step" << s << ", " << ld << ", " << N(t.bk * t.esize)
      << ";\n";
  }
}

// The copies of one K step into the ring slot at %slot_w; %krem = K left
// from this step's start to the end of the program's K range. Bytes past
// the range, M or N are zero-filled (src-size < 16).
void EmitCopies(Ptx& p, const Tiling& t, char x) {
  if (x == 'a' ? t.RegularA() : t.RegularB()) return EmitRegularCopies(p, t, x);
  const bool a = x == 'a';
  const std::string s(1, x);
  const bool kc = a ? t.a_kc : t.b_kc;
  const int64_t copies = a ? t.a_copies : t.b_copies;
  const int64_t off = a ? 0 : t.a_stage;
  const int64_t rows = a ? t.a_rows : t.b_rows;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  for (int64_t i = 0; i < copies; ++i) {
    const bool guarded = (i + 1) * t.threads > rows * chunks;
    const std::string I = N(i);
    if (kc) {
      p << "\tsub.s32 %sz, %krem, %kk" << s << I << ";\n"
        << "\tmax.s32 %sz, %sz, 0;\n\tmin.s32 %sz, %sz, " << N(t.v) << ";\n"
        << "\tshl.b32 %sz, %sz, " << N(Log2(t.esize)) << ";\n"
        << "\tselp.b32 %sz, %sz, 0, %v" << s << I << ";\n";
    } else {
      p << "\tsetp.lt.s32 %pk, %rk" << s << I << ", %krem;\n"
        << "\tselp.b32 %sz, %cb" << s << I << ", 0, %pk;\n";
    }
    p << "\tadd.u32 %dst, %slot_w, %s" << s << I << ";\n";
    EmitChunk(p, t, x, i, guarded ? "%q" + s + I : "", off, "%p" + s + I);
    p << "\tadd.u64 %p" << s << I << ", %p" << s << I << ", %step" << s
      << ";\n";
  }
}

}  // namespace

// The shared-memory stores of a 2-byte-copy operand (EmitChunk): the
// eight halves of copy i packed into one st.shared.v4 at the slot in
// %slot_st, where EmitCopies would have put the chunk. Nothing for wider
// copies.
void EmitDeferredStores(Ptx& p, const Tiling& t, char x) {
  const bool a = x == 'a';
  if ((a ? t.cw_a : t.cw_b) != 2) return;
  const std::string s(1, x);
  const int64_t rows = a ? t.a_rows : t.b_rows;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  const int64_t rb = a ? t.a_rb : t.b_rb;
  const int64_t copies = a ? t.a_copies : t.b_copies;
  const int64_t off = a ? 0 : t.a_stage;
  const bool regular = a ? t.RegularA() : t.RegularB();
  const int64_t rstep = t.threads / chunks;
  const bool same_swizzle = rstep % 8 == 0 || copies == 1;
  p << "\t// ---- " << (a ? "A" : "B")
    << " halves (2-byte copies) to shared memory\n";
  for (int64_t i = 0; i < copies; ++i) {
    const bool guarded = (i + 1) * t.threads > rows * chunks;
    std::string guard;
    int64_t imm = off;
    if (regular) {
      p << "\tadd.u32 %dst, %slot_st, %s" << s
        << N(same_swizzle ? 0 : i) << ";\n";
      if (same_swizzle) imm += i * rstep * rb;
      if (guarded) {
        p << "\tsetp.lt.u32 %pg, %r0" << s << ", " << N(rows - i * rstep)
          << ";\n";
        guard = "@%pg ";
      }
    } else {
      p << "\tadd.u32 %dst, %slot_st, %s" << s << N(i) << ";\n";
      if (guarded) guard = "@%q" + s + N(i) + " ";
    }
    for (int64_t w = 0; w < 4; ++w) {
      p << "\tmov.b32 %hw" << N(w) << ", {%h" << s << N(8 * i + 2 * w)
        << ", %h" << s << N(8 * i + 2 * w + 1) << "};\n";
    }
    p << "\t" << guard << "st.shared.v4.b32 [%dst+" << N(imm)
      << "], {%hw0, %hw1, %hw2, %hw3};\n";
  }
}

namespace {

// Lane offsets (from a stage's A or B base) of the fragment loads, so that
// every load in the loop is [register + immediate]. See Tiling for the
// orientation; ldmatrix lane l gives the row address of matrix l/8, row
// l%8 (%q = l/8, %r8 = l%8).
void EmitFragmentSetup(Ptx& p, const Tiling& t) {
  p << "\t// ---- fragment addressing (lane offsets in a stage)\n";
  // A
  if (t.a_kc) {
    // ldmatrix.x4 matrices: (m0-7, k lo), (m8-15, k lo), (m0-7, k hi),
    // (m8-15, k hi): row = warp_m*WM + (q%2)*8 + r8, chunk = 2*kk + q/2.
    p << "\tand.b32 %x, %q, 1;\n\tshl.b32 %x, %x, 3;\n"
      << "\tadd.u32 %row, %x, %r8;\n"
      << "\tmad.lo.u32 %row, %wmi, " << N(t.wm) << ", %row;\n";
    EmitSwizzle(p, "%x", "%r8", t.a_chunks);
    p << "\tshr.u32 %y, %q, 1;\n\txor.b32 %x, %x, %y;\n";
    for (int64_t kk = 0; kk < t.ksteps; ++kk) {
      p << "\txor.b32 %y, %x, " << N(2 * kk) << ";\n\tshl.b32 %y, %y, 4;\n"
        << "\tmad.lo.u32 %fa" << N(kk) << ", %row, " << N(t.a_rb) << ", %y;\n";
    }
  } else if (!t.ScalarA()) {
    // ldmatrix.x4.trans: (k lo, m0-7), (k lo, m8-15), (k hi, m0-7),
    // (k hi, m8-15): row = (q/2)*8 + r8, chunk = warp_m*WM/8 + 2i + q%2.
    p << "\tshr.u32 %row, %q, 1;\n\tshl.b32 %row, %row, 3;\n"
      << "\tadd.u32 %row, %row, %r8;\n";
    EmitSwizzle(p, "%x", "%r8", t.a_chunks);
    for (int64_t i = 0; i < t.mt; ++i) {
      p << "\tmul.lo.u32 %y, %wmi, " << N(t.wm / 8) << ";\n"
        << "\tadd.u32 %y, %y, " << N(2 * i) << ";\n"
        << "\tand.b32 %g, %q, 1;\n\tadd.u32 %y, %y, %g;\n"
        << "\txor.b32 %y, %y, %x;\n\tshl.b32 %y, %y, 4;\n"
        << "\tmad.lo.u32 %fa" << N(i) << ", %row, " << N(t.a_rb) << ", %y;\n";
    }
  } else {
    // tf32, A stored K x M: a0 = (m gid, k tig), a1 = (m gid+8, k tig),
    // a2 = (m gid, k tig+4), a3 = (m gid+8, k tig+4), one word each.
    for (int64_t i = 0; i < t.mt; ++i) {
      for (int64_t v = 0; v < 4; ++v) {
        p << "\tadd.u32 %row, %tig, " << N(4 * (v / 2)) << ";\n";
        EmitSwizzle(p, "%x", "%row", t.a_chunks);
        p << "\tmad.lo.u32 %g, %wmi, " << N(t.wm) << ", %gid;\n"
          << "\tadd.u32 %g, %g, " << N(16 * i + 8 * (v % 2)) << ";\n"
          << "\tshr.u32 %y, %g, 2;\n\txor.b32 %y, %y, %x;\n"
          << "\tshl.b32 %y, %y, 4;\n"
          << "\tand.b32 %g, %g, 3;\n\tshl.b32 %g, %g, 2;\n"
          << "\tadd.u32 %y, %y, %g;\n"
          << "\tmad.lo.u32 %fa" << N(4 * i + v) << ", %row, " << N(t.a_rb)
          << ", %y;\n";
      }
    }
  }
  // B
  if (t.b_kc) {
    // ldmatrix.x4 (an n16 pair): (n0-7, k lo), (n0-7, k hi), (n8-15, k lo),
    // (n8-15, k hi): row = warp_n*WN + (q/2)*8 + r8, chunk = 2*kk + q%2.
    // .x2 (a single n8) reads lanes 0-15 only: the same addresses.
    p << "\tshr.u32 %x, %q, 1;\n\tshl.b32 %x, %x, 3;\n"
      << "\tadd.u32 %row, %x, %r8;\n"
      << "\tmad.lo.u32 %row, %wni, " << N(t.wn) << ", %row;\n";
    EmitSwizzle(p, "%x", "%r8", t.b_chunks);
    p << "\tand.b32 %y, %q, 1;\n\txor.b32 %x, %x, %y;\n";
    for (int64_t kk = 0; kk < t.ksteps; ++kk) {
      p << "\txor.b32 %y, %x, " << N(2 * kk) << ";\n\tshl.b32 %y, %y, 4;\n"
        << "\tmad.lo.u32 %fb" << N(kk) << ", %row, " << N(t.b_rb) << ", %y;\n";
    }
  } else if (!t.ScalarB()) {
    // ldmatrix.x4.trans (pair): (k lo, n0-7), (k hi, n0-7), (k lo, n8-15),
    // (k hi, n8-15): row = (q%2)*8 + r8, chunk = (warp_n*WN + 8j)/8 + q/2.
    p << "\tand.b32 %row, %q, 1;\n\tshl.b32 %row, %row, 3;\n"
      << "\tadd.u32 %row, %row, %r8;\n";
    EmitSwizzle(p, "%x", "%r8", t.b_chunks);
    for (int64_t g = 0; g < t.NGroups(); ++g) {
      p << "\tmul.lo.u32 %y, %wni, " << N(t.wn / 8) << ";\n"
        << "\tadd.u32 %y, %y, " << N(2 * g) << ";\n"
        << "\tshr.u32 %g, %q, 1;\n\tadd.u32 %y, %y, %g;\n"
        << "\txor.b32 %y, %y, %x;\n\tshl.b32 %y, %y, 4;\n"
        << "\tmad.lo.u32 %fb" << N(g) << ", %row, " << N(t.b_rb) << ", %y;\n";
    }
  } else if (t.VecB()) {
    // tf32, B stored K x N, columns permuted (Tiling::VecB): %fb<v> is row
    // tig + 4v, chunk warp_n*WN/4 + perm(gid); chunk +8u is immediate.
    p << "\tand.b32 %y, %gid, 1;\n\tshl.b32 %y, %y, 2;\n"
      << "\tshr.u32 %g, %gid, 1;\n\tor.b32 %y, %y, %g;\n"
      << "\tmad.lo.u32 %y, %wni, " << N(t.wn / 4) << ", %y;\n";
    for (int64_t v = 0; v < 2; ++v) {
      p << "\tadd.u32 %row, %tig, " << N(4 * v) << ";\n";
      EmitSwizzle(p, "%x", "%row", t.b_chunks);
      p << "\txor.b32 %x, %x, %y;\n\tshl.b32 %x, %x, 4;\n"
        << "\tmad.lo.u32 %fb" << N(v) << ", %row, " << N(t.b_rb) << ", %x;\n";
    }
  } else {
    // tf32, B stored K x N: b0 = (k tig, n gid), b1 = (k tig+4, n gid).
    for (int64_t j = 0; j < t.nt; ++j) {
      for (int64_t v = 0; v < 2; ++v) {
        p << "\tadd.u32 %row, %tig, " << N(4 * v) << ";\n";
        EmitSwizzle(p, "%x", "%row", t.b_chunks);
        p << "\tmad.lo.u32 %g, %wni, " << N(t.wn) << ", %gid;\n"
          << "\tadd.u32 %g, %g, " << N(8 * j) << ";\n"
          << "\tshr.u32 %y, %g, 2;\n\txor.b32 %y, %y, %x;\n"
          << "\tshl.b32 %y, %y, 4;\n"
          << "\tand.b32 %g, %g, 3;\n\tshl.b32 %g, %g, 2;\n"
          << "\tadd.u32 %y, %y, %g;\n"
          << "\tmad.lo.u32 %fb" << N(2 * j + v) << ", %row, " << N(t.b_rb)
          << ", %y;\n";
      }
    }
  }
}

std::string Regs(const std::string& name, std::initializer_list<int64_t> idx) {
  std::string out = "{";
  bool first = true;
  for (int64_t i : idx) {
    out += (first ? "" : ", ") + name + N(i);
    first = false;
  }
  return out + "}";
}

// Fragment registers: two buffers (k step parity), buffer `buf` of A is
// %xa[4*mt*buf ..], of B %xb[2*nt*buf ..], so that step s+1's fragments
// load while step s's mma's run.
std::string FragA(const Tiling& t, int64_t buf, int64_t i) {
  return "%xa" + N(4 * t.mt * buf + i);
}
std::string FragB(const Tiling& t, int64_t buf, int64_t j) {
  return "%xb" + N(2 * t.nt * buf + j);
}
std::string Regs4(const std::string& a, const std::string& b,
                  const std::string& c, const std::string& d) {
  return "{" + a + ", " + b + ", " + c + ", " + d + "}";
}

// The fragments of k step kk (of BK/ks) of the stage at register `base`
// (ldmatrix, or ld.shared where tf32 is contiguous along M or N) into
// buffer `buf`; tf32 fragments are rounded as they arrive.
void EmitFragmentLoads(Ptx& p, const Tiling& t, int64_t kk, int64_t buf,
                       const std::string& base) {
  // sm_90 rounds to tf32 in one instruction (cvt.rn: F2FP, nearest, ties
  // to even); sm_80 has only cvt.rna (nearest, ties away), which ptxas
  // expands to three (an Inf/NaN test, an add, a mask).
  const std::string cvt =
      t.sm >= 90 ? "cvt.rn.tf32.f32 " : "cvt.rna.tf32.f32 ";
  const bool tf32 = t.prec == MmaPrecision::kTf32;
  auto fa = [&](int64_t i) { return FragA(t, buf, i); };
  auto fb = [&](int64_t j) { return FragB(t, buf, j); };
  p << "\t// fragments of k step " << N(kk) << " into buffer " << N(buf)
    << ": A\n";
  if (t.a_kc) {
    p << "\tadd.u32 %ad, " << base << ", %fa" << N(kk) << ";\n";
    for (int64_t i = 0; i < t.mt; ++i)
      p << "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 "
        << Regs4(fa(4 * i), fa(4 * i + 1), fa(4 * i + 2), fa(4 * i + 3))
        << ", [%ad+" << N(16 * i * t.a_rb) << "];\n";
  } else if (!t.ScalarA()) {
    for (int64_t i = 0; i < t.mt; ++i)
      p << "\tadd.u32 %ad, " << base << ", %fa" << N(i) << ";\n"
        << "\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
        << Regs4(fa(4 * i), fa(4 * i + 1), fa(4 * i + 2), fa(4 * i + 3))
        << ", [%ad+" << N(kk * t.ks * t.a_rb) << "];\n";
  } else {
    for (int64_t i = 0; i < 4 * t.mt; ++i)
      p << "\tadd.u32 %ad, " << base << ", %fa" << N(i) << ";\n"
        << "\tld.shared.b32 " << fa(i) << ", [%ad+" << N(kk * t.ks * t.a_rb)
        << "];\n";
  }
  p << "\t// B\n";
  const int64_t boff = t.a_stage;
  if (t.b_kc) {
    p << "\tadd.u32 %ad, " << base << ", %fb" << N(kk) << ";\n";
    for (int64_t j = 0; j < t.nt; j += 2) {
      const std::string imm = N(boff + 8 * j * t.b_rb);
      if (j + 1 < t.nt) {
        p << "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 "
          << Regs4(fb(2 * j), fb(2 * j + 1), fb(2 * j + 2), fb(2 * j + 3))
          << ", [%ad+" << imm << "];\n";
      } else {
        p << "\tldmatrix.sync.aligned.m8n8.x2.shared.b16 {" << fb(2 * j)
          << ", " << fb(2 * j + 1) << "}, [%ad+" << imm << "];\n";
      }
    }
  } else if (!t.ScalarB()) {
    for (int64_t j = 0; j < t.nt; j += 2) {
      const std::string imm = N(boff + kk * t.ks * t.b_rb);
      p << "\tadd.u32 %ad, " << base << ", %fb" << N(j / 2) << ";\n";
      if (j + 1 < t.nt) {
        p << "\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
          << Regs4(fb(2 * j), fb(2 * j + 1), fb(2 * j + 2), fb(2 * j + 3))
          << ", [%ad+" << imm << "];\n";
      } else {
        p << "\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {" << fb(2 * j)
          << ", " << fb(2 * j + 1) << "}, [%ad+" << imm << "];\n";
      }
    }
  } else if (t.VecB()) {
    for (int64_t v = 0; v < 2; ++v) {
      p << "\tadd.u32 %ad, " << base << ", %fb" << N(v) << ";\n";
      for (int64_t u = 0; u < t.nt / 4; ++u)
        p << "\tld.shared.v4.b32 "
          << Regs4(fb(8 * u + v), fb(8 * u + 2 + v), fb(8 * u + 4 + v),
                   fb(8 * u + 6 + v))
          << ", [%ad+" << N(boff + kk * t.ks * t.b_rb + 128 * u) << "];\n";
    }
  } else {
    for (int64_t j = 0; j < 2 * t.nt; ++j)
      p << "\tadd.u32 %ad, " << base << ", %fb" << N(j) << ";\n"
        << "\tld.shared.b32 " << fb(j) << ", [%ad+"
        << N(boff + kk * t.ks * t.b_rb) << "];\n";
  }
  if (tf32) {
    p << "\t// round the fragments to tf32 (nearest)\n";
    for (int64_t i = 0; i < 4 * t.mt; ++i)
      p << "\t" << cvt << fa(i) << ", " << fa(i) << ";\n";
    for (int64_t j = 0; j < 2 * t.nt; ++j)
      p << "\t" << cvt << fb(j) << ", " << fb(j) << ";\n";
  }
}

// The MT x NT mma.sync of one k step on fragment buffer `buf`, in a
// serpentine order (odd rows of tiles right to left) so that consecutive
// mma's share an A or a B fragment.
void EmitMmas(Ptx& p, const Tiling& t, int64_t buf) {
  const std::string mma =
      t.prec == MmaPrecision::kTf32
          ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
      : t.prec == MmaPrecision::kBf16
          ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
          : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  p << "\t// " << N(t.mt) << " x " << N(t.nt) << " mma on buffer " << N(buf)
    << "\n";
  for (int64_t i = 0; i < t.mt; ++i) {
    for (int64_t jj = 0; jj < t.nt; ++jj) {
      const int64_t j = i % 2 ? t.nt - 1 - jj : jj;
      const int64_t c = 4 * (i * t.nt + j);
      const std::string acc = Regs("%acc", {c, c + 1, c + 2, c + 3});
      p << "\t" << mma << " " << acc << ", "
        << Regs4(FragA(t, buf, 4 * i), FragA(t, buf, 4 * i + 1),
                 FragA(t, buf, 4 * i + 2), FragA(t, buf, 4 * i + 3))
        << ", {" << FragB(t, buf, 2 * j) << ", " << FragB(t, buf, 2 * j + 1)
        << "}, " << acc << ";\n";
    }
  }
}

// The copies of one full stage of an interior program (its BM x BN tile
// inside M x N, the stage's BK steps inside its K range): EmitCopies'
// twin without the bounds, so no src-size and no per-copy predicate
// arithmetic (ptxas turns a src-size into an address adjustment and a
// predicate, ~6 instructions per copy). It keeps EmitCopies' bookkeeping
// registers (%p, %rs, %s, %step, %k0) so that the general loop can take
// over where this one stops.
void EmitInteriorCopies(Ptx& p, const Tiling& t, char x) {
  const bool a = x == 'a';
  const std::string s(1, x);
  const int64_t rows = a ? t.a_rows : t.b_rows;
  const int64_t chunks = a ? t.a_chunks : t.b_chunks;
  const int64_t rb = a ? t.a_rb : t.b_rb;
  const int64_t copies = a ? t.a_copies : t.b_copies;
  const int64_t off = a ? 0 : t.a_stage;
  if (a ? t.RegularA() : t.RegularB()) {
    const int64_t rstep = t.threads / chunks;
    const bool same_swizzle = rstep % 8 == 0 || copies == 1;
    p << "\tmov.u64 %pcp, %p" << s << "0;\n";
    for (int64_t i = 0; i < copies; ++i) {
      const bool guarded = (i + 1) * t.threads > rows * chunks;
      if (guarded) {
        p << "\tsetp.lt.u32 %pg, %r0" << s << ", " << N(rows - i * rstep)
          << ";\n";
      }
      const std::string soff = same_swizzle ? "%s" + s + "0" : "%s" + s + N(i);
      const int64_t imm = off + (same_swizzle ? i * rstep * rb : 0);
      p << "\tadd.u32 %dst, %slot_w, " << soff << ";\n"
        << "\t" << (guarded ? "@%pg " : "")
        << "cp.async.cg.shared.global [%dst+" << N(imm) << "], [%pcp], 16;\n";
      if (i + 1 < copies) p << "\tadd.u64 %pcp, %pcp, %rs" << s << ";\n";
    }
    p << "\tadd.u64 %p" << s << "0, %p" << s << "0, %step" << s << ";\n";
    return;
  }
  for (int64_t i = 0; i < copies; ++i) {
    const bool guarded = (i + 1) * t.threads > rows * chunks;
    const std::string I = N(i);
    p << "\tadd.u32 %dst, %slot_w, %s" << s << I << ";\n"
      << "\t" << (guarded ? "@%q" + s + I + " " : "")
      << "cp.async.cg.shared.global [%dst+" << N(off) << "], [%p" << s << I
      << "], 16;\n"
      << "\tadd.u64 %p" << s << I << ", %p" << s << I << ", %step" << s
      << ";\n";
  }
}

// Calls emit(i, h, j, c, acc) for every accumulator element after setting
// %prow/%x (row) and, per element, %pc (in bounds) and %y (column).
template <typename F>
void ForEachElement(Ptx& p, const Tiling& t, F&& emit_row, F&& emit) {
  for (int64_t i = 0; i < t.mt; ++i) {
    for (int64_t h = 0; h < 2; ++h) {
      p << "\tadd.u32 %x, %erow, " << N(16 * i + 8 * h) << ";\n"
        << "\tsetp.lt.u32 %prow, %x, %M;\n";
      emit_row(i, h, 0, 0, std::string());
      for (int64_t j = 0; j < t.nt; ++j) {
        for (int64_t c = 0; c < 2; ++c) {
          const std::string acc = "%acc" + N(4 * (i * t.nt + j) + 2 * h + c);
          p << "\tadd.u32 %y, %ecol, " << N(t.ColumnOffset(j, c)) << ";\n"
            << "\tsetp.lt.u32 %pc, %y, %N;\n"
            << "\tand.pred %pc, %pc, %prow;\n";
          emit(i, h, j, c, acc);
        }
      }
    }
  }
}

// C = alpha * acc + beta * C, in the output type, predicated on M and N.
void EmitStoreC(Ptx& p, const Tiling& t) {
  const bool tf32 = t.prec == MmaPrecision::kTf32;
  const std::string cvt_out =
      t.prec == MmaPrecision::kBf16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32";
  p << "\t// ---- C = alpha * acc + beta * C (C is not read when beta == 0)\n"
    << "\tsetp.ne.f32 %pbeta, %beta, 0f00000000;\n";
  auto row = [&](int64_t, int64_t, int64_t, int64_t, const std::string&) {
    p << "\tmul.wide.u32 %rowoff, %x, %ldc;\n";
  };
  auto elem = [&](int64_t, int64_t, int64_t, int64_t, const std::string& acc) {
    p << "\tcvt.u64.u32 %d1, %y;\n"
      << "\tadd.u64 %ea, %rowoff, %d1;\n"
      << "\tshl.b64 %ea, %ea, " << N(Log2(t.esize)) << ";\n"
      << "\tadd.u64 %ea, %ea, %C;\n"
      << "\tmul.f32 %val, " << acc << ", %alpha;\n"
      << "\tand.pred %pld, %pc, %pbeta;\n";
    if (tf32) {
      p << "\t@%pld ld.global.f32 %old, [%ea];\n"
        << "\t@%pld fma.rn.f32 %val, %old, %beta, %val;\n"
        << "\t@%pc st.global.f32 [%ea], %val;\n";
      return;
    }
    p << "\t@%pld ld.global.b16 %h, [%ea];\n";
    if (t.prec == MmaPrecision::kBf16) {
      p << "\t@%pld cvt.u32.u16 %g, %h;\n\t@%pld shl.b32 %g, %g, 16;\n"
        << "\t@%pld mov.b32 %old, %g;\n";
    } else {
      p << "\t@%pld cvt.f32.f16 %old, %h;\n";
    }
    p << "\t@%pld fma.rn.f32 %val, %old, %beta, %val;\n"
      << "\t" << cvt_out << " %h, %val;\n"
      << "\t@%pc st.global.b16 [%ea], %h;\n";
  };
  ForEachElement(p, t,
                 std::function<void(int64_t, int64_t, int64_t, int64_t,
                                    const std::string&)>(row),
                 std::function<void(int64_t, int64_t, int64_t, int64_t,
                                    const std::string&)>(elem));
}

// The split-K tree (split_reduce 1): the K_G programs of a tile form
// groups of kSplitRadix consecutive z; each program stores its partial sum
// to W, fences, and counts itself in on its group's counter; the last to
// arrive adds the group's partials in z order and goes on as the group's
// representative one level up (its sum stored in the slot of the group's
// first z), until one program holds the tile's total. Every sum is taken in
// a fixed order, so the bits do not depend on which program arrives last;
// the last arriver zeroes the counter, so every launch leaves them zero.
// Partials are stored per thread (thread-major v4 of the accumulator
// fragments): W[(tile * K_G + slot) * BM*BN + (j * threads + thr) * 4 + e].
void EmitSplitTree(Ptx& p, const Tiling& t) {
  const int64_t groups = t.mt * t.nt;     // v4 fragments per thread
  const int64_t tile_bytes = t.bm * t.bn * 4;
  const int64_t gstride = t.threads * 16;  // bytes between fragments j
  const int64_t r = kSplitRadix;
  p << "\t// ---- split-K tree: radix " << N(r) << ", " << N(SplitLevels(t.kg))
    << " level(s); partials thread-major in W, counters after them\n"
    << "\tmul.wide.u32 %d0, %pid, " << N(t.kg) << ";\n"
    << "\tmul.lo.u64 %d0, %d0, " << N(tile_bytes) << ";\n"
    << "\tadd.u64 %wz, %W, %d0;  // this tile's slot 0\n"
    << "\tmul.wide.u32 %d1, %thr, 16;\n\tadd.u64 %wz, %wz, %d1;\n"
    << "\tcvt.u64.u32 %d0, %gm;\n\tcvt.u64.u32 %d1, %gn;\n"
    << "\tmul.lo.u64 %d0, %d0, %d1;  // tiles\n"
    << "\tmul.lo.u64 %d0, %d0, " << N(t.kg * tile_bytes) << ";\n"
    << "\tadd.u64 %cnt, %W, %d0;  // counters\n"
    << "\tmul.wide.u32 %d1, %pid, " << N(4 * (t.kg + kSplitCounterPad))
    << ";\n\tadd.u64 %cnt, %cnt, %d1;\n"
    << "\tsetp.eq.u32 %pl, %thr, 0;\n";
  int64_t unit = 1;
  for (int64_t level = 0; unit < t.kg; ++level, unit *= r) {
    const int64_t span = unit * r;
    const std::string L = N(level);
    p << "\t// level " << L << ": groups of " << N(r) << " slots " << N(unit)
      << " z apart; %x = this program's slot, %y = its group's first slot\n"
      << "\tdiv.u32 %x, %z, " << N(unit) << ";\n\tmul.lo.u32 %x, %x, "
      << N(unit) << ";\n"
      << "\tdiv.u32 %y, %z, " << N(span) << ";\n\tmul.lo.u32 %y, %y, "
      << N(span) << ";\n"
      << "\tsub.u32 %g, " << N(t.kg + unit - 1) << ", %y;\n"
      << "\tdiv.u32 %g, %g, " << N(unit) << ";\n\tmin.u32 %g, %g, " << N(r)
      << ";  // members\n"
      << "\tmul.wide.u32 %d0, %x, " << N(tile_bytes) << ";\n"
      << "\tadd.u64 %ea, %wz, %d0;\n";
    for (int64_t j = 0; j < groups; ++j) {
      p << "\tst.global.v4.f32 [%ea+" << N(j * gstride) << "], "
        << Regs("%acc", {4 * j, 4 * j + 1, 4 * j + 2, 4 * j + 3}) << ";\n";
    }
    p << "\tmembar.gl;\n\tbar.sync 0;\n"
      << "\tadd.u32 %e, %y, " << L << ";  // counter of (level, group)\n"
      << "\tmul.wide.u32 %d0, %e, 4;\n\tadd.u64 %rowoff, %cnt, %d0;\n"
      << "\t@%pl atom.global.add.u32 %e, [%rowoff], 1;\n"
      << "\t@%pl st.shared.u32 [%smem], %e;\n"
      << "\tbar.sync 0;\n"
      << "\tld.shared.u32 %e, [%smem];\n"
      << "\tsub.u32 %g, %g, 1;\n"
      << "\tsetp.ne.u32 %pk, %e, %g;\n"
      << "\t@%pk ret;\n"
      << "\tmembar.gl;\n"
      << "\t@%pl st.global.u32 [%rowoff], 0;  // zero again for the next "
         "launch\n"
      << "\t// the group's sum, slots y + " << N(unit) << "*i in order\n";
    for (int64_t i = 0; i < r; ++i) {
      p << "\tsetp.le.u32 %pz" << N(i) << ", " << N(i) << ", %g;\n"
        << "\tadd.u32 %e, %y, " << N(i * unit) << ";\n"
        << "\tmul.wide.u32 %d0, %e, " << N(tile_bytes) << ";\n"
        << "\tadd.u64 %wa" << N(i) << ", %wz, %d0;\n";
    }
    for (int64_t j = 0; j < groups; ++j) {
      for (int64_t i = 0; i < r; ++i) {
        const std::string I = N(i);
        p << "\tmov.f32 %zs" << N(4 * i) << ", 0f00000000;\n"
          << "\tmov.f32 %zs" << N(4 * i + 1) << ", 0f00000000;\n"
          << "\tmov.f32 %zs" << N(4 * i + 2) << ", 0f00000000;\n"
          << "\tmov.f32 %zs" << N(4 * i + 3) << ", 0f00000000;\n"
          << "\t@%pz" << I << " ld.global.cg.v4.f32 "
          << Regs("%zs", {4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3}) << ", [%wa"
          << I << "+" << N(j * gstride) << "];\n";
      }
      for (int64_t e = 0; e < 4; ++e) {
        const std::string acc = "%acc" + N(4 * j + e);
        p << "\tmov.f32 " << acc << ", %zs" << N(e) << ";\n";
        for (int64_t i = 1; i < r; ++i)
          p << "\tadd.f32 " << acc << ", " << acc << ", %zs" << N(4 * i + e)
            << ";\n";
      }
    }
  }
  EmitStoreC(p, t);
  p << "\tret;\n}\n";
}

// The epilogue. K_G == 1: C directly. K_G > 1, split_reduce 0: fp32
// partial sums to W[z][row][col] for the reduce entry; split_reduce 1: the
// split-K tree (EmitSplitTree).
void EmitEpilogue(Ptx& p, const Tiling& t) {
  using Emit = std::function<void(int64_t, int64_t, int64_t, int64_t,
                                  const std::string&)>;
  p << "$EPILOGUE:\n"
    << "\t// ---- epilogue: accumulator (i, j, e) is row m0 + warp_m*WM + 16i"
    << " + gid + 8*(e/2), column n0 + warp_n*WN + 8j + 2*tig + e%2\n"
    << "\tmad.lo.u32 %ecol, %wni, " << N(t.wn) << ", %n0;\n"
    << "\tshl.b32 %x, %tig, " << N(t.TigColumnShift())
    << ";\n\tadd.u32 %ecol, %ecol, %x;\n"
    << "\tmad.lo.u32 %erow, %wmi, " << N(t.wm) << ", %m0;\n"
    << "\tadd.u32 %erow, %erow, %gid;\n";
  if (t.kg == 1) {
    EmitStoreC(p, t);
    p << "\tret;\n}\n";
    return;
  }
  if (t.sk == 1) return EmitSplitTree(p, t);
  p << "\t// ---- partial sums to the workspace W[z][row][col]\n";
  Emit part_row = [&](int64_t, int64_t, int64_t, int64_t, const std::string&) {
    p << "\tmul.wide.u32 %rowoff, %z, %M;\n\tcvt.u64.u32 %d1, %x;\n"
      << "\tadd.u64 %rowoff, %rowoff, %d1;\n\tcvt.u64.u32 %d1, %N;\n"
      << "\tmul.lo.u64 %rowoff, %rowoff, %d1;\n";
  };
  Emit part = [&](int64_t, int64_t, int64_t, int64_t, const std::string& acc) {
    p << "\tcvt.u64.u32 %d1, %y;\n\tadd.u64 %ea, %rowoff, %d1;\n"
      << "\tshl.b64 %ea, %ea, 2;\n\tadd.u64 %ea, %ea, %W;\n"
      << "\t@%pc st.global.f32 [%ea], " << acc << ";\n";
  };
  ForEachElement(p, t, part_row, part);
  p << "\tret;\n}\n";
}

constexpr int kReduceUnroll = 8;

}  // namespace

void EmitDeclarations(Ptx& p, const Tiling& t) {
  const std::string ac = N(t.a_copies), bc = N(t.b_copies);
  p << "\t.reg .pred %pl, %pk, %pc, %pld, %pbeta, %prow, %qa<" << ac
    << ">, %qb<" << bc << ">, %va<" << ac << ">, %vb<" << bc << ">;\n"
    << "\t.reg .b32 %M, %N, %K, %lda, %ldb, %ldc, %thr, %lane, %warp, %wmi, "
       "%wni, %gid, %tig, %q, %r8, %pid, %z, %gm, %gn, %tm, %tn, %m0, %n0;\n"
    << "\t.reg .b32 %kc, %kbeg, %kend, %ntiles, %k0, %krem, %t, %e, %row, "
       "%ch, %x, %y, %g, %sz, %dst, %ad, %smem, %smem_end, %slot_r, %slot_w, "
       "%erow, %ecol;\n"
    << "\t.reg .b32 %sa<" << ac << ">, %sb<" << bc << ">, %kka<" << ac
    << ">, %kkb<" << bc << ">, %rka<" << ac << ">, %rkb<" << bc << ">, %cba<"
    << ac << ">, %cbb<" << bc << ">;\n"
    << "\t.reg .b32 %fa<" << N(t.FragAddrA()) << ">, %fb<" << N(t.FragAddrB())
    << ">, %xa<" << N(8 * t.mt) << ">, %xb<" << N(4 * t.nt) << ">;\n"
    << "\t.reg .b64 %A, %B, %C, %W, %d0, %d1, %stepa, %stepb, %rowoff, %ea;\n"
    << "\t.reg .b64 %pa<" << ac << ">, %pb<" << bc << ">, %pcp, %rsa, %rsb;\n"
    << "\t.reg .b32 %r0a, %r0b, %rla, %rlb, %kr, %sz0, %nfast;\n"
    << "\t.reg .pred %pg, %pe, %pst;\n"
    << "\t.reg .b32 %szq, %slot_st, %hw<4>;\n"
    << "\t.reg .b16 %ha<" << N(8 * t.a_copies) << ">, %hb<"
    << N(8 * t.b_copies) << ">;\n"
    << "\t.reg .b64 %cnt, %wz, %wa<" << N(kSplitRadix) << ">;\n"
    << "\t.reg .pred %pz<" << N(kSplitRadix) << ">;\n"
    << "\t.reg .f32 %zs<" << N(4 * kSplitRadix) << ">;\n"
    << "\t.reg .b16 %h;\n"
    << "\t.reg .f32 %alpha, %beta, %val, %old, %acc<" << N(4 * t.mt * t.nt)
    << ">;\n\n";
}

void EmitMainBody(Ptx& p, const Tiling& t, const std::string& arch,
                  const StageHooks& h) {
  if (t.kg > 1 && t.sk == 0 && ArchNumber(arch) >= 90) {
    p << "\t// ---- the reduce entry may launch now (programmatic dependent "
         "launch); it waits for this grid with griddepcontrol.wait\n"
      << "\tgriddepcontrol.launch_dependents;\n";
  }
  p << "\t// ---- thread coordinates: warp (warp_m, warp_n) = (warp % "
    << N(t.warps_m) << ", warp / " << N(t.warps_m)
    << "); mma lane roles gid = lane/4, tig = lane%4; ldmatrix roles q = "
       "lane/8, r8 = lane%8\n"
    << "\tmov.u32 %thr, %tid.x;\n\tand.b32 %lane, %thr, 31;\n"
    << "\tshr.u32 %warp, %thr, 5;\n"
    << "\trem.u32 %wmi, %warp, " << N(t.warps_m) << ";\n"
    << "\tdiv.u32 %wni, %warp, " << N(t.warps_m) << ";\n"
    << "\tshr.u32 %gid, %lane, 2;\n\tand.b32 %tig, %lane, 3;\n"
    << "\tshr.u32 %q, %lane, 3;\n\tand.b32 %r8, %lane, 7;\n";
  p << "\t// ---- grouped raster: group_m = " << N(t.group_m)
    << " rows of tiles at a time, walked column by column\n"
    << "\tmov.u32 %pid, %ctaid.x;\n\tmov.u32 %z, %ctaid.y;\n"
    << "\tadd.u32 %gm, %M, " << N(t.bm - 1) << ";\n"
    << "\tdiv.u32 %gm, %gm, " << N(t.bm) << ";\n"
    << "\tadd.u32 %gn, %N, " << N(t.bn - 1) << ";\n"
    << "\tdiv.u32 %gn, %gn, " << N(t.bn) << ";\n"
    << "\tmul.lo.u32 %x, %gn, " << N(t.group_m) << ";\n"
    << "\tdiv.u32 %y, %pid, %x;\n\trem.u32 %g, %pid, %x;\n"
    << "\tmul.lo.u32 %y, %y, " << N(t.group_m) << ";\n"
    << "\tsub.u32 %x, %gm, %y;\n\tmin.u32 %x, %x, " << N(t.group_m) << ";\n"
    << "\trem.u32 %tm, %g, %x;\n\tadd.u32 %tm, %tm, %y;\n"
    << "\tdiv.u32 %tn, %g, %x;\n"
    << "\tmul.lo.u32 %m0, %tm, " << N(t.bm) << ";\n"
    << "\tmul.lo.u32 %n0, %tn, " << N(t.bn) << ";\n";
  h.k_range(p);
  p << "\tmov.u32 %smem, smem;\n"
    << "\tadd.u32 %smem_end, %smem, " << N(t.stages * t.stage) << ";\n";
  h.copy_setup(p);
  EmitFragmentSetup(p, t);
  p << "\t// ---- accumulators\n";
  for (int64_t i = 0; i < 4 * t.mt * t.nt; ++i)
    p << "\tmov.f32 %acc" << N(i) << ", 0f00000000;\n";
  p << "\tsetp.eq.u32 %pl, %ntiles, 0;\n\t@%pl bra $EPILOGUE;\n";

  p << "\t// ---- prologue: steps 0 .. stages-2 into slots 0 .. stages-2, one "
       "commit group each (empty past the last step)\n";
  h.start(p);
  p << "\tmov.u32 %slot_w, %smem;\n";
  for (int64_t s = 0; s + 1 < t.stages; ++s) {
    p << "\tsetp.ge.u32 %pl, " << N(s) << ", %ntiles;\n"
      << "\t@%pl bra $PRO" << N(s) << ";\n";
    h.copies(p);
    p << "\tmov.u32 %slot_st, %slot_w;\n";
    EmitDeferredStores(p, t, 'a');
    EmitDeferredStores(p, t, 'b');
    h.advance(p);
    p << "$PRO" << N(s) << ":\n\tcp.async.commit_group;\n"
      << "\tadd.u32 %slot_w, %slot_w, " << N(t.stage) << ";\n";
  }
  // The main loop, software-pipelined as CUTLASS's multistage loop: the
  // fragments of k step s+1 load while the mma's of step s run, across
  // the stage boundary too. The wait and barrier for stage t+1 sit before
  // the last k step's mma's of stage t, whose fragments are already in
  // registers. No branch inside a body: the copies past the last stage
  // are issued anyway and zero-fill, so ptxas schedules a body as one
  // block. Two loops where the hooks have interior copies: first the
  // stages whose copies need no bounds (the cheap copies), then the
  // general one for the rest. 2-byte copies (registers, stored to shared
  // memory later) store in the last k step, before the barrier that
  // publishes stage t+1, so that their loads have the step's math to
  // arrive.
  const bool narrow = t.cw_a == 2 || t.cw_b == 2;
  const bool fast = static_cast<bool>(h.interior_copies);
  p << "\tmov.u32 %slot_r, %smem;\n\tmov.u32 %t, 0;\n"
    << "\t// ---- stage 0 is in slot_r once at most stages-2 groups are "
       "pending\n"
    << "\tcp.async.wait_group " << N(t.stages - 2) << ";\n\tbar.sync 0;\n";
  EmitFragmentLoads(p, t, 0, 0, "%slot_r");
  // One stage of the loop (t -> t+1); `interior` picks the bounds-free
  // copies. With an odd number of k steps (one) a body is two stages, so
  // that the fragment buffers alternate with fixed names; the general
  // loop may leave between the two for `exit_label` (the interior one
  // runs an even number of stages).
  const int64_t bodies = t.ksteps % 2 ? 2 : 1;
  auto emit_body = [&](bool interior, const std::string& loop_label,
                       const std::string& bound,
                       const std::string& exit_label) {
    p << loop_label << ":\n";
    for (int64_t body = 0; body < bodies; ++body) {
      for (int64_t kk = 0; kk < t.ksteps; ++kk) {
        const int64_t cur = (body * t.ksteps + kk) % 2, nxt = 1 - cur;
        if (kk == 0) {
          p << "\t// ---- copies of stage t + stages-1 into slot_w (it held "
               "stage t-1, whose reads all ended before the barrier in stage "
               "t-1's last k step)"
            << (interior ? ", no bounds (interior)"
                         : "; past the end they zero-fill")
            << "\n";
          if (interior) {
            h.interior_copies(p);
          } else {
            h.copies(p);
            if (narrow) p << "\tmov.u32 %slot_st, %slot_w;\n";
          }
          h.advance(p);
          p << "\tcp.async.commit_group;\n"
            << "\tadd.u32 %slot_w, %slot_w, " << N(t.stage) << ";\n"
            << "\tsetp.eq.u32 %pl, %slot_w, %smem_end;\n"
            << "\t@%pl mov.u32 %slot_w, %smem;\n";
        }
        if (kk + 1 < t.ksteps) {
          EmitFragmentLoads(p, t, kk + 1, nxt, "%slot_r");
        } else {
          if (narrow && !interior) {
            p << "\t// ---- 2-byte copies of stage t + stages-1 to shared "
                 "memory (zeros past the end)\n";
            EmitDeferredStores(p, t, 'a');
            EmitDeferredStores(p, t, 'b');
          }
          p << "\t// ---- stage t+1: wait for its copies; the barrier also "
               "ends every read of stage t (all its fragments are loaded), "
               "so its slot may be refilled\n"
            << "\tadd.u32 %slot_r, %slot_r, " << N(t.stage) << ";\n"
            << "\tsetp.eq.u32 %pl, %slot_r, %smem_end;\n"
            << "\t@%pl mov.u32 %slot_r, %smem;\n"
            << "\tcp.async.wait_group " << N(t.stages - 2) << ";\n"
            << "\tbar.sync 0;\n";
          EmitFragmentLoads(p, t, 0, nxt, "%slot_r");
        }
        EmitMmas(p, t, cur);
      }
      p << "\tadd.u32 %t, %t, 1;\n";
      if (body + 1 < bodies) {
        if (!interior) {
          p << "\tsetp.ge.u32 %pl, %t, " << bound << ";\n"
            << "\t@%pl bra " << exit_label << ";\n";
        }
      } else {
        p << "\tsetp.lt.u32 %pl, %t, " << bound << ";\n"
          << "\t@%pl bra " << loop_label << ";\n";
      }
    }
  };
  p << "\t// ---- main loop: k step s+1's fragments load while step s's "
       "mma's run, across stages too\n";
  if (fast) {
    p << "\t// ---- first the stages whose copies are all in bounds (interior "
         "program, full BK), then the rest\n";
    h.interior_count(p);
    if (bodies == 2) p << "\tand.b32 %nfast, %nfast, -2;\n";
    p << "\tselp.b32 %nfast, %nfast, 0, %pl;\n"
      << "\tsetp.eq.u32 %pl, %nfast, 0;\n"
      << "\t@%pl bra $GENERAL;\n";
    emit_body(true, "$FAST", "%nfast", "");
  }
  p << "$GENERAL:\n"
    << "\tsetp.ge.u32 %pl, %t, %ntiles;\n"
    << "\t@%pl bra $DRAIN;\n";
  emit_body(false, "$LOOP", "%ntiles", "$DRAIN");
  p << "$DRAIN:\n\tcp.async.wait_all;\n";
  EmitEpilogue(p, t);
}

std::string MainEntry(const MmaProblem& prob, const Tiling& t,
                      const std::string& arch, const MmaPacking* pack) {
  const GemmContext& g = prob.ctx;
  const bool a_t = g.layout_a == Layout::kT, b_t = g.layout_b == Layout::kT;
  Ptx p;
  p << "//\n// blocktune gemm.mma v" << N(kGemmMmaGeneratorVersion) << ", "
    << ToString(t.prec)
    << ": C = alpha * op(A) * op(B) + beta * C with mma.sync\n"
    << "// BM=" << N(t.bm) << " BN=" << N(t.bn) << " BK=" << N(t.bk)
    << " warps " << N(t.warps_m) << "x" << N(t.warps_n) << " (warp tile "
    << N(t.wm) << "x" << N(t.wn) << " = " << N(t.mt) << "x" << N(t.nt)
    << " m16n8 tiles) stages=" << N(t.stages) << " K_G=" << N(t.kg)
    << " group_m=" << N(t.group_m) << "; A " << (a_t ? "T" : "N") << ", B "
    << (b_t ? "T" : "N") << "\n"
    << "// shared ring: " << N(t.stages) << " x (A " << N(t.a_rows)
    << " rows x " << N(t.a_rb) << " B + B " << N(t.b_rows) << " rows x "
    << N(t.b_rb) << " B), 16-byte chunks XOR-swizzled per row\n";
  if (pack != nullptr) {
    p << "// gemm.mma_pk v" << N(kGemmMmaPackedGeneratorVersion)
      << ": blocktune_gemm_mma_pack first copies "
      << (pack->a && pack->b ? "A and B" : pack->a ? "A" : "B")
      << " into the workspace, rows padded to 16 bytes\n";
  }
  p << "//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n"
    << ".extern .shared .align 128 .b8 smem[];\n\n"
    << ".visible .entry blocktune_gemm_mma(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta)\n"
    << MaxRegisterDirective(t) << "{\n";
  EmitDeclarations(p, t);
  EmitCommonParams(p);
  if (pack != nullptr) {
    p << "\t// ---- packed operands: read from the workspace (after "
         "gemm.mma's own part)\n";
    if (pack->a) {
      p << "\tadd.u64 %A, %W, " << N(pack->a_offset) << ";\n"
        << "\tmov.u32 %lda, " << N(pack->lda) << ";\n";
    }
    if (pack->b) {
      p << "\tadd.u64 %B, %W, " << N(pack->b_offset) << ";\n"
        << "\tmov.u32 %ldb, " << N(pack->ldb) << ";\n";
    }
  }
  StageHooks h;
  h.k_range = [&](Ptx& q) {
    q << "\t// ---- this program's share of K (K_G = " << N(t.kg)
      << "): chunks of ceil(K / (K_G*BK)) * BK\n"
      << "\tadd.u32 %kc, %K, " << N(t.kg * t.bk - 1) << ";\n"
      << "\tdiv.u32 %kc, %kc, " << N(t.kg * t.bk) << ";\n"
      << "\tmul.lo.u32 %kc, %kc, " << N(t.bk) << ";\n"
      << "\tmul.lo.u32 %kbeg, %z, %kc;\n\tmin.u32 %kbeg, %kbeg, %K;\n"
      << "\tadd.u32 %kend, %kbeg, %kc;\n\tmin.u32 %kend, %kend, %K;\n"
      << "\tsub.u32 %ntiles, %kend, %kbeg;\n"
      << "\tadd.u32 %ntiles, %ntiles, " << N(t.bk - 1) << ";\n"
      << "\tdiv.u32 %ntiles, %ntiles, " << N(t.bk) << ";\n";
  };
  h.copy_setup = [&](Ptx& q) {
    EmitCopySetup(q, t, 'a');
    EmitCopySetup(q, t, 'b');
  };
  h.start = [](Ptx& q) { q << "\tmov.u32 %k0, %kbeg;\n"; };
  // %krem = K left from this step's start to the end of the program's K
  // range: copies past it zero-fill (krem <= 0 gives src-size 0).
  h.copies = [&](Ptx& q) {
    q << "\tsub.s32 %krem, %kend, %k0;\n";
    EmitCopies(q, t, 'a');
    EmitCopies(q, t, 'b');
  };
  h.advance = [&](Ptx& q) { q << "\tadd.u32 %k0, %k0, " << N(t.bk) << ";\n"; };
  // Only operands copied in 16-byte chunks take the interior loop: an
  // interior program (its tile inside M x N), full BK stages.
  if (t.cw_a == 16 && t.cw_b == 16) {
    h.interior_copies = [&](Ptx& q) {
      EmitInteriorCopies(q, t, 'a');
      EmitInteriorCopies(q, t, 'b');
    };
    h.interior_count = [&](Ptx& q) {
      q << "\tadd.u32 %x, %m0, " << N(t.bm) << ";\n"
        << "\tsetp.le.u32 %pl, %x, %M;\n"
        << "\tadd.u32 %x, %n0, " << N(t.bn) << ";\n"
        << "\tsetp.le.and.u32 %pl, %x, %N, %pl;\n"
        << "\tsub.u32 %nfast, %kend, %kbeg;\n"
        << "\tdiv.u32 %nfast, %nfast, " << N(t.bk) << ";\n"
        << "\tsub.s32 %nfast, %nfast, " << N(t.stages - 1) << ";\n"
        << "\tmax.s32 %nfast, %nfast, 0;\n"
        << "\tmin.u32 %nfast, %nfast, %ntiles;\n";
    };
  }
  EmitMainBody(p, t, arch, h);
  return p.str();
}

std::string MaxRegisterDirective(const Tiling& t) {
  // No .maxntid: with it ptxas capped registers at 64 and spilled for 256
  // threads (as gemm_ptx.cc saw). Past 256 threads .maxnreg keeps a
  // program within the SM's 64K registers.
  return t.threads > 256 ? ".maxnreg " + N(65536 / t.threads) + "\n" : "";
}

void EmitCommonParams(Ptx& p) {
  p << "\t// ---- parameters\n"
    << "\tld.param.u64 %A, [pA];\n\tcvta.to.global.u64 %A, %A;\n"
    << "\tld.param.u64 %B, [pB];\n\tcvta.to.global.u64 %B, %B;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %K, [pK];\n\tld.param.u32 %lda, [plda];\n"
    << "\tld.param.u32 %ldb, [pldb];\n\tld.param.u32 %ldc, [pldc];\n"
    << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n";
}

std::string PackEntry(MmaPrecision prec, const MmaPacking& pack) {
  const int64_t es = ElementBytes(prec), v = 16 / es;
  const int64_t chunks_a = PackChunksA(pack, es);
  const int64_t chunks_b = PackChunksB(pack, es);
  Ptx p;
  p << "\n// ---- packing: " << (pack.a ? "A" : "") << (pack.a && pack.b ? ", " : "")
    << (pack.b ? "B" : "") << " copied into the workspace in rows of "
    << "16-byte chunks (A " << N(pack.rows_a) << " x " << N(pack.cols_a)
    << " -> ld " << N(pack.lda) << " at W+" << N(pack.a_offset) << "; B "
    << N(pack.rows_b) << " x " << N(pack.cols_b) << " -> ld "
    << N(pack.ldb) << " at W+" << N(pack.b_offset) << ")\n"
    << ".visible .entry blocktune_gemm_mma_pack(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta)\n{\n"
    << "\t.reg .pred %p, %q;\n"
    << "\t.reg .b32 %r, %nt, %w<4>;\n"
    << "\t.reg .b16 %h<8>;\n"
    << "\t.reg .b64 %A, %B, %W, %lda, %ldb, %c, %step, %i, %row, %col, %left, "
       "%src, %dst, %x;\n"
    << "\tld.param.u64 %A, [pA];\n\tcvta.to.global.u64 %A, %A;\n"
    << "\tld.param.u64 %B, [pB];\n\tcvta.to.global.u64 %B, %B;\n"
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u32 %r, [plda];\n\tcvt.u64.u32 %lda, %r;\n"
    << "\tld.param.u32 %r, [pldb];\n\tcvt.u64.u32 %ldb, %r;\n"
    << "\tmov.u32 %r, %ctaid.x;\n\tmov.u32 %nt, %ntid.x;\n"
    << "\tmul.wide.u32 %c, %r, %nt;\n"
    << "\tmov.u32 %r, %tid.x;\n\tcvt.u64.u32 %x, %r;\n"
    << "\tadd.u64 %c, %c, %x;\n"
    << "\tmov.u32 %r, %nctaid.x;\n\tmul.wide.u32 %step, %r, %nt;\n"
    << "$PACK_LOOP:\n"
    << "\tsetp.ge.u64 %p, %c, " << N(chunks_a + chunks_b) << ";\n"
    << "\t@%p bra $PACK_DONE;\n";
  // One operand's chunk %i: row %i / (ld / v), first column v * the rest.
  auto section = [&](const char* x, int64_t first, int64_t ld, int64_t cols,
                     int64_t offset) {
    const int64_t per_row = ld / v;
    p << "\tsub.u64 %i, %c, " << N(first) << ";\n"
      << "\tdiv.u64 %row, %i, " << N(per_row) << ";\n"
      << "\trem.u64 %col, %i, " << N(per_row) << ";\n"
      << "\tmul.lo.u64 %col, %col, " << N(v) << ";\n"
      << "\tsub.s64 %left, " << N(cols) << ", %col;\n"
      << "\tmad.lo.u64 %src, %row, %ld" << x << ", %col;\n"
      << "\tmad.lo.u64 %src, %src, " << N(es) << ", %" << (x[0] == 'a' ? "A" : "B")
      << ";\n"
      << "\tmad.lo.u64 %dst, %i, 16, %W;\n"
      << "\tadd.u64 %dst, %dst, " << N(offset) << ";\n";
    for (int64_t j = 0; j < v; ++j) {
      const std::string J = N(j);
      p << "\tsetp.gt.s64 %q, %left, " << J << ";\n";
      if (es == 2) {
        p << "\tmov.b16 %h" << J << ", 0;\n"
          << "\t@%q ld.global.nc.b16 %h" << J << ", [%src+" << N(2 * j)
          << "];\n";
      } else {
        p << "\tmov.b32 %w" << J << ", 0;\n"
          << "\t@%q ld.global.nc.b32 %w" << J << ", [%src+" << N(4 * j)
          << "];\n";
      }
    }
    if (es == 2) {
      for (int j = 0; j < 4; ++j)
        p << "\tmov.b32 %w" << N(j) << ", {%h" << N(2 * j) << ", %h"
          << N(2 * j + 1) << "};\n";
    }
    p << "\tst.global.v4.b32 [%dst], {%w0, %w1, %w2, %w3};\n";
  };
  if (pack.a && pack.b) {
    p << "\tsetp.ge.u64 %p, %c, " << N(chunks_a) << ";\n"
      << "\t@%p bra $PACK_B;\n";
  }
  if (pack.a) {
    section("a", 0, pack.lda, pack.cols_a, pack.a_offset);
    p << "\tbra.uni $PACK_NEXT;\n";
  }
  if (pack.b) {
    p << "$PACK_B:\n";
    section("b", chunks_a, pack.ldb, pack.cols_b, pack.b_offset);
  }
  p << "$PACK_NEXT:\n"
    << "\tadd.u64 %c, %c, %step;\n"
    << "\tbra.uni $PACK_LOOP;\n"
    << "$PACK_DONE:\n";
  p << "\tret;\n}\n";
  return p.str();
}

// Lanes per output: about eight partial sums per lane, 1..32 lanes (as the
// fp32 family's reduction, gemm_ptx.cc).
int64_t ReduceLanes(int64_t kg) {
  int64_t lanes = 1;
  while (lanes < 32 && lanes * 16 <= kg) lanes *= 2;
  return lanes;
}

ReduceLaunch MakeReduceLaunch(MmaPrecision prec, int64_t kg, int64_t m,
                              int64_t n, const std::string& arch) {
  const int64_t lanes = ReduceLanes(kg);
  ReduceLaunch r;
  r.ptx = ReduceEntry(prec, lanes, arch);
  r.grid = {static_cast<unsigned>(CeilDiv(m * n, kReduceThreads / lanes)), 1,
            1};
  r.block = {static_cast<unsigned>(kReduceThreads), 1, 1};
  r.dependent = ArchNumber(arch) >= 90;  // ReduceEntry's griddepcontrol.wait
  return r;
}

// W holds K_G fp32 partial results of M x N; C = alpha * sum_z W[z] +
// beta * C in the output type. Lane l of an output adds z = l, l+L, ... in
// order, then lane 0 adds the lane sums in lane order: every run gives the
// same bits.
std::string ReduceEntry(MmaPrecision prec, int64_t lanes,
                        const std::string& arch) {
  const int64_t outputs = kReduceThreads / lanes;
  const bool tf32 = prec == MmaPrecision::kTf32;
  Ptx p;
  p << "\n// ---- reduction of the K_G partial sums, in a fixed order: "
    << N(lanes) << " lane(s) per output, " << N(outputs)
    << " outputs per program\n"
    << ".visible .entry blocktune_gemm_mma_reduce(\n"
    << "\t.param .u64 pW, .param .u64 pC, .param .u32 pM, .param .u32 pN,\n"
    << "\t.param .u32 pldc, .param .u32 pkg, .param .f32 palpha, "
       ".param .f32 pbeta)\n{\n"
    << "\t.shared .align 4 .b8 sPart[" << N(kReduceThreads * 4) << "];\n"
    << "\t.reg .pred %p, %pv, %pmore, %pz<" << N(kReduceUnroll) << ">;\n"
    << "\t.reg .b32 %r, %M, %N, %ldc, %kg, %z, %zj, %lane, %xo, %sp;\n"
    << "\t.reg .b64 %W, %C, %i, %mn, %row, %col, %a, %n64, %stride;\n"
    << "\t.reg .b16 %h;\n"
    << "\t.reg .f32 %sum, %w<" << N(kReduceUnroll)
    << ">, %alpha, %beta, %old, %part;\n"
    << (ArchNumber(arch) >= 90
            ? "\t// the main grid's partial sums are complete and visible "
              "past this point\n\tgriddepcontrol.wait;\n"
            : "")
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %ldc, [pldc];\n\tld.param.u32 %kg, [pkg];\n"
    << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n"
    << "\tmov.u32 %r, %tid.x;\n"
    << "\trem.u32 %xo, %r, " << N(outputs) << ";\n"
    << "\tdiv.u32 %lane, %r, " << N(outputs) << ";\n"
    << "\tmov.u32 %r, %ctaid.x;\n"
    << "\tmul.wide.u32 %i, %r, " << N(outputs) << ";\n"
    << "\tcvt.u64.u32 %a, %xo;\n\tadd.u64 %i, %i, %a;\n"
    << "\tmul.wide.u32 %mn, %M, %N;\n"
    << "\tsetp.lt.u64 %pv, %i, %mn;\n"
    << "\tcvt.u64.u32 %a, %lane;\n\tmad.lo.u64 %a, %a, %mn, %i;\n"
    << "\tshl.b64 %a, %a, 2;\n\tadd.u64 %a, %a, %W;\n"
    << "\tmul.lo.u64 %stride, %mn, " << N(4 * lanes) << ";\n"
    << "\tmov.f32 %sum, 0f00000000;\n"
    << "\tmov.u32 %z, %lane;\n"
    << "\tsetp.lt.u32 %pmore, %z, %kg;\n"
    << "\tand.pred %pmore, %pmore, %pv;\n"
    << "\t@!%pmore bra $ADDED;\n"
    << "$SUM:\n";
  for (int j = 0; j < kReduceUnroll; ++j) {
    const std::string J = N(j);
    p << "\tadd.u32 %zj, %z, " << N(j * lanes) << ";\n"
      << "\tsetp.lt.u32 %pz" << J << ", %zj, %kg;\n";
    if (j > 0) p << "\tadd.u64 %a, %a, %stride;\n";
    p << "\t@%pz" << J << " ld.global.f32 %w" << J << ", [%a];\n";
  }
  for (int j = 0; j < kReduceUnroll; ++j)
    p << "\t@%pz" << N(j) << " add.f32 %sum, %sum, %w" << N(j) << ";\n";
  p << "\tadd.u64 %a, %a, %stride;\n"
    << "\tadd.u32 %z, %z, " << N(kReduceUnroll * lanes) << ";\n"
    << "\tsetp.lt.u32 %pmore, %z, %kg;\n"
    << "\t@%pmore bra $SUM;\n"
    << "$ADDED:\n"
    << "\tmov.u32 %sp, sPart;\n"
    << "\tmov.u32 %r, %tid.x;\n\tshl.b32 %r, %r, 2;\n"
    << "\tadd.u32 %r, %r, %sp;\n"
    << "\tst.shared.f32 [%r], %sum;\n"
    << "\tbar.sync 0;\n"
    << "\tsetp.ne.u32 %p, %lane, 0;\n\t@%p bra $DONE;\n";
  for (int64_t l = 1; l < lanes; ++l) {
    p << "\tld.shared.f32 %part, [%r+" << N(4 * l * outputs) << "];\n"
      << "\tadd.f32 %sum, %sum, %part;\n";
  }
  p << "\t@!%pv bra $DONE;\n"
    << "\tcvt.u64.u32 %n64, %N;\n"
    << "\tdiv.u64 %row, %i, %n64;\n\trem.u64 %col, %i, %n64;\n"
    << "\tcvt.u64.u32 %n64, %ldc;\n"
    << "\tmad.lo.u64 %a, %row, %n64, %col;\n"
    << "\tshl.b64 %a, %a, " << N(tf32 ? 2 : 1) << ";\n"
    << "\tadd.u64 %a, %a, %C;\n"
    << "\tmul.f32 %sum, %sum, %alpha;\n"
    << "\tsetp.ne.f32 %p, %beta, 0f00000000;\n";
  if (tf32) {
    p << "\t@%p ld.global.f32 %old, [%a];\n"
      << "\t@%p fma.rn.f32 %sum, %old, %beta, %sum;\n"
      << "\tst.global.f32 [%a], %sum;\n";
  } else {
    p << "\t@%p ld.global.b16 %h, [%a];\n";
    if (prec == MmaPrecision::kBf16) {
      p << "\t@%p cvt.u32.u16 %r, %h;\n\t@%p shl.b32 %r, %r, 16;\n"
        << "\t@%p mov.b32 %old, %r;\n";
    } else {
      p << "\t@%p cvt.f32.f16 %old, %h;\n";
    }
    p << "\t@%p fma.rn.f32 %sum, %old, %beta, %sum;\n"
      << "\t"
      << (prec == MmaPrecision::kBf16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32")
      << " %h, %sum;\n"
      << "\tst.global.b16 [%a], %h;\n";
  }
  p << "$DONE:\n\tret;\n}\n";
  return p.str();
}

}  // namespace blocktune::mma_internal
