#include "kernels/gemm_ptx.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr int64_t kReduceThreads = 256;
constexpr int64_t kMax32 = (int64_t{1} << 32) - 1;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string N(int64_t v) { return std::to_string(v); }

// Global load vector widths (1 or 4 elements) of A and B: 4 where every
// vector lies wholly inside or outside the bounds and starts 16-byte
// aligned: along K when the operand is contiguous in K (U and K multiples
// of 4), else along M or N (M_L and M, or N_L and N, multiples of 4). The
// convolution's gathered A is scalar. Generate emits these; the register
// estimate counts the loads at them.
struct LoadWidths {
  int64_t a, b;
};
LoadWidths ChooseLoadWidths(const GemmContext& g, bool conv,
                            const BlockShape& xb) {
  auto width = [&](bool contiguous_k, int64_t tile, int64_t dim) -> int64_t {
    if (contiguous_k) return xb.u % 4 == 0 && g.k % 4 == 0 ? 4 : 1;
    return tile % 4 == 0 && dim % 4 == 0 ? 4 : 1;
  };
  return {conv ? 1 : width(g.layout_a == Layout::kN, xb.ml, g.m),
          width(g.layout_b == Layout::kT, xb.nl, g.n)};
}

// The implicit GEMM of a convolution as the kernel computes it: A the
// gathered NHWC input (M = N*P*Q by K = C*R*S), B the KRSC filter, a
// transposed K x N operand.
GemmContext ConvAsGemm(const ConvContext& ctx) {
  const GemmShape shape = ImplicitGemm(ctx);
  GemmContext g;
  g.m = shape.m;
  g.n = shape.n;
  g.k = shape.k;
  g.layout_a = Layout::kN;
  g.layout_b = Layout::kT;
  g.dtype = ctx.dtype;
  return g;
}

// How a thread's global loads of one operand walk the tile (OperandWalk):
// r == 0, each load keeps its own pointer, K index and shared offset; r > 0,
// load j lies j * r tile rows past load 0, so the loads share load 0's
// pointer (plus j times a stride), K index and shared offset (plus j * smem
// bytes).
struct SharedWalk {
  int64_t r = 0;     // tile rows between loads; 0: no shared walk
  int64_t smem = 0;  // bytes between loads in a shared stage
  bool contiguous_k = false;  // rows run along K (A N, B T)
  // Every load's predicate is load 0's: the loads cover the tile exactly
  // and share its column (a row across M or N).
  bool one_predicate = false;
};

// The derived sizes of one block shape, named as in the PTX comments.
struct Tiling {
  int64_t ml, nl, ms, ns, u, kg;
  // ST: 1 stages through registers into two shared buffers (Listing 4.2);
  // ST >= 2 copies with cp.async into ST shared buffers.
  int64_t st;
  int64_t tm, tn, threads;  // TM = M_L/M_S threads down, TN = N_L/N_S across
  int64_t loads_a, loads_b; // global loads per thread per step
  // Shared rows (one per reduction index) are M_L + pad_a floats apart
  // (N_L + pad_b for B). Without padding, the U threads that stage one
  // row's consecutive K elements all hit one bank (ncu: 4.6-way store
  // conflicts); pad = 32/U spreads them, rounded to the fragment vector
  // width so vector reads stay aligned.
  int64_t row_a, row_b;
  int64_t stage_a, stage_b; // bytes of one shared-memory stage
  // Fragment vector widths: a thread's M_S rows come in groups of VA
  // adjacent rows (VB columns for N_S), so each group is one ld.shared.v4
  // (or v2) instead of VA scalar loads.
  int64_t va, vb;
  // Global load vector widths (1 or 4), chosen by Generate().
  int64_t vec_a, vec_b;
  // Shared walks of A's and B's loads, set by Generate() (OperandWalk).
  SharedWalk wa, wb;
  explicit Tiling(const BlockShape& xb, int64_t vec_a = 1, int64_t vec_b = 1)
      : ml(xb.ml), nl(xb.nl), ms(xb.ms), ns(xb.ns), u(xb.u), kg(xb.kg),
        st(xb.st), tm(xb.ml / xb.ms), tn(xb.nl / xb.ns), threads(tm * tn),
        loads_a(CeilDiv(xb.ml * xb.u / vec_a, threads)),
        loads_b(CeilDiv(xb.nl * xb.u / vec_b, threads)),
        va(VectorWidth(xb.ms)), vb(VectorWidth(xb.ns)),
        vec_a(vec_a), vec_b(vec_b) {
    row_a = xb.ml + Pad(xb.u, va);
    row_b = xb.nl + Pad(xb.u, vb);
    stage_a = xb.u * row_a * 4;
    stage_b = xb.u * row_b * 4;
  }
  // Shared buffers per operand: two for the register-staged pipeline.
  int64_t Buffers() const { return st == 1 ? 2 : st; }
  bool Async() const { return st > 1; }
  static int64_t Pad(int64_t u, int64_t v) {
    const int64_t spread = u >= 32 ? 1 : CeilDiv(32, u);
    return CeilDiv(spread, v) * v;
  }
  static int64_t VectorWidth(int64_t s) {
    return s % 4 == 0 ? 4 : s % 2 == 0 ? 2 : 1;
  }
  // Offset of a thread's i-th row (of M_S) from its first: group i / VA
  // lies TM*VA rows past the previous one.
  int64_t RowOffset(int64_t i) const { return (i / va) * tm * va + i % va; }
  int64_t ColOffset(int64_t j) const { return (j / vb) * tn * vb + j % vb; }
};

class Ptx {
 public:
  Ptx& operator<<(const std::string& s) {
    out_ << s;
    return *this;
  }
  Ptx& operator<<(int64_t v) {
    out_ << v;
    return *this;
  }
  Ptx& operator<<(const char* s) {
    out_ << s;
    return *this;
  }
  std::string str() const { return out_.str(); }
  // A fresh number for a label, unique within this text.
  int NextLabel() { return labels_++; }

 private:
  std::ostringstream out_;
  int labels_ = 0;
};

// Version 3: a thread's scalar loads of one operand share one pointer when
// the thread count is a multiple of the elements per tile row: then load j
// lies r = threads / per_row rows of the tile past load 0 (along K for a
// row across M or N, across M or N for a row along K), its shared offset
// `smem` bytes per load further and its pointer r * ld * 4 bytes. Scalar
// loads are an operand whose rows are not 16-byte aligned (an odd N, say):
// with a pointer, K index and offset per load, the 64x128 kernel of
// 1023x4097x520 NN took 153 registers (127 aligned) and 3 programs per SM
// instead of 4 (H100: 193.6 us against 106.0 at 1024x4096x520); sharing
// them, 127 registers and 113.7 us (bench/results/h100/ffma_odd_n/).
// 16-byte vector loads (2 to 4 a thread) keep their own: the walk measured
// 0.66-0.97x there on the 128x128 and 64x128 thread tiles, so aligned
// shapes emit version 2's PTX byte for byte.
SharedWalk OperandWalk(int64_t loads, int64_t extent, int64_t row, int64_t u,
                       int64_t threads, int64_t vec, bool contiguous_k) {
  const int64_t per_row = contiguous_k ? u / vec : extent / vec;
  if (vec != 1 || loads < 2 || per_row < 1 || threads % per_row != 0) return {};
  const int64_t r = threads / per_row;
  const bool exact = (extent * u / vec) % threads == 0;
  return {r, contiguous_k ? r * 4 : r * row * 4, contiguous_k,
          !contiguous_k && exact};
}

// One operand's staging: for load j of this thread, element (or vector of
// `vec` elements) e = tid + j*T of the tile, its offset in a shared stage,
// its reduction index kk and a pointer that walks along K one step at a
// time. A vector runs along the operand's contiguous dimension: along K
// when `contiguous_k`, else along M (A) or N (B).
void EmitOperandSetup(Ptx& p, char name, int64_t loads, int64_t extent,
                      int64_t row, int64_t u, int64_t threads, int64_t vec,
                      bool contiguous_k, bool k_major_pointer,
                      const SharedWalk& w = {}) {
  // name 'a': extent = M_L, row origin %m0, bound %M, ld %lda
  // name 'b': extent = N_L, col origin %n0, bound %N, ld %ldb
  const std::string s(1, name);
  const std::string origin = name == 'a' ? "%m0" : "%n0";
  const std::string bound = name == 'a' ? "%M" : "%N";
  const std::string ld = name == 'a' ? "%lda" : "%ldb";
  const std::string base = name == 'a' ? "%A" : "%B";
  const std::string smem = name == 'a' ? "%sA_0" : "%sB_0";
  const int64_t per_row = contiguous_k ? u / vec : extent / vec;
  for (int64_t j = 0; j < loads; ++j) {
    const std::string J = N(j);
    // With a shared walk, loads past the first keep only their predicate.
    const bool own = w.r == 0 || j == 0;
    if (!own && w.one_predicate) continue;
    const std::string kj = own ? "%k" + s + J : "%kt";
    const std::string sj = own ? "%s" + s + J : "%st";
    p << "\t// " << (name == 'a' ? "A" : "B") << " load " << J << ": "
      << (vec > 1 ? "vector of " + N(vec) + " at " : "element ") << "tid + "
      << N(j * threads) << " of the "
      << (name == 'a' ? "M_L x U" : "U x N_L") << " tile\n";
    p << "\tadd.u32 %e, %thr, " << N(j * threads) << ";\n";
    p << "\tsetp.lt.u32 %q" << s << J << ", %e, " << N(extent * u / vec)
      << ";\n";
    if (contiguous_k) {
      p << "\trem.u32 " << kj << ", %e, " << N(per_row) << ";\n";
      if (vec > 1) {
        p << "\tmul.lo.u32 " << kj << ", " << kj << ", "
          << N(vec) << ";\n";
      }
      p << "\tdiv.u32 %x, %e, " << N(per_row) << ";\n";
    } else {
      p << "\trem.u32 %x, %e, " << N(per_row) << ";\n";
      if (vec > 1) p << "\tmul.lo.u32 %x, %x, " << N(vec) << ";\n";
      p << "\tdiv.u32 " << kj << ", %e, " << N(per_row) << ";\n";
    }
    // Offset in a stage: stage[kk][x], x the row of A or column of B.
    p << "\tmad.lo.u32 " << sj << ", " << kj << ", " << N(row) << ", %x;\n";
    p << "\tshl.b32 " << sj << ", " << sj << ", 2;\n";
    p << "\tadd.u32 %x, %x, " << origin << ";\n";
    p << "\tsetp.lt.and.u32 %q" << s << J << ", %x, " << bound << ", %q" << s
      << J << ";\n";
    if (!own) continue;
    p << "\tadd.u32 %y, %kbeg, %k" << s << J << ";\n";
    if (k_major_pointer) {  // element (x, kk) at kk*ld + x
      p << "\tmul.wide.u32 %o, %y, " << ld << ";\n";
      p << "\tcvt.u64.u32 %o2, %x;\n";
    } else {  // at x*ld + kk
      p << "\tmul.wide.u32 %o, %x, " << ld << ";\n";
      p << "\tcvt.u64.u32 %o2, %y;\n";
    }
    p << "\tadd.u64 %o, %o, %o2;\n";
    p << "\tshl.b64 %o, %o, 2;\n";
    p << "\tadd.u64 %p" << s << J << ", " << base << ", %o;\n";
    p << "\tadd.u32 %s" << s << J << ", %s" << s << J << ", " << smem << ";\n";
  }
  if (w.r > 0) {
    p << "\tmul.wide.u32 %jst_" << s << ", " << ld << ", " << N(w.r * 4)
      << ";\n";
  }
}

// A shared address `at` bytes past %y: "[%y]" for 0, as versions before the
// shared walk wrote it, so that their kernels stay byte for byte the same.
std::string SharedAddress(int64_t at) {
  return at == 0 ? "[%y]" : "[%y+" + N(at) + "]";
}

// "{%la4, %la5, %la6, %la7}" for load 1 of width 4; "%la1" for width 1.
std::string StagingRegs(char name, int64_t j, int64_t vec) {
  const std::string r = std::string("%l") + name;
  if (vec == 1) return r + N(j);
  std::string out = "{";
  for (int64_t v = 0; v < vec; ++v)
    out += (v ? ", " : "") + r + N(j * vec + v);
  return out + "}";
}

// Global loads of one step into staging registers, predicated on the tile
// and on K (past %kend nothing is read and zeros are staged), then the
// pointers advance one step. A vector lies wholly inside or outside the
// bounds: its width divides K (or M, N) and U (or M_L, N_L).
void EmitLoads(Ptx& p, char name, int64_t loads, int64_t vec,
               const SharedWalk& w = {}) {
  const std::string s(1, name);
  for (int64_t j = 0; j < loads; ++j) {
    const std::string J = N(j);
    std::string ptr = "%p" + s + J;
    if (w.r > 0) {
      p << "\tadd.u32 %y, %k0, %k" << s << "0;\n";
      if (!w.contiguous_k && j > 0)
        p << "\tadd.u32 %y, %y, " << N(j * w.r) << ";\n";
      p << (j == 0 ? "\tmov.u64 %wp, %p" + s + "0;\n"
                   : "\tadd.u64 %wp, %wp, %jst_" + s + ";\n");
      ptr = "%wp";
    } else {
      p << "\tadd.u32 %y, %k0, %k" << s << J << ";\n";
    }
    const std::string Q = w.one_predicate ? "0" : J;
    p << "\tsetp.lt.and.u32 %pl, %y, %kend, %q" << s << Q << ";\n";
    for (int64_t v = 0; v < vec; ++v)
      p << "\tmov.f32 %l" << s << N(j * vec + v) << ", 0f00000000;\n";
    p << "\t@%pl ld.global.nc" << (vec > 1 ? ".v" + N(vec) : "") << ".f32 "
      << StagingRegs(name, j, vec) << ", [" << ptr << "];\n";
    if (w.r == 0) {
      p << "\tadd.u64 %p" << s << J << ", %p" << s << J << ", %step_" << s
        << ";\n";
    }
  }
  if (w.r > 0)
    p << "\tadd.u64 %p" << s << "0, %p" << s << "0, %step_" << s << ";\n";
}

// Where a staged vector of `vec` elements goes in a shared stage whose
// rows are `row` floats apart: whole (one vector store or copy) when it runs
// across M or N and rows stay aligned; else element v at byte
// StagedElementOffset (along K: `vec` rows; across: `vec` neighbours).
bool StagedVectorIsWhole(int64_t vec, bool contiguous_k, int64_t row) {
  return vec > 1 && !contiguous_k && row % vec == 0;
}
int64_t StagedElementOffset(int64_t v, bool contiguous_k, int64_t row) {
  return (contiguous_k ? v * row : v) * 4;
}

// EmitLoads and EmitStores in one, for ST >= 2: the step goes straight to
// the shared stage at offset `stage` by cp.async, what EmitStores would
// store where it would store it; past K the copy reads nothing (src-size 0,
// from the operand's base) and zero-fills.
void EmitAsyncLoads(Ptx& p, char name, int64_t loads, int64_t vec,
                    bool contiguous_k, int64_t row, const std::string& stage,
                    const SharedWalk& w = {}) {
  const std::string s(1, name);
  const std::string base = name == 'a' ? "%A" : "%B";
  const bool whole = StagedVectorIsWhole(vec, contiguous_k, row);
  for (int64_t j = 0; j < loads; ++j) {
    const std::string J = N(j);
    std::string ptr = "%p" + s + J, off = "%s" + s + J;
    int64_t at = 0;  // bytes past the offset register
    if (w.r > 0) {
      p << "\tadd.u32 %y, %k0, %k" << s << "0;\n";
      if (!w.contiguous_k && j > 0)
        p << "\tadd.u32 %y, %y, " << N(j * w.r) << ";\n";
      p << (j == 0 ? "\tmov.u64 %wp, %p" + s + "0;\n"
                   : "\tadd.u64 %wp, %wp, %jst_" + s + ";\n");
      ptr = "%wp";
      off = "%s" + s + "0";
      at = j * w.smem;
    } else {
      p << "\tadd.u32 %y, %k0, %k" << s << J << ";\n";
    }
    const std::string Q = w.one_predicate ? "0" : J;
    p << "\tsetp.lt.and.u32 %pl, %y, %kend, %q" << s << Q << ";\n"
      << "\tselp.b64 %src, " << ptr << ", " << base << ", %pl;\n"
      << "\tselp.u32 %cz, " << N(whole ? 4 * vec : 4) << ", 0, %pl;\n"
      << "\tadd.u32 %y, " << off << ", " << stage << ";\n";
    if (whole) {
      p << "\t@%q" << s << Q << " cp.async.cg.shared.global "
        << SharedAddress(at) << ", [%src], " << N(4 * vec) << ", %cz;\n";
    } else {
      for (int64_t v = 0; v < vec; ++v) {
        p << "\t@%q" << s << Q << " cp.async.ca.shared.global [%y+"
          << N(at + StagedElementOffset(v, contiguous_k, row)) << "], [%src+"
          << N(4 * v) << "], 4, %cz;\n";
      }
    }
    if (w.r == 0) {
      p << "\tadd.u64 %p" << s << J << ", %p" << s << J << ", %step_" << s
        << ";\n";
    }
  }
  if (w.r > 0)
    p << "\tadd.u64 %p" << s << "0, %p" << s << "0, %step_" << s << ";\n";
}

// Staging registers into the shared stage whose offset is in `stage`. A
// thread whose element lies past the tile (the tile's size need not be a
// multiple of the thread count) stores nothing: its offset is outside the
// stage. Rows past M and columns past N are not stored either; the results
// they would feed are never written. A vector along K goes to `vec` rows of
// the stage; one across M or N is one vector store when rows stay aligned.
void EmitStores(Ptx& p, char name, int64_t loads, const std::string& stage,
                int64_t vec, bool contiguous_k, int64_t row,
                const SharedWalk& w = {}) {
  const std::string s(1, name);
  for (int64_t j = 0; j < loads; ++j) {
    const int64_t at = w.r > 0 ? j * w.smem : 0;
    const std::string Q = w.one_predicate ? "0" : N(j);
    p << "\tadd.u32 %y, %s" << s << (w.r > 0 ? N(0) : N(j)) << ", " << stage
      << ";\n";
    if (StagedVectorIsWhole(vec, contiguous_k, row)) {
      p << "\t@%q" << s << Q << " st.shared.v" << N(vec) << ".f32 "
        << SharedAddress(at) << ", " << StagingRegs(name, j, vec) << ";\n";
      continue;
    }
    for (int64_t v = 0; v < vec; ++v) {
      p << "\t@%q" << s << Q << " st.shared.f32 [%y+"
        << N(at + StagedElementOffset(v, contiguous_k, row)) << "], %l" << s
        << N(j * vec + v) << ";\n";
    }
  }
}

// A vector of `width` consecutive fragment registers from shared memory.
void EmitFragmentLoad(Ptx& p, const std::string& frag, int64_t first,
                      int64_t width, const std::string& base, int64_t bytes) {
  p << "\tld.shared";
  if (width > 1) p << ".v" << N(width);
  p << ".f32 ";
  if (width > 1) p << "{";
  for (int64_t v = 0; v < width; ++v)
    p << (v ? ", " : "") << frag << N(first + v);
  if (width > 1) p << "}";
  p << ", [" << base << "+" << N(bytes) << "];\n";
}

// M_S*N_S*U FMAs on one shared stage. Thread (tm, tn) reads rows
// tm*VA + RowOffset(i) of A and columns tn*VB + ColOffset(j) of B: a warp
// reads consecutive 16-byte vectors of B and broadcasts vectors of A.
void EmitCompute(Ptx& p, const Tiling& t) {
  for (int64_t k = 0; k < t.u; ++k) {
    p << "\t// reduction step k = " << N(k) << "\n";
    for (int64_t i = 0; i < t.ms; i += t.va)
      EmitFragmentLoad(p, "%fa", i, t.va, "%ra",
                       (k * t.row_a + t.RowOffset(i)) * 4);
    for (int64_t j = 0; j < t.ns; j += t.vb)
      EmitFragmentLoad(p, "%fb", j, t.vb, "%rb",
                       (k * t.row_b + t.ColOffset(j)) * 4);
    for (int64_t i = 0; i < t.ms; ++i) {
      for (int64_t j = 0; j < t.ns; ++j) {
        const std::string c = "%c" + N(i * t.ns + j);
        p << "\tfma.rn.f32 " << c << ", %fa" << N(i) << ", %fb" << N(j) << ", "
          << c << ";\n";
      }
    }
  }
}

// Conv A: load j gathers row x = m0 + e/U of the implicit matrix, the
// output pixel (n, p, q) = x, whose window starts at input row
// hb = p*stride_h - pad_h and column wb = q*stride_w - pad_w of image n.
// The reduction index kk = (r*S + s)*C + c is walked as (r, s, c): one
// walk per thread when U divides the thread count, else one per load.
void EmitConvSetup(Ptx& p, const Tiling& t, int64_t walks) {
  for (int64_t j = 0; j < t.loads_a; ++j) {
    const std::string J = N(j);
    p << "\t// A load " << J << ": element tid + " << N(j * t.threads)
      << " of the M_L x U tile, an output pixel of the input window\n"
      << "\tadd.u32 %e, %thr, " << N(j * t.threads) << ";\n"
      << "\tsetp.lt.u32 %qa" << J << ", %e, " << N(t.ml * t.u) << ";\n"
      << "\trem.u32 %ka" << J << ", %e, " << N(t.u) << ";\n"
      << "\tdiv.u32 %x, %e, " << N(t.u) << ";\n"
      << "\tmad.lo.u32 %sa" << J << ", %ka" << J << ", " << N(t.row_a)
      << ", %x;\n"
      << "\tshl.b32 %sa" << J << ", %sa" << J << ", 2;\n"
      << "\tadd.u32 %sa" << J << ", %sa" << J << ", %sA_0;\n"
      << "\tadd.u32 %x, %x, %m0;\n"
      << "\tsetp.lt.and.u32 %qa" << J << ", %x, %M, %qa" << J << ";\n"
      << "\trem.u32 %y, %x, %oq;\n\tdiv.u32 %x, %x, %oq;\n"
      << "\tmul.lo.u32 %wb" << J << ", %y, %sw;\n"
      << "\tsub.s32 %wb" << J << ", %wb" << J << ", %pw;\n"
      << "\trem.u32 %y, %x, %op;\n\tdiv.u32 %x, %x, %op;\n"
      << "\tmul.lo.u32 %hb" << J << ", %y, %sh;\n"
      << "\tsub.s32 %hb" << J << ", %hb" << J << ", %ph;\n"
      << "\t// image base: A + n*H*W*C floats\n"
      << "\tmul.wide.u32 %o, %x, %hwc;\n\tshl.b64 %o, %o, 2;\n"
      << "\tadd.u64 %pa" << J << ", %A, %o;\n";
  }
  for (int64_t w = 0; w < walks; ++w) {
    const std::string W = N(w);
    p << "\t// walk " << W << ": (r, s, c) of kk = kbeg + ka" << W << "\n"
      << "\tadd.u32 %y, %kbeg, %ka" << W << ";\n"
      << "\trem.u32 %wc" << W << ", %y, %ic;\n\tdiv.u32 %y, %y, %ic;\n"
      << "\trem.u32 %ws" << W << ", %y, %fs;\n"
      << "\tdiv.u32 %wr" << W << ", %y, %fs;\n";
  }
}

// One step of conv A gathers: zero outside the image (padding), past the
// tile, past M and past this program's K; then every walk advances by U,
// carrying c into s and s into r.
// With a non-empty `stage` (ST >= 2) each gather is a 4-byte cp.async to
// that shared stage, zero-filled where the load would not read.
void EmitConvLoads(Ptx& p, const Tiling& t, int64_t walks,
                   const std::string& stage = "") {
  for (int64_t j = 0; j < t.loads_a; ++j) {
    const std::string J = N(j), W = N(walks == 1 ? 0 : j);
    p << "\tadd.u32 %y, %k0, %ka" << J << ";\n"
      << "\tsetp.lt.and.u32 %pl, %y, %kend, %qa" << J << ";\n"
      << "\tmad.lo.s32 %h, %wr" << W << ", %dh, %hb" << J << ";\n"
      << "\tmad.lo.s32 %w, %ws" << W << ", %dw, %wb" << J << ";\n"
      << "\tsetp.lt.and.u32 %pl, %h, %ih, %pl;  // unsigned: h < 0 fails\n"
      << "\tsetp.lt.and.u32 %pl, %w, %iw, %pl;\n"
      << "\tmad.lo.u32 %y, %h, %iw, %w;\n"
      << "\tmad.lo.u32 %y, %y, %ic, %wc" << W << ";\n"
      << "\tmul.wide.u32 %o, %y, 4;\n"
      << "\tadd.u64 %o, %o, %pa" << J << ";\n";
    if (!stage.empty()) {
      p << "\tselp.b64 %o, %o, %A, %pl;\n"
        << "\tselp.u32 %cz, 4, 0, %pl;\n"
        << "\tadd.u32 %y, %sa" << J << ", " << stage << ";\n"
        << "\t@%qa" << J << " cp.async.ca.shared.global [%y], [%o], 4, %cz;\n";
      continue;
    }
    p << "\tmov.f32 %la" << J << ", 0f00000000;\n"
      << "\t@%pl ld.global.nc.f32 %la" << J << ", [%o];\n";
  }
  for (int64_t w = 0; w < walks; ++w) {
    const std::string W = N(w), L = N(p.NextLabel());
    p << "\tadd.u32 %wc" << W << ", %wc" << W << ", " << N(t.u) << ";\n"
      << "$CARRY" << L << ":\n"
      << "\tsetp.lt.u32 %padv, %wc" << W << ", %ic;\n"
      << "\t@%padv bra $CARRIED" << L << ";\n"
      << "\tsub.u32 %wc" << W << ", %wc" << W << ", %ic;\n"
      << "\tadd.u32 %ws" << W << ", %ws" << W << ", 1;\n"
      << "\tsetp.eq.u32 %padv, %ws" << W << ", %fs;\n"
      << "\t@%padv mov.u32 %ws" << W << ", 0;\n"
      << "\t@%padv add.u32 %wr" << W << ", %wr" << W << ", 1;\n"
      << "\tbra $CARRY" << L << ";\n"
      << "$CARRIED" << L << ":\n";
  }
}

void EmitALoads(Ptx& p, const Tiling& t, int64_t walks) {
  if (walks > 0) {
    EmitConvLoads(p, t, walks);
  } else {
    EmitLoads(p, 'a', t.loads_a, t.vec_a, t.wa);
  }
}

// One step of A and B by cp.async into the shared stages at `stage_a` and
// `stage_b` (registers or immediates), then one commit group.
void EmitAsyncStep(Ptx& p, const Tiling& t, int64_t walks, bool a_t, bool b_t,
                   const std::string& stage_a, const std::string& stage_b) {
  if (walks > 0) {
    EmitConvLoads(p, t, walks, stage_a);
  } else {
    EmitAsyncLoads(p, 'a', t.loads_a, t.vec_a, !a_t, t.row_a, stage_a, t.wa);
  }
  EmitAsyncLoads(p, 'b', t.loads_b, t.vec_b, b_t, t.row_b, stage_b, t.wb);
  p << "\tcp.async.commit_group;\n";
}

// `reg` += `bytes`, back to 0 at `buffers` * `bytes`: the next stage.
void EmitNextStage(Ptx& p, const std::string& reg, int64_t bytes,
                   int64_t buffers) {
  p << "\tadd.u32 " << reg << ", " << reg << ", " << N(bytes) << ";\n"
    << "\tsetp.eq.u32 %pst, " << reg << ", " << N(bytes * buffers) << ";\n"
    << "\t@%pst mov.u32 " << reg << ", 0;\n";
}

// The main loop with ST >= 2 stages (multistage, one barrier a step):
// ST - 1 steps are in flight when step t is computed. Step t + ST - 1 goes
// to the stage step t - 1 was computed from, which every thread has left
// once it passes step t's barrier.
void EmitAsyncPipeline(Ptx& p, const Tiling& t, int64_t walks, bool a_t,
                       bool b_t) {
  p << "\t// ---- prologue: steps 0.." << N(t.st - 2) << " in flight, by "
    << "cp.async (past K: zero-filled)\n"
    << "\tmov.u32 %k0, %kbeg;\n";
  for (int64_t s = 0; s + 1 < t.st; ++s) {
    if (s > 0) p << "\tadd.u32 %k0, %k0, " << N(t.u) << ";\n";
    EmitAsyncStep(p, t, walks, a_t, b_t, N(s * t.stage_a), N(s * t.stage_b));
  }
  p << "\tmov.u32 %wr_a, " << N((t.st - 1) * t.stage_a) << ";\n"
    << "\tmov.u32 %wr_b, " << N((t.st - 1) * t.stage_b) << ";\n"
    << "\tmov.u32 %rd_a, 0;\n\tmov.u32 %rd_b, 0;\n"
    << "\tmov.u32 %t, 0;\n";
  p << "$LOOP:\n"
    << "\t// ---- step t has landed (this thread's copies), and every thread "
    << "is past step t-1\n"
    << "\tcp.async.wait_group " << N(t.st - 2) << ";\n"
    << "\tbar.sync 0;\n"
    << "\t// ---- step t+" << N(t.st - 1) << " into the stage step t-1 used\n"
    << "\tadd.u32 %k0, %k0, " << N(t.u) << ";\n";
  EmitAsyncStep(p, t, walks, a_t, b_t, "%wr_a", "%wr_b");
  EmitNextStage(p, "%wr_a", t.stage_a, t.st);
  EmitNextStage(p, "%wr_b", t.stage_b, t.st);
  p << "\t// ---- compute step t from shared memory\n"
    << "\tadd.u32 %cur_a, %sA_0, %rd_a;\n\tadd.u32 %cur_b, %sB_0, %rd_b;\n"
    << "\tmad.lo.u32 %ra, %tm, " << N(4 * t.va) << ", %cur_a;\n"
    << "\tmad.lo.u32 %rb, %tn, " << N(4 * t.vb) << ", %cur_b;\n";
  EmitCompute(p, t);
  EmitNextStage(p, "%rd_a", t.stage_a, t.st);
  EmitNextStage(p, "%rd_b", t.stage_b, t.st);
  p << "\tadd.u32 %t, %t, 1;\n"
    << "\tsetp.lt.u32 %pmore, %t, %ntiles;\n"
    << "\t@%pmore bra $LOOP;\n"
    << "\tcp.async.wait_all;  // the zero-filled steps past K\n";
}

// `conv` selects the implicit-GEMM convolution: A is gathered from the
// NHWC input and B is the KRSC filter, a transposed K x N operand.
std::string GemmEntry(const GemmContext& ctx, const Tiling& t,
                      const std::string& arch, bool conv) {
  const bool a_t = ctx.layout_a == Layout::kT;
  const bool b_t = ctx.layout_b == Layout::kT;
  // Conv A loads share one (r, s, c) walk when every load of a thread has
  // the same reduction index, i.e. when U divides the thread count.
  const int64_t walks = conv ? (t.threads % t.u == 0 ? 1 : t.loads_a) : 0;
  Ptx p;
  p << "//\n// blocktune GEMM k(x_B), fp32: C = alpha * op(A) * op(B) + beta * C\n"
    << "// x_B: M_L=" << N(t.ml) << " N_L=" << N(t.nl) << " M_S=" << N(t.ms)
    << " N_S=" << N(t.ns) << " U=" << N(t.u) << " K_G=" << N(t.kg)
    << (t.Async() ? " ST=" + N(t.st) + " (cp.async stages)" : "")
    << "; A " << (a_t ? "T" : "N") << ", B " << (b_t ? "T" : "N") << "\n"
    << "// " << N(t.threads) << " threads: thread (tm, tn) = (tid / "
    << N(t.tn) << ", tid % " << N(t.tn) << ") owns " << N(t.ms / t.va)
    << " groups of " << N(t.va) << " rows, at tm*" << N(t.va) << " + g*"
    << N(t.tm * t.va) << ", and " << N(t.ns / t.vb) << " groups of "
    << N(t.vb) << " columns, at tn*" << N(t.vb) << " + g*" << N(t.tn * t.vb)
    << ", of the program's block\n";
  if (conv) {
    p << "// implicit-GEMM convolution (thesis 4.1.2): NHWC input as A "
      << "(M = N*P*Q rows, K = R*S*C), KRSC filter as B (K x N, transposed),"
      << " NPQK output as C\n";
  }
  p << "//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n";

  p << ".visible .entry " << (conv ? "blocktune_conv" : "blocktune_gemm")
    << "(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta";
  if (conv) {
    p << ",\n\t.param .u32 pImgH, .param .u32 pImgW, .param .u32 pImgC,\n"
      << "\t.param .u32 pOutP, .param .u32 pOutQ, .param .u32 pFltS,\n"
      << "\t.param .u32 pPadH, .param .u32 pPadW, .param .u32 pStrH, "
      << ".param .u32 pStrW,\n\t.param .u32 pDilH, .param .u32 pDilW";
  }
  p << ")\n"
    // No .maxntid: with it ptxas caps registers far below the budget and
    // spills (seen: 40 registers and a 16-byte spill for 512 threads on
    // sm_80, where 44 registers and no spill fit).
    << "{\n";
  p << "\t.shared .align 16 .b8 sA[" << N(t.Buffers() * t.stage_a) << "];\n"
    << "\t.shared .align 16 .b8 sB[" << N(t.Buffers() * t.stage_b) << "];\n"
    << "\t.reg .pred %pl, %pmore, %pcol<" << N(t.ns) << ">, %prow, %pc, %pld, "
    << "%pbeta;\n"
    << "\t.reg .pred %qa<" << N(t.loads_a) << ">, %qb<" << N(t.loads_b) << ">;\n"
    << "\t.reg .b32 %M, %N, %K, %lda, %ldb, %ldc, %thr, %tm, %tn, %m0, %n0, "
    << "%z, %kc, %kbeg, %kend, %k0, %t, %ntiles, %e, %x, %y;\n"
    << "\t.reg .b32 %sA_0, %sB_0, %cur_a, %cur_b, %nxt_a, "
    << "%nxt_b, %ra, %rb, %col<" << N(t.ns) << ">;\n"
    << "\t.reg .b32 %ka<" << N(t.loads_a) << ">, %kb<" << N(t.loads_b)
    << ">, %sa<" << N(t.loads_a) << ">, %sb<" << N(t.loads_b) << ">;\n"
    << "\t.reg .b64 %A, %B, %C, %W, %o, %o2, %step_a, %step_b, %addr;\n"
    << (t.wa.r > 0 || t.wb.r > 0
            ? "\t.reg .b64 %wp, %jst_a, %jst_b;\n\t.reg .b32 %kt, %st;\n"
            : "")
    << "\t.reg .b64 %pa<" << N(t.loads_a) << ">, %pb<" << N(t.loads_b) << ">;\n"
    << "\t.reg .f32 %alpha, %beta, %v, %old;\n"
    << "\t.reg .f32 %c<" << N(t.ms * t.ns) << ">, %fa<" << N(t.ms) << ">, %fb<"
    << N(t.ns) << ">, %la<" << N(t.loads_a * t.vec_a) << ">, %lb<"
    << N(t.loads_b * t.vec_b)
    << ">;\n";
  if (conv) {
    p << "\t.reg .pred %padv;\n"
      << "\t.reg .b32 %ih, %iw, %ic, %op, %oq, %fs, %ph, %pw, %sh, %sw, "
      << "%dh, %dw, %h, %w, %hwc;\n"
      << "\t.reg .b32 %hb<" << N(t.loads_a) << ">, %wb<" << N(t.loads_a)
      << ">, %wr<" << N(walks) << ">, %ws<" << N(walks) << ">, %wc<"
      << N(walks) << ">;\n";
  }
  if (t.Async()) {
    p << "\t.reg .pred %pst;\n\t.reg .b32 %cz, %wr_a, %wr_b, %rd_a, %rd_b;\n"
      << "\t.reg .b64 %src;\n";
  }
  p << "\n";

  p << "\t// ---- parameters, program and thread coordinates\n"
    << "\tld.param.u64 %A, [pA];\n\tcvta.to.global.u64 %A, %A;\n"
    << "\tld.param.u64 %B, [pB];\n\tcvta.to.global.u64 %B, %B;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %K, [pK];\n\tld.param.u32 %lda, [plda];\n"
    << "\tld.param.u32 %ldb, [pldb];\n\tld.param.u32 %ldc, [pldc];\n"
    << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n"
    << "\tmov.u32 %thr, %tid.x;\n";
  if (conv) {
    p << "\tld.param.u32 %ih, [pImgH];\n\tld.param.u32 %iw, [pImgW];\n"
      << "\tld.param.u32 %ic, [pImgC];\n\tld.param.u32 %op, [pOutP];\n"
      << "\tld.param.u32 %oq, [pOutQ];\n\tld.param.u32 %fs, [pFltS];\n"
      << "\tld.param.u32 %ph, [pPadH];\n\tld.param.u32 %pw, [pPadW];\n"
      << "\tld.param.u32 %sh, [pStrH];\n\tld.param.u32 %sw, [pStrW];\n"
      << "\tld.param.u32 %dh, [pDilH];\n\tld.param.u32 %dw, [pDilW];\n"
      << "\tmul.lo.u32 %hwc, %ih, %iw;\n\tmul.lo.u32 %hwc, %hwc, %ic;\n";
  }
  p << "\tdiv.u32 %tm, %thr, " << N(t.tn) << ";\n"
    << "\trem.u32 %tn, %thr, " << N(t.tn) << ";\n"
    << "\tmov.u32 %m0, %ctaid.x;\n\tmul.lo.u32 %m0, %m0, " << N(t.ml) << ";\n"
    << "\tmov.u32 %n0, %ctaid.y;\n\tmul.lo.u32 %n0, %n0, " << N(t.nl) << ";\n"
    << "\tmov.u32 %sA_0, sA;\n\tmov.u32 %sB_0, sB;\n";
  p << "\t// ---- this program's share of K (reduction splitting, K_G = "
    << N(t.kg) << "): chunks of ceil(K / (K_G*U)) * U\n"
    << "\tmov.u32 %z, %ctaid.z;\n"
    << "\tadd.u32 %kc, %K, " << N(t.kg * t.u - 1) << ";\n"
    << "\tdiv.u32 %kc, %kc, " << N(t.kg * t.u) << ";\n"
    << "\tmul.lo.u32 %kc, %kc, " << N(t.u) << ";\n"
    << "\tmul.lo.u32 %kbeg, %z, %kc;\n"
    << "\tmin.u32 %kbeg, %kbeg, %K;\n"
    << "\tadd.u32 %kend, %kbeg, %kc;\n\tmin.u32 %kend, %kend, %K;\n"
    << "\tsub.u32 %ntiles, %kend, %kbeg;\n"
    << "\tadd.u32 %ntiles, %ntiles, " << N(t.u - 1) << ";\n"
    << "\tdiv.u32 %ntiles, %ntiles, " << N(t.u) << ";\n";
  p << "\t// ---- per-thread staging of A and B: offsets, predicates, pointers\n";
  if (conv) {
    EmitConvSetup(p, t, walks);
  } else {
    EmitOperandSetup(p, 'a', t.loads_a, t.ml, t.row_a, t.u, t.threads,
                     t.vec_a,
                     /*contiguous_k=*/!a_t, /*k_major_pointer=*/a_t, t.wa);
  }
  EmitOperandSetup(p, 'b', t.loads_b, t.nl, t.row_b, t.u, t.threads,
                   t.vec_b,
                   /*contiguous_k=*/b_t, /*k_major_pointer=*/!b_t, t.wb);
  // One step along K: U columns of A (N) or U rows (T), likewise for B.
  if (!conv) {
    p << (a_t ? "\tmul.wide.u32 %step_a, %lda, " + N(t.u * 4) + ";\n"
              : "\tmov.u64 %step_a, " + N(t.u * 4) + ";\n");
  }
  p << (b_t ? "\tmov.u64 %step_b, " + N(t.u * 4) + ";\n"
            : "\tmul.wide.u32 %step_b, %ldb, " + N(t.u * 4) + ";\n");

  p << "\t// ---- accumulators\n";
  for (int64_t i = 0; i < t.ms * t.ns; ++i)
    p << "\tmov.f32 %c" << N(i) << ", 0f00000000;\n";
  p << "\tsetp.eq.u32 %pl, %ntiles, 0;\n\t@%pl bra $EPILOGUE;\n";
  if (t.Async()) {
    EmitAsyncPipeline(p, t, walks, a_t, b_t);
  } else {
    p << "\t// ---- prologue: the first step into stage 0\n"
      << "\tmov.u32 %k0, %kbeg;\n";
    EmitALoads(p, t, walks);
    EmitLoads(p, 'b', t.loads_b, t.vec_b, t.wb);
    EmitStores(p, 'a', t.loads_a, "0", t.vec_a, !a_t, t.row_a, t.wa);
    EmitStores(p, 'b', t.loads_b, "0", t.vec_b, b_t, t.row_b, t.wb);
    p << "\tbar.sync 0;\n"
      << "\tmov.u32 %cur_a, %sA_0;\n\tmov.u32 %cur_b, %sB_0;\n"
      << "\tmov.u32 %nxt_a, " << N(t.stage_a) << ";\n"
      << "\tmov.u32 %nxt_b, " << N(t.stage_b) << ";\n"
      << "\tmov.u32 %t, 0;\n";
    p << "$LOOP:\n"
      << "\t// ---- prefetch step t+1 into registers (nothing past K)\n"
      << "\tadd.u32 %k0, %k0, " << N(t.u) << ";\n";
    EmitALoads(p, t, walks);
    EmitLoads(p, 'b', t.loads_b, t.vec_b, t.wb);
    p << "\t// ---- compute step t from shared memory\n"
      << "\tmad.lo.u32 %ra, %tm, " << N(4 * t.va) << ", %cur_a;\n"
      << "\tmad.lo.u32 %rb, %tn, " << N(4 * t.vb) << ", %cur_b;\n";
    EmitCompute(p, t);
    p << "\t// ---- stage step t+1, then swap stages\n";
    EmitStores(p, 'a', t.loads_a, "%nxt_a", t.vec_a, !a_t, t.row_a, t.wa);
    EmitStores(p, 'b', t.loads_b, "%nxt_b", t.vec_b, b_t, t.row_b, t.wb);
    p << "\tbar.sync 0;\n"
      << "\tadd.u32 %cur_a, %sA_0, %nxt_a;\n"
      << "\tadd.u32 %cur_b, %sB_0, %nxt_b;\n"
      << "\txor.b32 %nxt_a, %nxt_a, " << N(t.stage_a) << ";\n"
      << "\txor.b32 %nxt_b, %nxt_b, " << N(t.stage_b) << ";\n"
      << "\tadd.u32 %t, %t, 1;\n"
      << "\tsetp.lt.u32 %pmore, %t, %ntiles;\n"
      << "\t@%pmore bra $LOOP;\n";
  }

  p << "$EPILOGUE:\n";
  for (int64_t j = 0; j < t.ns; ++j) {
    p << "\tmad.lo.u32 %col" << N(j) << ", %tn, " << N(t.vb) << ", %n0;\n"
      << "\tadd.u32 %col" << N(j) << ", %col" << N(j) << ", "
      << N(t.ColOffset(j)) << ";\n"
      << "\tsetp.lt.u32 %pcol" << N(j) << ", %col" << N(j) << ", %N;\n";
  }
  if (t.kg == 1) {
    p << "\t// ---- C = alpha * acc + beta * C (C is not read when beta == 0)\n"
      << "\tsetp.ne.f32 %pbeta, %beta, 0f00000000;\n";
  } else {
    p << "\t// ---- partial sums to the workspace W[z][row][col]\n";
  }
  for (int64_t i = 0; i < t.ms; ++i) {
    p << "\tmad.lo.u32 %x, %tm, " << N(t.va) << ", %m0;\n"
      << "\tadd.u32 %x, %x, " << N(t.RowOffset(i)) << ";\n"
      << "\tsetp.lt.u32 %prow, %x, %M;\n";
    if (t.kg == 1) {
      p << "\tmul.wide.u32 %o, %x, %ldc;\n";
    } else {  // ((z*M + row) * N) in 64 bits
      p << "\tmul.wide.u32 %o, %z, %M;\n\tcvt.u64.u32 %o2, %x;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tcvt.u64.u32 %o2, %N;\n"
        << "\tmul.lo.u64 %o, %o, %o2;\n";
    }
    for (int64_t j = 0; j < t.ns; ++j) {
      const std::string c = "%c" + N(i * t.ns + j);
      p << "\tand.pred %pc, %prow, %pcol" << N(j) << ";\n"
        << "\tcvt.u64.u32 %o2, %col" << N(j) << ";\n"
        << "\tadd.u64 %addr, %o, %o2;\n\tshl.b64 %addr, %addr, 2;\n";
      if (t.kg == 1) {
        p << "\tadd.u64 %addr, %addr, %C;\n"
          << "\tmul.f32 %v, " << c << ", %alpha;\n"
          << "\tand.pred %pld, %pc, %pbeta;\n"
          << "\t@%pld ld.global.f32 %old, [%addr];\n"
          << "\t@%pld fma.rn.f32 %v, %old, %beta, %v;\n"
          << "\t@%pc st.global.f32 [%addr], %v;\n";
      } else {
        p << "\tadd.u64 %addr, %addr, %W;\n"
          << "\t@%pc st.global.f32 [%addr], " << c << ";\n";
      }
    }
  }
  p << "\tret;\n}\n";
  return p.str();
}

// Lanes per output of the K_G reduction: each output's K_G partial sums are
// split over L threads of one program, so that a small C with a large K_G
// (covariance: 64 x 64 outputs, K_G = 256) still has enough loads in
// flight. ncu on the H100 (64x64x131072, K_G = 256): one thread per output,
// 16 programs, 28.5 us, more than half the main kernel's 51 us.
// L = K_G / 8 rounded down to a power of two, in [1, 32]: about eight partial
// sums per thread, all eight loads in flight at once.
int64_t ReduceLanes(int64_t kg) {
  int64_t lanes = 1;
  while (lanes < 32 && lanes * 16 <= kg) lanes *= 2;
  return lanes;
}
constexpr int kReduceUnroll = 8;

// W holds K_G partial results of M x N; C = alpha * sum_z W[z] + beta * C.
// Lane l of an output adds z = l, l + L, l + 2L, ... in order, eight loads
// in flight at a time, then lane 0 adds the L lane sums in lane order: a fixed
// order, so every run gives the same bits.
std::string ReduceEntry(int64_t lanes, int64_t fixed_partials,
                        bool dependent) {
  const int64_t outputs = kReduceThreads / lanes;  // per program
  Ptx p;
  p << "\n// ---- reduction of the K_G partial sums, in a fixed order: "
    << N(lanes) << " lane(s) per output, " << N(outputs)
    << " outputs per program\n"
    << ".visible .entry blocktune_gemm_reduce(\n"
    << "\t.param .u64 pW, .param .u64 pC, .param .u32 pM, .param .u32 pN,\n"
    << "\t.param .u32 pldc, .param .u32 pkg, .param .f32 palpha, "
    << ".param .f32 pbeta)\n"
    << "{\n";
  if (lanes > 1)
    p << "\t.shared .align 4 .b8 sPart[" << N(kReduceThreads * 4) << "];\n";
  p << "\t.reg .pred %p, %pv, %pmore, %pz<" << N(kReduceUnroll) << ">;\n"
    << "\t.reg .b32 %r, %M, %N, %ldc, %kg, %z, %zj, %lane, %xo, %sp;\n"
    << "\t.reg .b64 %W, %C, %i, %mn, %row, %col, %a, %n64, %stride;\n"
    << "\t.reg .f32 %sum, %w<" << N(kReduceUnroll)
    << ">, %alpha, %beta, %old, %part;\n";
  if (dependent)
    p << "\t// a programmatic dependent launch: the main entry's partial sums "
         "are complete and visible past this point\n\tgriddepcontrol.wait;\n";
  p << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %ldc, [pldc];\n";
  if (fixed_partials > 0)
    p << "\tmov.u32 %kg, " << N(fixed_partials)
      << ";  // the partial sums, whatever pkg says\n";
  else
    p << "\tld.param.u32 %kg, [pkg];\n";
  p << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n"
    << "\t// output i = ctaid * " << N(outputs) << " + tid % " << N(outputs)
    << ", lane tid / " << N(outputs) << "\n"
    << "\tmov.u32 %r, %tid.x;\n"
    << "\trem.u32 %xo, %r, " << N(outputs) << ";\n"
    << "\tdiv.u32 %lane, %r, " << N(outputs) << ";\n"
    << "\tmov.u32 %r, %ctaid.x;\n"
    << "\tmul.wide.u32 %i, %r, " << N(outputs) << ";\n"
    << "\tcvt.u64.u32 %a, %xo;\n\tadd.u64 %i, %i, %a;\n"
    << "\tmul.wide.u32 %mn, %M, %N;\n"
    << "\tsetp.lt.u64 %pv, %i, %mn;\n"
    << "\t// W[lane][i], then L*M*N floats per step of this lane\n"
    << "\tcvt.u64.u32 %a, %lane;\n\tmad.lo.u64 %a, %a, %mn, %i;\n"
    << "\tshl.b64 %a, %a, 2;\n\tadd.u64 %a, %a, %W;\n"
    << "\tmul.lo.u64 %stride, %mn, " << N(4 * lanes) << ";\n"
    << "\tmov.f32 %sum, 0f00000000;\n"
    << "\tmov.u32 %z, %lane;\n"
    << "\tsetp.lt.u32 %pmore, %z, %kg;\n"
    << "\tand.pred %pmore, %pmore, %pv;\n"
    << "\t@!%pmore bra $ADDED;\n"
    << "$SUM:\n"
    << "\t// " << N(kReduceUnroll) << " loads in flight, then the adds in z "
    << "order\n";
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
    << "$ADDED:\n";
  if (lanes > 1) {
    p << "\t// lane sums through shared memory, added in lane order by lane 0\n"
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
  }
  p << "\t@!%pv bra $DONE;\n"
    << "\tcvt.u64.u32 %n64, %N;\n"
    << "\tdiv.u64 %row, %i, %n64;\n\trem.u64 %col, %i, %n64;\n"
    << "\tcvt.u64.u32 %n64, %ldc;\n"
    << "\tmad.lo.u64 %a, %row, %n64, %col;\n\tshl.b64 %a, %a, 2;\n"
    << "\tadd.u64 %a, %a, %C;\n"
    << "\tmul.f32 %sum, %sum, %alpha;\n"
    << "\tsetp.ne.f32 %p, %beta, 0f00000000;\n"
    << "\t@%p ld.global.f32 %old, [%a];\n"
    << "\t@%p fma.rn.f32 %sum, %old, %beta, %sum;\n"
    << "\tst.global.f32 [%a], %sum;\n"
    << "$DONE:\n\tret;\n}\n";
  return p.str();
}

}  // namespace

int64_t GemmSharedBytes(const BlockShape& xb) {
  Tiling t(xb);
  return t.Buffers() * (t.stage_a + t.stage_b);
}

int64_t KernelRegisterEstimate(const Context& ctx, const BlockShape& xb) {
  const auto* conv = std::get_if<ConvContext>(&ctx);
  const LoadWidths w =
      conv ? ChooseLoadWidths(ConvAsGemm(*conv), /*conv=*/true, xb)
           : ChooseLoadWidths(std::get<GemmContext>(ctx), /*conv=*/false, xb);
  int64_t registers = GemmRegisterEstimate(xb, w.a, w.b);
  if (conv) {
    // Window origins per load, the (r, s, c) walks, twelve shape scalars.
    Tiling t(xb);
    const int64_t walks = t.threads % t.u == 0 ? 1 : t.loads_a;
    registers += 2 * t.loads_a + 3 * walks + 12;
  }
  return registers;
}

Status CheckConvAddressing(const ConvContext& ctx) {
  const int64_t image = ctx.h * ctx.w * ctx.c;
  if (image > kMax32) {
    return FailedPrecondition("one input image, h*w*c = " + N(image) +
                              ", exceeds the kernel's 32-bit offsets (" +
                              N(kMax32) + ")");
  }
  GemmShape g = ImplicitGemm(ctx);
  if (g.m > kMaxDim || g.k > kMaxDim) {
    return FailedPrecondition(
        "the implicit GEMM's n*p*q = " + N(g.m) + " or c*r*s = " + N(g.k) +
        " exceeds " + N(kMaxDim));
  }
  return OkStatus();
}

int64_t GemmRegisterEstimate(const BlockShape& xb, int64_t vec_a,
                             int64_t vec_b) {
  Tiling t(xb, vec_a, vec_b);
  // Per staged load (a vector of vec elements or one): the values, a
  // 64-bit pointer, its K index, its shared offset and address temporaries.
  // Calibrated against ptxas 13.0 on 300 sampled kernels (gemm_ptxas_test):
  // with 5 per load and 40 overhead, 11 accepted shapes spilled at the
  // 255-register ceiling. Fragments count twice: ptxas keeps the next
  // step's A and B values in flight (an M_S=8, N_S=16 tile used 254
  // registers against an estimate of 235). The loads are counted at the
  // widths Generate chooses: counted as scalars, every M_S*N_S = 128 tile of
  // 128 or more threads was refused (estimates 280-336), while ptxas gives
  // a 128x128, U = 8 one 223 registers with vector loads (it spills with
  // scalar ones, estimate 336). K_G > 1 adds the split's bounds and the
  // workspace addressing: 12, from the M_S*N_S = 128, U = 4, K_G = 4 tiles
  // of 64 to 128 threads that spilled 24-32 bytes at 254 registers with 4
  // (kernels/family_ptxas_test.cc, LargestThreadTiles...).
  return t.ms * t.ns + 2 * (t.ms + t.ns) + 7 * (t.loads_a + t.loads_b) + 48 +
         (t.kg > 1 ? 12 : 0);
}

const char* ToString(HardwareRule rule) {
  switch (rule) {
    case HardwareRule::kNone: return "none";
    case HardwareRule::kThreads: return "threads";
    case HardwareRule::kSharedMemory: return "shared_memory";
    case HardwareRule::kRegisters: return "registers";
    case HardwareRule::kInstructionCache: return "instruction_cache";
    case HardwareRule::kGrid: return "grid";
    case HardwareRule::kAddressing: return "addressing";
    case HardwareRule::kAsyncCopy: return "async_copy";
  }
  return "?";
}

int64_t ReductionLoopBytes(const BlockShape& xb) {
  return 16 * (xb.ms * xb.u + xb.ns * xb.u + xb.ms * xb.ns * xb.u);
}

bool Passes(HardwareRule rule, const Context& ctx, const BlockShape& xb,
            const KernelLimits& limits) {
  switch (rule) {
    case HardwareRule::kNone:
      return true;
    case HardwareRule::kThreads:
      return xb.ThreadsPerProgram() <= limits.max_threads_per_block;
    case HardwareRule::kSharedMemory:
      return GemmSharedBytes(xb) <= limits.max_static_shared_bytes;
    case HardwareRule::kRegisters: {
      const int64_t registers = KernelRegisterEstimate(ctx, xb);
      return registers <= limits.max_registers_per_thread &&
             registers * xb.ThreadsPerProgram() <= limits.registers_per_sm;
    }
    case HardwareRule::kInstructionCache:
      return ReductionLoopBytes(xb) <= limits.instruction_cache_bytes;
    case HardwareRule::kGrid: {
      const GemmShape g = ImplicitGemm(ctx);
      return CeilDiv(g.n, xb.nl) <= 65535 &&
             CeilDiv(g.m, xb.ml) <= 2147483647;
    }
    case HardwareRule::kAddressing: {
      const auto* conv = std::get_if<ConvContext>(&ctx);
      if (!conv) return true;
      const GemmShape g = ImplicitGemm(ctx);
      return conv->h * conv->w * conv->c <= kMax32 && g.m <= kMaxDim &&
             g.k <= kMaxDim;
    }
    case HardwareRule::kAsyncCopy:
      return xb.st == 1 || limits.compute_capability >= 80;
  }
  return false;
}

HardwareRule FirstFailingHardwareRule(const Context& ctx, const BlockShape& xb,
                                      const KernelLimits& limits) {
  for (HardwareRule rule : kHardwareRules)
    if (!Passes(rule, ctx, xb, limits)) return rule;
  return HardwareRule::kNone;
}

Status CanImplement(const Context& ctx, const BlockShape& xb,
                    const KernelLimits& limits) {
  switch (FirstFailingHardwareRule(ctx, xb, limits)) {
    case HardwareRule::kNone:
      return OkStatus();
    case HardwareRule::kThreads:
      return FailedPrecondition("threads per program (M_L/M_S)*(N_L/N_S) = " +
                                N(xb.ThreadsPerProgram()) + " exceeds " +
                                N(limits.max_threads_per_block));
    case HardwareRule::kSharedMemory:
      return FailedPrecondition("shared memory max(2,ST)*U*(M_L+N_L+padding)*4 = " +
                                N(GemmSharedBytes(xb)) + " B exceeds " +
                                N(limits.max_static_shared_bytes) + " B");
    case HardwareRule::kRegisters:
      return FailedPrecondition("an estimated " +
                                N(KernelRegisterEstimate(ctx, xb)) +
                                " registers per thread do not fit (" +
                                N(limits.max_registers_per_thread) +
                                " per thread, " + N(limits.registers_per_sm) +
                                " per SM)");
    case HardwareRule::kInstructionCache:
      return FailedPrecondition(
          "the reduction loop, 16*(M_S*U + N_S*U + M_S*N_S*U) = " +
          N(ReductionLoopBytes(xb)) + " B, exceeds the instruction cache " +
          "S_IC = " + N(limits.instruction_cache_bytes) + " B");
    case HardwareRule::kGrid:
      return FailedPrecondition("grid y = ceil(N / N_L) = " +
                                N(CeilDiv(ImplicitGemm(ctx).n, xb.nl)) +
                                " exceeds 65535, or grid x = ceil(M / M_L) "
                                "exceeds 2^31-1");
    case HardwareRule::kAddressing:
      return CheckConvAddressing(std::get<ConvContext>(ctx));
    case HardwareRule::kAsyncCopy:
      return FailedPrecondition("ST = " + N(xb.st) +
                                " stages copy with cp.async, which needs "
                                "compute capability >= 8.0; this device has " +
                                N(limits.compute_capability / 10) + "." +
                                N(limits.compute_capability % 10));
  }
  return Internal("unknown hardware rule");
}

namespace {

StatusOr<GemmKernel> Generate(const GemmContext& g, bool conv,
                              const BlockShape& xb, const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(xb, "block_shape"));
  if (g.dtype != DType::kFp32) {
    return Unimplemented("the generator emits fp32 only, got " +
                         std::string(ToString(g.dtype)));
  }
  if (arch.rfind("sm_", 0) != 0) {
    return InvalidArgument("arch must look like sm_90, got '" + arch + "'");
  }
  if (xb.st > 1 && std::atoi(arch.c_str() + 3) < 80) {
    return FailedPrecondition("block_shape.st = " + N(xb.st) +
                              " needs cp.async, sm_80 or later; arch is " +
                              arch);
  }
  const LoadWidths w = ChooseLoadWidths(g, conv, xb);
  Tiling t(xb, w.a, w.b);
  if (!conv) {
    t.wa = OperandWalk(t.loads_a, t.ml, t.row_a, t.u, t.threads, t.vec_a,
                       /*contiguous_k=*/g.layout_a == Layout::kN);
  }
  t.wb = OperandWalk(t.loads_b, t.nl, t.row_b, t.u, t.threads, t.vec_b,
                     /*contiguous_k=*/g.layout_b == Layout::kT);
  GemmKernel kernel;
  kernel.vector_a = w.a;
  kernel.vector_b = w.b;
  kernel.ptx = GemmEntry(g, t, arch, conv);
  kernel.entry = conv ? "blocktune_conv" : "blocktune_gemm";
  kernel.grid = {static_cast<unsigned>(CeilDiv(g.m, t.ml)),
                 static_cast<unsigned>(CeilDiv(g.n, t.nl)),
                 static_cast<unsigned>(t.kg)};
  kernel.block = {static_cast<unsigned>(t.threads), 1, 1};
  if (t.kg > 1) AddSplitReduce(t.kg, g.m, g.n, &kernel);
  return kernel;
}

}  // namespace

void AddSplitReduce(int64_t kg, int64_t m, int64_t n, GemmKernel* kernel,
                    bool fixed_partials, bool dependent) {
  const int64_t lanes = ReduceLanes(kg);
  kernel->ptx += ReduceEntry(lanes, fixed_partials ? kg : 0, dependent);
  kernel->reduce_entry = "blocktune_gemm_reduce";
  kernel->reduce_dependent = dependent;
  kernel->reduce_grid = {
      static_cast<unsigned>(CeilDiv(m * n, kReduceThreads / lanes)), 1, 1};
  kernel->reduce_block = {static_cast<unsigned>(kReduceThreads), 1, 1};
  kernel->workspace_bytes = kg * m * n * 4;
}

GeneratedKernel FromGemmKernel(const KernelFamily& family, GemmKernel k,
                               Op op) {
  GeneratedKernel out = ToGenerated(family, k);
  out.reduce_entry = std::move(k.reduce_entry);
  out.reduce_dependent = k.reduce_dependent;
  out.reduce_grid = k.reduce_grid;
  out.reduce_block = k.reduce_block;
  out.pack_entry = std::move(k.pack_entry);
  out.pack_grid = k.pack_grid;
  out.pack_block = k.pack_block;
  out.align_a = k.vector_a;
  out.align_b = k.vector_b;
  out.align_bytes = 4 * std::max(k.vector_a, k.vector_b);
  out.entry_params = EntryParams(op);
  if (!out.reduce_entry.empty()) out.reduce_params = ReduceParams();
  return out;
}

StatusOr<GemmKernel> GenerateGemm(const GemmContext& ctx, const BlockShape& xb,
                                  const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(ctx, "gemm"));
  return Generate(ctx, /*conv=*/false, xb, arch);
}

StatusOr<GemmKernel> GenerateConv(const ConvContext& ctx, const BlockShape& xb,
                                  const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(ctx, "conv"));
  BT_RETURN_IF_ERROR(CheckConvAddressing(ctx));
  return Generate(ConvAsGemm(ctx), /*conv=*/true, xb, arch);
}

StatusOr<GemmKernel> GenerateKernel(const Context& ctx, const BlockShape& xb,
                                    const std::string& arch) {
  if (const auto* conv = std::get_if<ConvContext>(&ctx))
    return GenerateConv(*conv, xb, arch);
  return GenerateGemm(std::get<GemmContext>(ctx), xb, arch);
}

std::vector<KernelParam> EntryParams(Op op) {
  std::vector<KernelParam> params = {
      {"A", "u64", 0, 8, op == Op::kConv ? "NHWC input" : "A, M x K (K x M when T)"},
      {"B", "u64", 8, 8, op == Op::kConv ? "KRSC filter" : "B, K x N (N x K when T)"},
      {"C", "u64", 16, 8, op == Op::kConv ? "NPQK output" : "C, M x N"},
      {"W", "u64", 24, 8, "workspace of K_G*M*N floats; 0 when K_G == 1"},
      {"M", "u32", 32, 4, op == Op::kConv ? "N*P*Q" : "rows of C"},
      {"N", "u32", 36, 4, op == Op::kConv ? "K (output channels)" : "columns of C"},
      {"K", "u32", 40, 4, op == Op::kConv ? "C*R*S" : "reduction length"},
      {"lda", "u32", 44, 4, op == Op::kConv ? "C" : "leading dimension of A"},
      {"ldb", "u32", 48, 4, op == Op::kConv ? "C*R*S" : "leading dimension of B"},
      {"ldc", "u32", 52, 4, op == Op::kConv ? "K" : "leading dimension of C"},
      {"alpha", "f32", 56, 4, "C = alpha * op(A) * op(B) + beta * C"},
      {"beta", "f32", 60, 4, "beta 0 never reads C"},
  };
  if (op == Op::kConv) {
    static const char* const kConvNames[12][2] = {
        {"H", "input height"},      {"W_in", "input width"},
        {"C_in", "input channels"}, {"P", "output height"},
        {"Q", "output width"},      {"S", "filter width"},
        {"pad_h", "rows of zeros above"}, {"pad_w", "columns of zeros left"},
        {"stride_h", "vertical stride"},  {"stride_w", "horizontal stride"},
        {"dilation_h", "vertical dilation"},
        {"dilation_w", "horizontal dilation"}};
    for (int i = 0; i < 12; ++i) {
      params.push_back({kConvNames[i][0], "u32", 64 + 4 * i, 4, kConvNames[i][1]});
    }
  }
  return params;
}

std::vector<KernelParam> ReduceParams() {
  return {{"W", "u64", 0, 8, "the workspace the entry wrote"},
          {"C", "u64", 8, 8, "output"},
          {"M", "u32", 16, 4, "rows of C"},
          {"N", "u32", 20, 4, "columns of C"},
          {"ldc", "u32", 24, 4, "leading dimension of C"},
          {"K_G", "u32", 28, 4, "partial sums to add"},
          {"alpha", "f32", 32, 4, "as for the entry"},
          {"beta", "f32", 36, 4, "as for the entry"}};
}

Status CheckArch(std::string_view field, const std::string& arch) {
  int number = 0;
  size_t i = 3;
  bool ok = arch.size() >= 5 && arch.compare(0, 3, "sm_") == 0;
  for (; ok && i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i) {
    number = number * 10 + (arch[i] - '0');
    if (number > 1000) ok = false;
  }
  ok = ok && i > 3 && (i == arch.size() || (i + 1 == arch.size() && arch[i] == 'a'));
  if (!ok || number < 70 || number > 120) {
    return InvalidArgument(std::string(field) +
                           " must be sm_XY with XY in [70, 120] (e.g. sm_90), got '" +
                           arch.substr(0, 32) + "'");
  }
  return OkStatus();
}

}  // namespace blocktune
