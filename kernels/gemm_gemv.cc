#include "kernels/gemm_gemv.h"

#include <algorithm>

#include "kernels/family_params.h"
#include "kernels/ptx_text.h"

namespace blocktune {
namespace {

const GemmContext& GemmOf(const Problem& problem) {
  return std::get<GemmContext>(problem.ctx);
}

// Layout N with one column read as a contiguous vector: B N of N == 1 is
// K rows of one element, contiguous where ldb == 1.
bool LayoutHolds(const Problem& problem) {
  const GemmContext& g = GemmOf(problem);
  if (g.layout_a != Layout::kN) return false;
  if (g.layout_b == Layout::kT) return true;
  return g.n == 1 && LeadingDims(problem)[1] == 1;
}

// Everything the emitter needs, named as in the PTX's comments.
struct Plan {
  int64_t r, c, w, wn, v, u, pf, kg, n;
  int64_t chunk;  // 32*V*U elements of K per main-loop step
  // Register of element e of load `step` of row `row` (column `col`) in
  // register set `set` (PF = 1: two sets, one being filled with the next
  // chunk while the other's FMAs run).
  int64_t A(int64_t row, int64_t step, int64_t e, int64_t set = 0) const {
    return set * r * u * v + (row * u + step) * v + e;
  }
  int64_t B(int64_t col, int64_t step, int64_t e, int64_t set = 0) const {
    return set * c * u * v + (col * u + step) * v + e;
  }
};

// "ld.global.nc.L1::no_allocate.v4.f32 {%a0, %a1, %a2, %a3}" and the like.
std::string VectorLoad(const char* qualifiers, const std::string& reg,
                       int64_t first, int64_t v) {
  std::string s = std::string("ld.global.nc") + qualifiers;
  if (v == 1) return s + ".f32 " + reg + N(first);
  s += ".v" + N(v) + ".f32 {";
  for (int64_t e = 0; e < v; ++e) s += (e ? ", " : "") + reg + N(first + e);
  return s + "}";
}

std::string Entry(const Plan& t, const std::string& arch) {
  // A alone in its program streams past L1; WN warps reading the same rows
  // share them through it.
  const char* load_a = t.wn == 1 ? ".L1::no_allocate" : "";
  PtxText p;
  p << "//\n// blocktune gemm.gemv v" << N(kGemmGemvGeneratorVersion)
    << ", fp32: C = alpha * A * op(B) + beta * C for N = " << N(t.n)
    << " columns\n"
    << "// R=" << N(t.r) << " rows and c=" << N(t.c)
    << " columns per warp, W=" << N(t.w) << " x WN=" << N(t.wn)
    << " warps per program, V=" << N(t.v)
    << " floats per lane per load, U=" << N(t.u)
    << " loads per row in flight (chunks of " << N(t.chunk)
    << " elements of K), PF=" << N(t.pf) << " (next chunk prefetched), K_G="
    << N(t.kg) << "\n"
    << "// A: M rows of K (ld.global.nc" << load_a
    << "); B: N rows of K (or one contiguous column), through the read-only "
    << "cache\n"
    << "//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n";

  p << ".visible .entry blocktune_gemv(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta)\n"
    << "{\n";
  const int64_t sums = t.r * t.c;
  p << "\t.reg .pred %p, %pn, %pk, %pw, %pld, %pbeta, %prow, %pv;\n"
    << "\t.reg .b32 %M, %N, %K, %lda, %ldb, %ldc, %lane, %warp, %row0, %row, "
    << "%col0, %col, %last, %lastc, %z, %kbeg, %kend, %len, %nfull, %rem, "
    << "%iters, %kk, %t;\n"
    << "\t.reg .b64 %A, %B, %C, %W, %o, %o2, %addr, %pa<" << N(t.r) << ">, %pb<"
    << N(t.c) << ">;\n"
    << "\t.reg .f32 %alpha, %beta, %v, %old, %s, %acc<" << N(sums) << ">, %a<"
    << N((1 + t.pf) * t.r * t.u * t.v) << ">, %b<"
    << N((1 + t.pf) * t.c * t.u * t.v) << ">;\n\n";

  p << "\t// ---- parameters; warp w of program (x, y) owns rows "
    << "(x*W + w mod W)*R .. and columns (y*WN + w / W)*c ..\n"
    << "\tld.param.u64 %A, [pA];\n\tcvta.to.global.u64 %A, %A;\n"
    << "\tld.param.u64 %B, [pB];\n\tcvta.to.global.u64 %B, %B;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %K, [pK];\n"
    << "\tld.param.u32 %lda, [plda];\n\tld.param.u32 %ldb, [pldb];\n"
    << "\tld.param.u32 %ldc, [pldc];\n"
    << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n"
    << "\tmov.u32 %t, %tid.x;\n"
    << "\tand.b32 %lane, %t, 31;\n\tshr.u32 %warp, %t, 5;\n"
    << "\tmov.u32 %row0, %ctaid.x;\n"
    << "\tmul.lo.u32 %row0, %row0, " << N(t.r * t.w) << ";\n"
    << "\tmov.u32 %col0, %ctaid.y;\n"
    << "\tmul.lo.u32 %col0, %col0, " << N(t.c * t.wn) << ";\n";
  if (t.wn == 1) {
    p << "\tmad.lo.u32 %row0, %warp, " << N(t.r) << ", %row0;\n";
  } else {
    p << "\tand.b32 %t, %warp, " << N(t.w - 1) << ";\n"
      << "\tmad.lo.u32 %row0, %t, " << N(t.r) << ", %row0;\n"
      << "\tshr.u32 %t, %warp, " << N(Log2(t.w)) << ";\n"
      << "\tmad.lo.u32 %col0, %t, " << N(t.c) << ", %col0;\n";
  }
  p << "\t// a warp past M or N has nothing to do (the whole warp leaves)\n"
    << "\tsetp.ge.u32 %p, %row0, %M;\n\t@%p ret;\n"
    << "\tsetp.ge.u32 %p, %col0, %N;\n\t@%p ret;\n"
    << "\tsub.u32 %last, %M, 1;\n\tsub.u32 %lastc, %N, 1;\n";

  if (t.kg > 1) {
    p << "\t// ---- this program's share of K (K_G = " << N(t.kg)
      << "): ceil(K / (K_G*" << N(t.chunk) << ")) chunks, from z times that\n"
      << "\tmov.u32 %z, %ctaid.z;\n"
      << "\tadd.u32 %t, %K, " << N(t.kg * t.chunk - 1) << ";\n"
      << "\tdiv.u32 %t, %t, " << N(t.kg * t.chunk) << ";\n"
      << "\tmul.lo.u32 %t, %t, " << N(t.chunk) << ";\n"
      << "\tmul.lo.u32 %kbeg, %z, %t;\n"
      << "\tadd.u32 %kend, %kbeg, %t;\n\tmin.u32 %kend, %kend, %K;\n"
      << "\tmax.u32 %kend, %kend, %kbeg;  // a split past K: no work\n"
      << "\tsub.u32 %len, %kend, %kbeg;\n";
  } else {
    p << "\tmov.u32 %kbeg, 0;\n\tmov.u32 %len, %K;\n";
  }
  p << "\tshr.u32 %nfull, %len, " << N(Log2(t.chunk)) << ";  // whole chunks\n"
    << "\tshl.b32 %rem, %nfull, " << N(Log2(t.chunk)) << ";\n"
    << "\tsub.u32 %rem, %len, %rem;  // the tail\n";

  p << "\t// ---- pointers at k = kbeg + lane*V; rows past M read row M-1, "
    << "columns past N column N-1 (their sums are not stored)\n"
    << "\tmad.lo.u32 %t, %lane, " << N(t.v) << ", %kbeg;\n"
    << "\tcvt.u64.u32 %o2, %t;\n";
  for (int64_t r = 0; r < t.r; ++r) {
    p << "\tadd.u32 %row, %row0, " << N(r) << ";\n"
      << "\tmin.u32 %row, %row, %last;\n"
      << "\tmul.wide.u32 %o, %row, %lda;\n\tadd.u64 %o, %o, %o2;\n"
      << "\tshl.b64 %o, %o, 2;\n\tadd.u64 %pa" << N(r) << ", %A, %o;\n";
  }
  for (int64_t j = 0; j < t.c; ++j) {
    p << "\tadd.u32 %col, %col0, " << N(j) << ";\n"
      << "\tmin.u32 %col, %col, %lastc;\n"
      << "\tmul.wide.u32 %o, %col, %ldb;\n\tadd.u64 %o, %o, %o2;\n"
      << "\tshl.b64 %o, %o, 2;\n\tadd.u64 %pb" << N(j) << ", %B, %o;\n";
  }
  for (int64_t i = 0; i < sums; ++i)
    p << "\tmov.f32 %acc" << N(i) << ", 0f00000000;\n";

  const int64_t step_bytes = 32 * t.v * 4;
  // The loads of one chunk into register set `set`, `ahead` bytes past the
  // pointers (the next chunk's when prefetching), under `pred` if any.
  auto loads = [&](int64_t set, int64_t ahead, const std::string& pred) {
    for (int64_t u = 0; u < t.u; ++u)
      for (int64_t r = 0; r < t.r; ++r)
        p << "\t" << pred << VectorLoad(load_a, "%a", t.A(r, u, 0, set), t.v)
          << ", [%pa" << N(r) << "+" << N(ahead + u * step_bytes) << "];\n";
    for (int64_t u = 0; u < t.u; ++u)
      for (int64_t j = 0; j < t.c; ++j)
        p << "\t" << pred << VectorLoad("", "%b", t.B(j, u, 0, set), t.v)
          << ", [%pb" << N(j) << "+" << N(ahead + u * step_bytes) << "];\n";
  };
  auto fmas = [&](int64_t set) {
    for (int64_t u = 0; u < t.u; ++u)
      for (int64_t e = 0; e < t.v; ++e)
        for (int64_t r = 0; r < t.r; ++r)
          for (int64_t j = 0; j < t.c; ++j) {
            const std::string acc = "%acc" + N(r * t.c + j);
            p << "\tfma.rn.f32 " << acc << ", %a" << N(t.A(r, u, e, set))
              << ", %b" << N(t.B(j, u, e, set)) << ", " << acc << ";\n";
          }
  };
  auto advance = [&] {
    for (int64_t r = 0; r < t.r; ++r)
      p << "\tadd.u64 %pa" << N(r) << ", %pa" << N(r) << ", "
        << N(t.chunk * 4) << ";\n";
    for (int64_t j = 0; j < t.c; ++j)
      p << "\tadd.u64 %pb" << N(j) << ", %pb" << N(j) << ", "
        << N(t.chunk * 4) << ";\n";
    p << "\tsub.u32 %nfull, %nfull, 1;\n";
  };
  if (t.pf == 0) {
    p << "\t// ---- main loop: per chunk, U vectors of V floats per row and "
      << "column, then R*c*U*V FMAs\n"
      << "\tsetp.eq.u32 %p, %nfull, 0;\n\t@%p bra $TAIL;\n"
      << "$MAIN:\n";
    loads(0, 0, "");
    fmas(0);
    advance();
    p << "\tsetp.ne.u32 %p, %nfull, 0;\n\t@%p bra $MAIN;\n";
  } else {
    // Two register sets: while one set's FMAs run, the loads of the next
    // chunk fill the other (where there is one), so a warp always has a
    // chunk in flight. Unrolled by two, as the sets are named registers.
    p << "\t// ---- main loop, prefetching: chunk i's FMAs on one register "
      << "set while chunk i+1 loads into the other\n"
      << "\tsetp.eq.u32 %p, %nfull, 0;\n\t@%p bra $TAIL;\n";
    loads(0, 0, "");
    p << "$MAIN:\n";
    for (int64_t set = 0; set < 2; ++set) {
      p << "\tsetp.gt.u32 %pn, %nfull, 1;\n";
      loads(1 - set, t.chunk * 4, "@%pn ");
      fmas(set);
      advance();
      if (set == 0)
        p << "\tsetp.eq.u32 %p, %nfull, 0;\n\t@%p bra $TAIL;\n";
      else
        p << "\tsetp.ne.u32 %p, %nfull, 0;\n\t@%p bra $MAIN;\n";
    }
  }

  p << "$TAIL:\n"
    << "\t// ---- the rest of K, one float per lane per step, predicated\n";
  if (t.v > 1) {
    p << "\tmul.wide.u32 %o, %lane, " << N((t.v - 1) * 4)
      << ";  // k = kt + lane*V -> kt + lane\n";
    for (int64_t r = 0; r < t.r; ++r)
      p << "\tsub.u64 %pa" << N(r) << ", %pa" << N(r) << ", %o;\n";
    for (int64_t j = 0; j < t.c; ++j)
      p << "\tsub.u64 %pb" << N(j) << ", %pb" << N(j) << ", %o;\n";
  }
  p << "\tadd.u32 %iters, %rem, 31;\n\tshr.u32 %iters, %iters, 5;\n"
    << "\tmov.u32 %kk, %lane;\n"
    << "\tsetp.eq.u32 %p, %iters, 0;\n\t@%p bra $REDUCE;\n"
    << "$TLOOP:\n"
    << "\tsetp.lt.u32 %pk, %kk, %rem;\n";
  for (int64_t r = 0; r < t.r; ++r)
    p << "\t@%pk " << VectorLoad(load_a, "%a", r, 1) << ", [%pa" << N(r)
      << "];\n";
  for (int64_t j = 0; j < t.c; ++j)
    p << "\t@%pk " << VectorLoad("", "%b", j, 1) << ", [%pb" << N(j) << "];\n";
  for (int64_t r = 0; r < t.r; ++r)
    for (int64_t j = 0; j < t.c; ++j) {
      const std::string acc = "%acc" + N(r * t.c + j);
      p << "\t@%pk fma.rn.f32 " << acc << ", %a" << N(r) << ", %b" << N(j)
        << ", " << acc << ";\n";
    }
  for (int64_t r = 0; r < t.r; ++r)
    p << "\tadd.u64 %pa" << N(r) << ", %pa" << N(r) << ", 128;\n";
  for (int64_t j = 0; j < t.c; ++j)
    p << "\tadd.u64 %pb" << N(j) << ", %pb" << N(j) << ", 128;\n";
  p << "\tadd.u32 %kk, %kk, 32;\n\tsub.u32 %iters, %iters, 1;\n"
    << "\tsetp.ne.u32 %p, %iters, 0;\n\t@%p bra $TLOOP;\n";

  p << "$REDUCE:\n"
    << "\t// ---- each sum over the warp (butterfly: every lane gets it)\n";
  for (int64_t i = 0; i < sums; ++i)
    for (int off = 16; off >= 1; off /= 2)
      p << "\tshfl.sync.bfly.b32 %s, %acc" << N(i) << ", " << off
        << ", 0x1f, 0xffffffff;\n\tadd.f32 %acc" << N(i) << ", %acc" << N(i)
        << ", %s;\n";

  if (t.kg == 1) {
    p << "\t// ---- lane i mod 32 stores sum i: C[row0 + i/c][col0 + i mod c] "
      << "= alpha * sum + beta * C (C is not read when beta == 0)\n"
      << "\tsetp.ne.f32 %pbeta, %beta, 0f00000000;\n";
  } else {
    p << "\t// ---- lane i mod 32 stores sum i, the partial sum, to "
      << "W[z][row0 + i/c][col0 + i mod c]\n";
  }
  for (int64_t r = 0; r < t.r; ++r) {
    p << "\tadd.u32 %row, %row0, " << N(r) << ";\n"
      << "\tsetp.lt.u32 %prow, %row, %M;\n";
    if (t.kg == 1) {
      p << "\tmul.wide.u32 %o, %row, %ldc;\n\tcvt.u64.u32 %o2, %col0;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tshl.b64 %o, %o, 2;\n"
        << "\tadd.u64 %addr, %C, %o;\n";
    } else {  // ((z*M + row) * N + col0) in 64 bits
      p << "\tmul.wide.u32 %o, %z, %M;\n\tcvt.u64.u32 %o2, %row;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tcvt.u64.u32 %o2, %N;\n"
        << "\tmul.lo.u64 %o, %o, %o2;\n\tcvt.u64.u32 %o2, %col0;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tshl.b64 %o, %o, 2;\n"
        << "\tadd.u64 %addr, %W, %o;\n";
    }
    for (int64_t j = 0; j < t.c; ++j) {
      const int64_t i = r * t.c + j;
      const std::string acc = "%acc" + N(i);
      const std::string at = "[%addr+" + N(j * 4) + "]";
      p << "\tadd.u32 %col, %col0, " << N(j) << ";\n"
        << "\tsetp.lt.and.u32 %pv, %col, %N, %prow;\n"
        << "\tsetp.eq.and.u32 %pw, %lane, " << N(i % 32) << ", %pv;\n";
      if (t.kg == 1) {
        p << "\tmul.f32 %v, " << acc << ", %alpha;\n"
          << "\tand.pred %pld, %pw, %pbeta;\n"
          << "\t@%pld ld.global.f32 %old, " << at << ";\n"
          << "\t@%pld fma.rn.f32 %v, %old, %beta, %v;\n"
          << "\t@%pw st.global.f32 " << at << ", %v;\n";
      } else {
        p << "\t@%pw st.global.f32 " << at << ", " << acc << ";\n";
      }
    }
  }
  p << "\tret;\n}\n";
  return p.str();
}

}  // namespace

const std::vector<int64_t>& GemvRowValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8};
  return v;
}
const std::vector<int64_t>& GemvColValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8, 16};
  return v;
}
const std::vector<int64_t>& GemvWarpValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8};
  return v;
}
const std::vector<int64_t>& GemvWarpNValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8};
  return v;
}
const std::vector<int64_t>& GemvVectorValues() {
  static const std::vector<int64_t> v = {1, 2, 4};
  return v;
}
const std::vector<int64_t>& GemvUnrollValues() {
  static const std::vector<int64_t> v = {1, 2, 4};
  return v;
}
const std::vector<int64_t>& GemvPrefetchValues() {
  static const std::vector<int64_t> v = {0, 1};
  return v;
}
const std::vector<int64_t>& GemvSplitValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8, 16, 32, 64};
  return v;
}

Status Validate(const GemvParams& p, std::string_view field) {
  const std::string f(field);
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".R", GemvRowValues(), p.rows));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".NC", GemvColValues(), p.cols));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".W", GemvWarpValues(), p.warps));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".WN", GemvWarpNValues(), p.warps_n));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".V", GemvVectorValues(), p.vec));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".U", GemvUnrollValues(), p.unroll));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".PF", GemvPrefetchValues(), p.prefetch));
  return CheckOneOf(f + ".KG", GemvSplitValues(), p.kg);
}

const char* ToString(GemvRule rule) {
  switch (rule) {
    case GemvRule::kLayout:
      return "layout";
    case GemvRule::kColumns:
      return "columns";
    case GemvRule::kColumnTile:
      return "column_tile";
    case GemvRule::kThreads:
      return "threads";
    case GemvRule::kVectorLd:
      return "vector_ld";
    case GemvRule::kRegisters:
      return "registers";
  }
  return "unknown";
}

int64_t GemvRegisterEstimate(const GemvParams& p, int64_t n) {
  const int64_t c = p.WarpCols(n);
  const int64_t loads = (1 + p.prefetch) * (p.rows + c) * p.unroll * p.vec;
  return loads + p.rows * c + 2 * (p.rows + c) + 24;
}

bool Passes(GemvRule rule, const Problem& problem, const GemvParams& p,
            const KernelLimits& limits) {
  const GemmContext& g = GemmOf(problem);
  switch (rule) {
    case GemvRule::kLayout:
      return LayoutHolds(problem);
    case GemvRule::kColumns:
      return g.n >= 1 && g.n <= kGemvMaxColumns;
    case GemvRule::kColumnTile:
      return p.cols < 2 * g.n && (p.warps_n - 1) * p.WarpCols(g.n) < g.n;
    case GemvRule::kThreads:
      return p.Threads() <= limits.max_threads_per_block;
    case GemvRule::kVectorLd: {
      const auto ld = LeadingDims(problem);
      return ld[0] % p.vec == 0 && (g.n == 1 || ld[1] % p.vec == 0);
    }
    case GemvRule::kRegisters: {
      const int64_t regs = GemvRegisterEstimate(p, g.n);
      // Strictly below the register file: 128 registers x 512 threads
      // (exactly 65536) failed to launch in the H200 campaign run26.
      return regs <= limits.max_registers_per_thread &&
             regs * p.Threads() < limits.registers_per_sm;
    }
  }
  return false;
}

Status CanImplement(const Problem& problem, const GemvParams& p,
                    const KernelLimits& limits) {
  const GemmContext& g = GemmOf(problem);
  const auto ld = LeadingDims(problem);
  for (GemvRule rule : kGemvRules) {
    if (Passes(rule, problem, p, limits)) continue;
    switch (rule) {
      case GemvRule::kLayout:
        return FailedPrecondition(
            "layout: gemm.gemv reads A's rows and B's columns along K: "
            "layout_a must be N and layout_b T (or N with n 1 and ldb 1), "
            "got layout " +
            std::string(g.layout_a == Layout::kN ? "N" : "T") +
            (g.layout_b == Layout::kN ? "N" : "T") + " with n " + N(g.n) +
            " and ldb " + N(ld[1]));
      case GemvRule::kColumns:
        return FailedPrecondition(
            "columns: gemm.gemv reads all of A once per column tile: n must "
            "be in [1, " +
            N(kGemvMaxColumns) + "], got " + N(g.n));
      case GemvRule::kColumnTile: {
        if (p.cols >= 2 * g.n)
          return FailedPrecondition(
              "column_tile: NC=" + N(p.cols) + " is wider than n " + N(g.n) +
              " needs (it would repeat a narrower NC): NC must be below " +
              N(2 * g.n));
        return FailedPrecondition(
            "column_tile: WN=" + N(p.warps_n) + " warps of " +
            N(p.WarpCols(g.n)) + " columns leave a warp without one of n " +
            N(g.n) + ": (WN - 1) * min(NC, n) must be below n");
      }
      case GemvRule::kThreads:
        return FailedPrecondition(
            "threads: W=" + N(p.warps) + " x WN=" + N(p.warps_n) +
            " warps are " + N(p.Threads()) + " threads, more than " +
            N(limits.max_threads_per_block) + " per program");
      case GemvRule::kVectorLd: {
        const bool a = ld[0] % p.vec != 0;
        return FailedPrecondition("vector_ld: V=" + N(p.vec) + " reads " +
                                  N(p.vec) +
                                  " floats at a time: " + (a ? "lda" : "ldb") +
                                  " must be a multiple of " + N(p.vec) +
                                  ", got " + N(a ? ld[0] : ld[1]));
      }
      case GemvRule::kRegisters:
        return FailedPrecondition(
            "registers: an estimated " + N(GemvRegisterEstimate(p, g.n)) +
            " registers per thread ((1 + PF)*(R + c)*U*V loaded, R*c sums, "
            "c = min(NC, n)) exceed " +
            N(limits.max_registers_per_thread) + ", or times " +
            N(p.Threads()) + " threads reach the SM's " +
            N(limits.registers_per_sm));
    }
  }
  return OkStatus();
}

StatusOr<GemmKernel> GenerateGemv(const Problem& problem, const GemvParams& p,
                                  const std::string& arch) {
  BT_RETURN_IF_ERROR(CheckArch("arch", arch));
  if (OpOf(problem.ctx) != Op::kGemm)
    return InvalidArgument("context: gemm.gemv computes a gemm");
  BT_RETURN_IF_ERROR(Validate(problem.ctx));
  BT_RETURN_IF_ERROR(Validate(p));
  BT_RETURN_IF_ERROR(CanImplement(problem, p, KernelLimits{}));
  const GemmContext& g = GemmOf(problem);
  Plan t{p.rows,   p.WarpCols(g.n), p.warps, p.warps_n, p.vec,
         p.unroll, p.prefetch,      p.kg,    g.n,       p.Chunk()};
  GemmKernel k;
  k.ptx = Entry(t, arch);
  k.entry = "blocktune_gemv";
  k.grid = {static_cast<unsigned>(CeilDiv(g.m, p.RowsPerProgram())),
            static_cast<unsigned>(CeilDiv(g.n, p.ColsPerProgram(g.n))),
            static_cast<unsigned>(p.kg)};
  k.block = {static_cast<unsigned>(p.Threads()), 1, 1};
  k.vector_a = p.vec;
  k.vector_b = g.n > 1 ? p.vec : 1;
  if (p.kg > 1) AddSplitReduce(p.kg, g.m, g.n, &k);
  return k;
}

}  // namespace blocktune
