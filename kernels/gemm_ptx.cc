#include "kernels/gemm_ptx.h"

#include <sstream>

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr int64_t kReduceThreads = 256;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string N(int64_t v) { return std::to_string(v); }

// The derived sizes of one block shape, named as in the PTX comments.
struct Tiling {
  int64_t ml, nl, ms, ns, u, kg;
  int64_t tm, tn, threads;  // TM = M_L/M_S threads down, TN = N_L/N_S across
  int64_t loads_a, loads_b; // global loads per thread per step
  int64_t stage_a, stage_b; // bytes of one shared-memory stage
  explicit Tiling(const BlockShape& xb)
      : ml(xb.ml), nl(xb.nl), ms(xb.ms), ns(xb.ns), u(xb.u), kg(xb.kg),
        tm(xb.ml / xb.ms), tn(xb.nl / xb.ns), threads(tm * tn),
        loads_a(CeilDiv(xb.ml * xb.u, threads)),
        loads_b(CeilDiv(xb.nl * xb.u, threads)),
        stage_a(xb.u * xb.ml * 4), stage_b(xb.u * xb.nl * 4) {}
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

 private:
  std::ostringstream out_;
};

// One operand's staging: for load j of this thread, element e = tid + j*T
// of the tile, its offset in a shared stage, its reduction index kk and a
// pointer that walks along K one step at a time.
void EmitOperandSetup(Ptx& p, char name, int64_t loads, int64_t extent,
                      int64_t u, int64_t threads, bool contiguous_k,
                      bool k_major_pointer) {
  // name 'a': extent = M_L, row origin %m0, bound %M, ld %lda
  // name 'b': extent = N_L, col origin %n0, bound %N, ld %ldb
  const std::string s(1, name);
  const std::string origin = name == 'a' ? "%m0" : "%n0";
  const std::string bound = name == 'a' ? "%M" : "%N";
  const std::string ld = name == 'a' ? "%lda" : "%ldb";
  const std::string base = name == 'a' ? "%A" : "%B";
  const std::string smem = name == 'a' ? "%sA_0" : "%sB_0";
  for (int64_t j = 0; j < loads; ++j) {
    const std::string J = N(j);
    p << "\t// " << (name == 'a' ? "A" : "B") << " load " << J
      << ": element tid + " << N(j * threads) << " of the "
      << (name == 'a' ? "M_L x U" : "U x N_L") << " tile\n";
    p << "\tadd.u32 %e, %thr, " << N(j * threads) << ";\n";
    p << "\tsetp.lt.u32 %q" << s << J << ", %e, " << N(extent * u) << ";\n";
    if (contiguous_k) {
      p << "\trem.u32 %k" << s << J << ", %e, " << N(u) << ";\n";
      p << "\tdiv.u32 %x, %e, " << N(u) << ";\n";
    } else {
      p << "\trem.u32 %x, %e, " << N(extent) << ";\n";
      p << "\tdiv.u32 %k" << s << J << ", %e, " << N(extent) << ";\n";
    }
    // Offset in a stage: stage[kk][x], x the row of A or column of B.
    p << "\tmad.lo.u32 %s" << s << J << ", %k" << s << J << ", " << N(extent)
      << ", %x;\n";
    p << "\tshl.b32 %s" << s << J << ", %s" << s << J << ", 2;\n";
    p << "\tadd.u32 %x, %x, " << origin << ";\n";
    p << "\tsetp.lt.and.u32 %q" << s << J << ", %x, " << bound << ", %q" << s
      << J << ";\n";
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
}

// Global loads of one step into staging registers, predicated on the tile
// and on K (past %kend nothing is read and zeros are staged), then the
// pointers advance one step.
void EmitLoads(Ptx& p, char name, int64_t loads) {
  const std::string s(1, name);
  for (int64_t j = 0; j < loads; ++j) {
    const std::string J = N(j);
    p << "\tadd.u32 %y, %k0, %k" << s << J << ";\n";
    p << "\tsetp.lt.and.u32 %pl, %y, %kend, %q" << s << J << ";\n";
    p << "\tmov.f32 %l" << s << J << ", 0f00000000;\n";
    p << "\t@%pl ld.global.nc.f32 %l" << s << J << ", [%p" << s << J << "];\n";
    p << "\tadd.u64 %p" << s << J << ", %p" << s << J << ", %step_" << s
      << ";\n";
  }
}

// Staging registers into the shared stage whose offset is in `stage`. A
// thread whose element lies past the tile (the tile's size need not be a
// multiple of the thread count) stores nothing: its offset is outside the
// stage. Rows past M and columns past N are not stored either; the results
// they would feed are never written.
void EmitStores(Ptx& p, char name, int64_t loads, const std::string& stage) {
  const std::string s(1, name);
  for (int64_t j = 0; j < loads; ++j) {
    p << "\tadd.u32 %y, %s" << s << N(j) << ", " << stage << ";\n";
    p << "\t@%q" << s << N(j) << " st.shared.f32 [%y], %l" << s << N(j)
      << ";\n";
  }
}

// M_S*N_S*U FMAs on one shared stage: thread (tm, tn) reads rows
// tm + i*TM of A and columns tn + j*TN of B, so a warp reads consecutive
// words of B and broadcasts words of A.
void EmitCompute(Ptx& p, const Tiling& t) {
  for (int64_t k = 0; k < t.u; ++k) {
    p << "\t// reduction step k = " << N(k) << "\n";
    for (int64_t i = 0; i < t.ms; ++i) {
      p << "\tld.shared.f32 %fa" << N(i) << ", [%ra+"
        << N((k * t.ml + i * t.tm) * 4) << "];\n";
    }
    for (int64_t j = 0; j < t.ns; ++j) {
      p << "\tld.shared.f32 %fb" << N(j) << ", [%rb+"
        << N((k * t.nl + j * t.tn) * 4) << "];\n";
    }
    for (int64_t i = 0; i < t.ms; ++i) {
      for (int64_t j = 0; j < t.ns; ++j) {
        const std::string c = "%c" + N(i * t.ns + j);
        p << "\tfma.rn.f32 " << c << ", %fa" << N(i) << ", %fb" << N(j) << ", "
          << c << ";\n";
      }
    }
  }
}

std::string GemmEntry(const GemmContext& ctx, const Tiling& t,
                      const std::string& arch) {
  const bool a_t = ctx.layout_a == Layout::kT;
  const bool b_t = ctx.layout_b == Layout::kT;
  Ptx p;
  p << "//\n// blocktune GEMM k(x_B), fp32: C = alpha * op(A) * op(B) + beta * C\n"
    << "// x_B: M_L=" << N(t.ml) << " N_L=" << N(t.nl) << " M_S=" << N(t.ms)
    << " N_S=" << N(t.ns) << " U=" << N(t.u) << " K_G=" << N(t.kg)
    << "; A " << (a_t ? "T" : "N") << ", B " << (b_t ? "T" : "N") << "\n"
    << "// " << N(t.threads) << " threads: thread (tm, tn) = (tid / "
    << N(t.tn) << ", tid % " << N(t.tn) << ") owns rows tm + i*" << N(t.tm)
    << " and columns tn + j*" << N(t.tn) << " of the program's block\n//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n";

  p << ".visible .entry blocktune_gemm(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta)\n"
    // No .maxntid: with it ptxas caps registers far below the budget and
    // spills (seen: 40 registers and a 16-byte spill for 512 threads on
    // sm_80, where 44 registers and no spill fit).
    << "{\n";
  p << "\t.shared .align 16 .b8 sA[" << N(2 * t.stage_a) << "];\n"
    << "\t.shared .align 16 .b8 sB[" << N(2 * t.stage_b) << "];\n"
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
    << "\t.reg .b64 %pa<" << N(t.loads_a) << ">, %pb<" << N(t.loads_b) << ">;\n"
    << "\t.reg .f32 %alpha, %beta, %v, %old;\n"
    << "\t.reg .f32 %c<" << N(t.ms * t.ns) << ">, %fa<" << N(t.ms) << ">, %fb<"
    << N(t.ns) << ">, %la<" << N(t.loads_a) << ">, %lb<" << N(t.loads_b)
    << ">;\n\n";

  p << "\t// ---- parameters, program and thread coordinates\n"
    << "\tld.param.u64 %A, [pA];\n\tcvta.to.global.u64 %A, %A;\n"
    << "\tld.param.u64 %B, [pB];\n\tcvta.to.global.u64 %B, %B;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %K, [pK];\n\tld.param.u32 %lda, [plda];\n"
    << "\tld.param.u32 %ldb, [pldb];\n\tld.param.u32 %ldc, [pldc];\n"
    << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n"
    << "\tmov.u32 %thr, %tid.x;\n"
    << "\tdiv.u32 %tm, %thr, " << N(t.tn) << ";\n"
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
  EmitOperandSetup(p, 'a', t.loads_a, t.ml, t.u, t.threads,
                   /*contiguous_k=*/!a_t, /*k_major_pointer=*/a_t);
  EmitOperandSetup(p, 'b', t.loads_b, t.nl, t.u, t.threads,
                   /*contiguous_k=*/b_t, /*k_major_pointer=*/!b_t);
  // One step along K: U columns of A (N) or U rows (T), likewise for B.
  p << (a_t ? "\tmul.wide.u32 %step_a, %lda, " + N(t.u * 4) + ";\n"
            : "\tmov.u64 %step_a, " + N(t.u * 4) + ";\n");
  p << (b_t ? "\tmov.u64 %step_b, " + N(t.u * 4) + ";\n"
            : "\tmul.wide.u32 %step_b, %ldb, " + N(t.u * 4) + ";\n");

  p << "\t// ---- accumulators\n";
  for (int64_t i = 0; i < t.ms * t.ns; ++i)
    p << "\tmov.f32 %c" << N(i) << ", 0f00000000;\n";
  p << "\tsetp.eq.u32 %pl, %ntiles, 0;\n\t@%pl bra $EPILOGUE;\n";
  p << "\t// ---- prologue: the first step into stage 0\n"
    << "\tmov.u32 %k0, %kbeg;\n";
  EmitLoads(p, 'a', t.loads_a);
  EmitLoads(p, 'b', t.loads_b);
  EmitStores(p, 'a', t.loads_a, "0");
  EmitStores(p, 'b', t.loads_b, "0");
  p << "\tbar.sync 0;\n"
    << "\tmov.u32 %cur_a, %sA_0;\n\tmov.u32 %cur_b, %sB_0;\n"
    << "\tmov.u32 %nxt_a, " << N(t.stage_a) << ";\n"
    << "\tmov.u32 %nxt_b, " << N(t.stage_b) << ";\n"
    << "\tmov.u32 %t, 0;\n";
  p << "$LOOP:\n"
    << "\t// ---- prefetch step t+1 into registers (nothing past K)\n"
    << "\tadd.u32 %k0, %k0, " << N(t.u) << ";\n";
  EmitLoads(p, 'a', t.loads_a);
  EmitLoads(p, 'b', t.loads_b);
  p << "\t// ---- compute step t from shared memory\n"
    << "\tmad.lo.u32 %ra, %tm, 4, %cur_a;\n"
    << "\tmad.lo.u32 %rb, %tn, 4, %cur_b;\n";
  EmitCompute(p, t);
  p << "\t// ---- stage step t+1, then swap stages\n";
  EmitStores(p, 'a', t.loads_a, "%nxt_a");
  EmitStores(p, 'b', t.loads_b, "%nxt_b");
  p << "\tbar.sync 0;\n"
    << "\tadd.u32 %cur_a, %sA_0, %nxt_a;\n"
    << "\tadd.u32 %cur_b, %sB_0, %nxt_b;\n"
    << "\txor.b32 %nxt_a, %nxt_a, " << N(t.stage_a) << ";\n"
    << "\txor.b32 %nxt_b, %nxt_b, " << N(t.stage_b) << ";\n"
    << "\tadd.u32 %t, %t, 1;\n"
    << "\tsetp.lt.u32 %pmore, %t, %ntiles;\n"
    << "\t@%pmore bra $LOOP;\n";

  p << "$EPILOGUE:\n";
  for (int64_t j = 0; j < t.ns; ++j) {
    p << "\tadd.u32 %col" << N(j) << ", %n0, %tn;\n"
      << "\tadd.u32 %col" << N(j) << ", %col" << N(j) << ", " << N(j * t.tn)
      << ";\n"
      << "\tsetp.lt.u32 %pcol" << N(j) << ", %col" << N(j) << ", %N;\n";
  }
  if (t.kg == 1) {
    p << "\t// ---- C = alpha * acc + beta * C (C is not read when beta == 0)\n"
      << "\tsetp.ne.f32 %pbeta, %beta, 0f00000000;\n";
  } else {
    p << "\t// ---- partial sums to the workspace W[z][row][col]\n";
  }
  for (int64_t i = 0; i < t.ms; ++i) {
    p << "\tmad.lo.u32 %x, %tm, 1, %m0;\n"
      << "\tadd.u32 %x, %x, " << N(i * t.tm) << ";\n"
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

// W holds K_G partial results of M x N; C = alpha * sum_z W[z] + beta * C,
// adding z = 0, 1, ... in order so every run gives the same bits.
std::string ReduceEntry() {
  Ptx p;
  p << "\n// ---- reduction of the K_G partial sums, in a fixed order\n"
    << ".visible .entry blocktune_gemm_reduce(\n"
    << "\t.param .u64 pW, .param .u64 pC, .param .u32 pM, .param .u32 pN,\n"
    << "\t.param .u32 pldc, .param .u32 pkg, .param .f32 palpha, "
    << ".param .f32 pbeta)\n"
    << "{\n"
    << "\t.reg .pred %p, %pmore;\n"
    << "\t.reg .b32 %r, %M, %N, %ldc, %kg, %z;\n"
    << "\t.reg .b64 %W, %C, %i, %mn, %row, %col, %a, %n64;\n"
    << "\t.reg .f32 %sum, %w, %alpha, %beta, %old;\n"
    << "\tld.param.u64 %W, [pW];\n\tcvta.to.global.u64 %W, %W;\n"
    << "\tld.param.u64 %C, [pC];\n\tcvta.to.global.u64 %C, %C;\n"
    << "\tld.param.u32 %M, [pM];\n\tld.param.u32 %N, [pN];\n"
    << "\tld.param.u32 %ldc, [pldc];\n\tld.param.u32 %kg, [pkg];\n"
    << "\tld.param.f32 %alpha, [palpha];\n\tld.param.f32 %beta, [pbeta];\n"
    << "\tmov.u32 %r, %ctaid.x;\n"
    << "\tmul.wide.u32 %i, %r, " << N(kReduceThreads) << ";\n"
    << "\tmov.u32 %r, %tid.x;\n\tcvt.u64.u32 %a, %r;\n\tadd.u64 %i, %i, %a;\n"
    << "\tmul.wide.u32 %mn, %M, %N;\n"
    << "\tsetp.ge.u64 %p, %i, %mn;\n\t@%p bra $DONE;\n"
    << "\tmov.f32 %sum, 0f00000000;\n"
    << "\tshl.b64 %a, %i, 2;\n\tadd.u64 %a, %a, %W;\n"
    << "\tmov.u32 %z, 0;\n"
    << "$SUM:\n"
    << "\tld.global.f32 %w, [%a];\n\tadd.f32 %sum, %sum, %w;\n"
    << "\tshl.b64 %n64, %mn, 2;\n\tadd.u64 %a, %a, %n64;\n"
    << "\tadd.u32 %z, %z, 1;\n\tsetp.lt.u32 %pmore, %z, %kg;\n"
    << "\t@%pmore bra $SUM;\n"
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
  return 2 * xb.u * (xb.ml + xb.nl) * 4;
}

int64_t GemmRegisterEstimate(const BlockShape& xb) {
  Tiling t(xb);
  // Per staged load: the value, a 64-bit pointer, its K index, its shared
  // offset and address temporaries. Calibrated against ptxas 13.0 on 300
  // sampled kernels (gemm_ptxas_test): with 5 per load and 40 overhead,
  // 11 accepted shapes spilled at the 255-register ceiling. Fragments count
  // twice: ptxas keeps the next step's A and B values in flight (an
  // M_S=8, N_S=16 tile used 254 registers against an estimate of 235).
  return t.ms * t.ns + 2 * (t.ms + t.ns) + 7 * (t.loads_a + t.loads_b) + 48;
}

Status CanImplement(const Context& ctx, const BlockShape& xb,
                    const KernelLimits& limits) {
  if (xb.ThreadsPerProgram() > limits.max_threads_per_block) {
    return FailedPrecondition("threads per program (M_L/M_S)*(N_L/N_S) = " +
                              N(xb.ThreadsPerProgram()) + " exceeds " +
                              N(limits.max_threads_per_block));
  }
  if (GemmSharedBytes(xb) > limits.max_static_shared_bytes) {
    return FailedPrecondition("shared memory 2*U*(M_L+N_L)*4 = " +
                              N(GemmSharedBytes(xb)) + " B exceeds " +
                              N(limits.max_static_shared_bytes) + " B");
  }
  const int64_t registers = GemmRegisterEstimate(xb);
  if (registers > limits.max_registers_per_thread ||
      registers * xb.ThreadsPerProgram() > limits.registers_per_sm) {
    return FailedPrecondition("an estimated " + N(registers) +
                              " registers per thread do not fit (" +
                              N(limits.max_registers_per_thread) +
                              " per thread, " + N(limits.registers_per_sm) +
                              " per SM)");
  }
  const int64_t loop_bytes =
      16 * (xb.ms * xb.u + xb.ns * xb.u + xb.ms * xb.ns * xb.u);
  if (loop_bytes > limits.instruction_cache_bytes) {
    return FailedPrecondition(
        "the reduction loop, 16*(M_S*U + N_S*U + M_S*N_S*U) = " +
        N(loop_bytes) + " B, exceeds the instruction cache S_IC = " +
        N(limits.instruction_cache_bytes) + " B");
  }
  GemmShape g = ImplicitGemm(ctx);
  if (CeilDiv(g.n, xb.nl) > 65535) {
    return FailedPrecondition("grid y = ceil(N / N_L) = " +
                              N(CeilDiv(g.n, xb.nl)) + " exceeds 65535");
  }
  if (CeilDiv(g.m, xb.ml) > 2147483647) {
    return FailedPrecondition("grid x = ceil(M / M_L) exceeds 2^31-1");
  }
  return OkStatus();
}

StatusOr<GemmKernel> GenerateGemm(const GemmContext& ctx, const BlockShape& xb,
                                  const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(ctx, "gemm"));
  BT_RETURN_IF_ERROR(Validate(xb, "block_shape"));
  if (ctx.dtype != DType::kFp32) {
    return Unimplemented("the GEMM generator emits fp32 only, got " +
                         std::string(ToString(ctx.dtype)));
  }
  if (arch.rfind("sm_", 0) != 0) {
    return InvalidArgument("arch must look like sm_90, got '" + arch + "'");
  }
  Tiling t(xb);
  GemmKernel kernel;
  kernel.ptx = GemmEntry(ctx, t, arch);
  kernel.grid = {static_cast<unsigned>(CeilDiv(ctx.m, t.ml)),
                 static_cast<unsigned>(CeilDiv(ctx.n, t.nl)),
                 static_cast<unsigned>(t.kg)};
  kernel.block = {static_cast<unsigned>(t.threads), 1, 1};
  if (t.kg > 1) {
    kernel.ptx += ReduceEntry();
    kernel.reduce_entry = "blocktune_gemm_reduce";
    kernel.reduce_grid = {
        static_cast<unsigned>(CeilDiv(ctx.m * ctx.n, kReduceThreads)), 1, 1};
    kernel.reduce_block = {static_cast<unsigned>(kReduceThreads), 1, 1};
    kernel.workspace_bytes = t.kg * ctx.m * ctx.n * 4;
  }
  return kernel;
}

}  // namespace blocktune
