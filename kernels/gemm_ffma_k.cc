#include "kernels/gemm_ffma_k.h"

#include <algorithm>

#include "kernels/family_params.h"
#include "kernels/gemm_mma_ptx.h"
#include "kernels/ptx_text.h"

namespace blocktune {
namespace {

const GemmContext& GemmOf(const Problem& problem) {
  return std::get<GemmContext>(problem.ctx);
}

// Everything the emitter needs, named as in the PTX's comments.
struct Plan {
  FfmaKParams p;
  int64_t ln;         // lanes along N
  int64_t threads;
  int64_t tile_m, tile_n;
  int64_t row_bytes;  // (KC + 4) * 4
  int64_t stage_a;    // bytes of A in a stage (B follows)
  int64_t stage;      // bytes of a stage
  int64_t cpr;        // 16-byte copies per row of a stage: KC / 4
  int64_t rstep;      // rows between one thread's copies: threads / cpr
  int64_t ca, cb;     // copies per thread per stage of A and of B
  int64_t gthreads;   // threads of a group of WM x WN warps
  int64_t gq;         // 16-byte vectors of K per stage per group: KC/4/WK
};

Plan MakePlan(const FfmaKParams& p) {
  Plan t;
  t.p = p;
  t.ln = p.LanesN();
  t.threads = p.Threads();
  t.tile_m = p.TileM();
  t.tile_n = p.TileN();
  t.row_bytes = p.RowBytes();
  t.stage_a = t.tile_m * t.row_bytes;
  t.stage = p.StageBytes();
  t.cpr = p.kc / 4;
  t.rstep = t.threads / t.cpr;
  t.ca = FfmaKCopiesA(p);
  t.cb = FfmaKCopiesB(p);
  t.gthreads = p.GroupThreads();
  t.gq = t.cpr / p.wk;
  return t;
}

std::string Vec4(const char* reg, int64_t first) {
  std::string s = "{";
  for (int64_t e = 0; e < 4; ++e)
    s += (e ? ", %" : "%") + std::string(reg) + N(first + e);
  return s + "}";
}

// C[%o] = alpha * src + beta * C[%o] under %pv (C not read where %pbeta,
// beta != 0, is false), through %v and %old.
void EmitScaledStore(PtxText& p, const std::string& src) {
  p << "\tmul.f32 %v, " << src << ", %alpha;\n"
    << "\tand.pred %p, %pv, %pbeta;\n"
    << "\t@%p ld.global.f32 %old, [%o];\n"
    << "\t@%p fma.rn.f32 %v, %old, %beta, %v;\n"
    << "\t@%pv st.global.f32 [%o], %v;\n";
}

// CL > 1: the program's sums (group 0's, after the WK adds) to its shared
// memory, word s*G + tmn for sum s of thread tmn; a cluster barrier; then
// program r of the cluster adds words [r*E/CL, (r+1)*E/CL) of the tile (E =
// TileM * TileN) over the CL programs' shared memory in rank order and
// writes them: to W[z / CL] when K_G > CL, else alpha * sum + beta * C to
// C. A second cluster barrier keeps every program's shared memory until
// the cluster's last read of it.
void ClusterEpilogue(const Plan& t, PtxText* out) {
  PtxText& p = *out;
  const FfmaKParams& q = t.p;
  const int64_t sums = q.tm * q.tn;
  const int64_t g = t.gthreads;
  const int64_t words = sums * g;        // E: the tile
  const int64_t slice = words / q.cl;    // words per program of the cluster
  const int64_t rounds = CeilDiv(slice, t.threads);
  const bool to_c = q.Partials() == 1;
  p << "\t// ---- the " << N(q.cl)
    << " splits of the cluster add their sums in distributed shared memory\n";
  if (q.wk == 1) {
    p << "\tcp.async.wait_group 0;\n\tbar.sync 0;\n"
      << "\tmad.lo.u32 %ws, %t, 4, %smem;\n";
  }
  for (int64_t i = 0; i < sums; ++i)
    p << "\tst.shared.f32 [%ws+" << N(i * g * 4) << "], %acc" << N(i)
      << ";\n";
  p << "$CLUSTER:\n"
    << "\tbarrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;\n"
    << "\tmov.u32 %rank, %cluster_ctarank;\n"
    << "\tshr.u32 %z, %z, " << N(Log2(q.cl)) << ";  // the cluster's split\n";
  if (to_c) p << "\tsetp.ne.f32 %pbeta, %beta, 0f00000000;\n";
  for (int64_t r = 0; r < rounds; ++r) {
    p << "\t// word w = rank*" << N(slice) << " + t + " << N(r * t.threads)
      << " of the tile\n"
      << "\tadd.u32 %w, %t, " << N(r * t.threads) << ";\n";
    if ((r + 1) * t.threads > slice)
      p << "\tsetp.lt.u32 %pv, %w, " << N(slice) << ";\n";
    else
      p << "\tsetp.eq.u32 %pv, %t, %t;\n";
    p << "\tmad.lo.u32 %w, %rank, " << N(slice) << ", %w;\n"
      << "\tmad.lo.u32 %wl, %w, 4, %smem;\n";
    for (int64_t c = 0; c < q.cl; ++c) {
      p << "\tmapa.shared::cluster.u32 %rc, %wl, " << N(c) << ";\n"
        << "\t@%pv ld.shared::cluster.f32 " << (c ? "%old" : "%v")
        << ", [%rc];\n";
      if (c) p << "\t@%pv add.f32 %v, %v, %old;\n";
    }
    // w = s*G + tmn, s = i*TN + j; tmn = 32*warp + lane, lane = lm + LM*ln.
    p << "\tshr.u32 %s, %w, " << N(Log2(g)) << ";\n"
      << "\tand.b32 %cw, %w, " << N(g - 1) << ";  // tmn\n"
      << "\tand.b32 %r, %cw, 31;\n"
      << "\tand.b32 %row, %r, " << N(q.lanes_m - 1) << ";\n"
      << "\tshr.u32 %col, %r, " << N(Log2(q.lanes_m)) << ";\n"
      << "\tshr.u32 %cw, %cw, 5;  // warp\n"
      << "\tand.b32 %r, %cw, " << N(q.wm - 1) << ";\n"
      << "\tmad.lo.u32 %row, %r, " << N(q.lanes_m * q.tm) << ", %row;\n"
      << "\tshr.u32 %r, %cw, " << N(Log2(q.wm)) << ";\n"
      << "\tmad.lo.u32 %col, %r, " << N(t.ln * q.tn) << ", %col;\n"
      << "\tshr.u32 %r, %s, " << N(Log2(q.tn)) << ";  // i\n"
      << "\tmad.lo.u32 %row, %r, " << N(q.lanes_m) << ", %row;\n"
      << "\tand.b32 %r, %s, " << N(q.tn - 1) << ";  // j\n"
      << "\tmad.lo.u32 %col, %r, " << N(t.ln) << ", %col;\n"
      << "\tadd.u32 %row, %row, %m0;\n\tadd.u32 %col, %col, %n0;\n"
      << "\tsetp.lt.and.u32 %prow, %row, %M, %pv;\n"
      << "\tsetp.lt.and.u32 %pv, %col, %N, %prow;\n";
    if (to_c) {
      p << "\tmul.wide.u32 %o, %row, %ldc;\n\tcvt.u64.u32 %o2, %col;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tshl.b64 %o, %o, 2;\n"
        << "\tadd.u64 %o, %C, %o;\n";
      EmitScaledStore(p, "%v");
    } else {  // ((z*M + row) * N + col) in 64 bits
      p << "\tmul.wide.u32 %o, %z, %M;\n\tcvt.u64.u32 %o2, %row;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tcvt.u64.u32 %o2, %N;\n"
        << "\tmul.lo.u64 %o, %o, %o2;\n\tcvt.u64.u32 %o2, %col;\n"
        << "\tadd.u64 %o, %o, %o2;\n"
        << "\tshl.b64 %o, %o, 2;\n\tadd.u64 %o, %W, %o;\n"
        << "\t@%pv st.global.f32 [%o], %v;\n";
    }
  }
  p << "\tbarrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;\n"
    << "\tret;\n}\n";
}

// dependent: the reduce entry is a programmatic dependent launch, which the
// main entry lets in first thing (GenerateFfmaK decides).
// pack: gemm.ffma_kpk's packed operands, read from the workspace (nullptr:
// gemm.ffma_k's PTX, A and B where the arguments say).
std::string Entry(const Plan& t, const std::string& arch, bool dependent,
                  const MmaPacking* pack = nullptr) {
  const FfmaKParams& q = t.p;
  PtxText p;
  p << "//\n// blocktune gemm.ffma_k v" << N(kGemmFfmaKGeneratorVersion)
    << ", fp32: C = alpha * A * B^T + beta * C, A and B K-major in shared "
       "memory\n"
    << "// LM=" << N(q.lanes_m) << " x LN=" << N(t.ln)
    << " lanes per warp, TM=" << N(q.tm) << " x TN=" << N(q.tn)
    << " outputs per lane, WM=" << N(q.wm) << " x WN=" << N(q.wn)
    << " warps";
  if (q.wk > 1) p << " x WK=" << N(q.wk) << " groups splitting each stage";
  p << " per program: a " << N(t.tile_m) << " x " << N(t.tile_n)
    << " tile of C\n"
    << "// KC=" << N(q.kc) << " elements of K per stage, ST=" << N(q.stages)
    << " stages (" << N(q.SharedBytes()) << " bytes of shared memory), K_G="
    << N(q.kg);
  if (q.cl > 1)
    p << ", CL=" << N(q.cl) << " splits per cluster adding their sums in "
      << "distributed shared memory";
  p << "\n"
    << "//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n"
    << ".extern .shared .align 128 .b8 smem[];\n\n";

  p << ".visible .entry blocktune_ffma_k(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta)\n";
  if (q.cl > 1) p << ".reqnctapercluster 1, 1, " << N(q.cl) << "\n";
  p << "{\n";
  const int64_t sums = q.tm * q.tn;
  p << "\t.reg .pred %p, %pi, %pa_last, %pb_last, %pbeta, %prow, %pv"
    << (q.wk > 1 ? ", %pk" : "") << ";\n"
    << "\t.reg .b32 %M, %N, %K, %lda, %ldb, %ldc, %t, %lane, %warp, %lm, "
       "%ln, %m0, %n0, %z, %kbeg, %kend, %len, %ntiles, %tile, %it, %kt, "
       "%kk, %sz, %q4, %r, %row, %col, %smem, %send, %ws, %rs, %da, %db, "
       "%oa, %ob, %xa, %xb, %crow0, %ccol0"
    << (q.wk > 1 ? ", %wk, %tmn" : "")
    << (q.cl > 1 ? ", %rank, %w, %wl, %cw, %s, %rc" : "") << ";\n"
    << "\t.reg .b64 %A, %B, %C, %W, %o, %o2, %addr, %ga<" << N(t.ca)
    << ">, %gb<" << N(t.cb) << ">;\n"
    << "\t.reg .f32 %alpha, %beta, %v, %old, %acc<" << N(sums) << ">, %fa<"
    << N(4 * q.tm) << ">, %fb<" << N(4 * q.tn) << ">;\n\n";

  if (dependent)
    p << "\t// ---- the reduce entry may be scheduled now (a programmatic "
         "dependent launch); it waits for this grid in griddepcontrol.wait\n"
      << "\tgriddepcontrol.launch_dependents;\n";
  p << "\t// ---- parameters; program (x, y, z) owns rows x*" << N(t.tile_m)
    << " .., columns y*" << N(t.tile_n) << " .. and split z of K\n"
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
    << "\tmov.u32 %m0, %ctaid.x;\n\tmul.lo.u32 %m0, %m0, " << N(t.tile_m)
    << ";\n"
    << "\tmov.u32 %n0, %ctaid.y;\n\tmul.lo.u32 %n0, %n0, " << N(t.tile_n)
    << ";\n"
    << "\tmov.u32 %smem, smem;\n"
    << "\tadd.u32 %send, %smem, " << N(q.stages * t.stage) << ";\n";
  // An operand the pack entry copied: its rows at W + offset.
  auto packed = [&](const char* x, int64_t ld, int64_t offset) {
    p << "\t// ---- " << x << " packed by the pack entry: rows of " << N(ld)
      << " floats at W+" << N(offset) << "\n"
      << "\tadd.u64 %" << x << ", %W, " << N(offset) << ";\n"
      << "\tmov.u32 %ld" << (x[0] == 'A' ? "a" : "b") << ", " << N(ld)
      << ";\n";
  };
  if (pack != nullptr && pack->a) packed("A", pack->lda, pack->a_offset);
  if (pack != nullptr && pack->b) packed("B", pack->ldb, pack->b_offset);

  p << "\t// ---- this program's share of K: ceil(ceil(K / KC) / K_G) "
       "stages from z times that\n"
    << "\tadd.u32 %r, %K, " << N(q.kc - 1) << ";\n"
    << "\tshr.u32 %r, %r, " << N(Log2(q.kc)) << ";\n";
  if (q.kg > 1) {
    p << "\tadd.u32 %r, %r, " << N(q.kg - 1) << ";\n";
    if (IsPow2(q.kg)) {
      p << "\tshr.u32 %r, %r, " << N(Log2(q.kg)) << ";\n";
    } else {
      p << "\tdiv.u32 %r, %r, " << N(q.kg) << ";\n";
    }
    p << "\tmov.u32 %z, %ctaid.z;\n";
  } else {
    p << "\tmov.u32 %z, 0;\n";
  }
  p << "\tmul.lo.u32 %kbeg, %z, %r;\n"
    << "\tshl.b32 %kbeg, %kbeg, " << N(Log2(q.kc)) << ";\n"
    << "\tshl.b32 %len, %r, " << N(Log2(q.kc)) << ";\n"
    << "\tadd.u32 %kend, %kbeg, %len;\n\tmin.u32 %kend, %kend, %K;\n"
    << "\tmax.u32 %kend, %kend, %kbeg;  // a split past K: no work\n"
    << "\tsub.u32 %len, %kend, %kbeg;\n"
    << "\tadd.u32 %len, %len, " << N(q.kc - 1) << ";\n"
    << "\tshr.u32 %ntiles, %len, " << N(Log2(q.kc)) << ";\n";

  p << "\t// ---- copies: thread t brings 16 bytes at k = 4*(t mod " << N(t.cpr)
    << ") of rows t/" << N(t.cpr) << " + j*" << N(t.rstep)
    << " of each operand's tile (rows past M or N read the last one, not "
       "stored)\n"
    << "\tand.b32 %q4, %t, " << N(t.cpr - 1) << ";\n"
    << "\tshl.b32 %q4, %q4, 2;\n"
    << "\tshr.u32 %r, %t, " << N(Log2(t.cpr)) << ";\n"
    << "\tmad.lo.u32 %oa, %r, " << N(t.row_bytes) << ", 0;\n"
    << "\tmad.lo.u32 %oa, %q4, 4, %oa;  // this thread's byte in a stage's A\n"
    << "\tadd.u32 %ob, %oa, " << N(t.stage_a) << ";  // and in its B\n"
    << "\tadd.u32 %kk, %kbeg, %q4;\n\tcvt.u64.u32 %o2, %kk;\n";
  auto pointers = [&](const char* name, const char* base, const char* rows,
                      const char* ld, const char* first, int64_t copies,
                      int64_t tile, const char* last_pred) {
    for (int64_t j = 0; j < copies; ++j) {
      p << "\tadd.u32 %row, %r, " << N(j * t.rstep) << ";\n"
        << "\tadd.u32 %row, %row, " << first << ";\n"
        << "\tsub.u32 %col, " << rows << ", 1;\n"
        << "\tmin.u32 %row, %row, %col;\n"
        << "\tmul.wide.u32 %o, %row, " << ld << ";\n\tadd.u64 %o, %o, %o2;\n"
        << "\tshl.b64 %o, %o, 2;\n\tadd.u64 %" << name << N(j) << ", " << base
        << ", %o;\n";
    }
    // The last copy may fall past the tile where the tile's copies are no
    // multiple of the threads.
    if (copies * t.rstep > tile)
      p << "\tsetp.lt.u32 " << last_pred << ", %r, "
        << N(tile - (copies - 1) * t.rstep) << ";\n";
  };
  pointers("ga", "%A", "%M", "%lda", "%m0", t.ca, t.tile_m, "%pa_last");
  pointers("gb", "%B", "%N", "%ldb", "%n0", t.cb, t.tile_n, "%pb_last");

  // The copies of stage `%it` (k from %kt) into the stage at %ws, under
  // %pi (the stage is one of this split's); then the pointers move on.
  auto issue = [&] {
    p << "\tsetp.lt.u32 %pi, %it, %ntiles;\n"
      << "\tadd.u32 %kk, %kt, %q4;\n"
      << "\tsub.s32 %sz, %kend, %kk;\n\tmax.s32 %sz, %sz, 0;\n"
      << "\tmin.s32 %sz, %sz, 4;\n\tshl.b32 %sz, %sz, 2;  // bytes in K\n"
      << "\tadd.u32 %da, %ws, %oa;\n\tadd.u32 %db, %ws, %ob;\n";
    auto copies = [&](const char* g, const char* dst, int64_t n, int64_t tile,
                      const char* last_pred) {
      const bool partial = n * t.rstep > tile;
      for (int64_t j = 0; j < n; ++j) {
        std::string guard = "@%pi ";
        if (partial && j == n - 1) {
          p << "\tand.pred %p, %pi, " << last_pred << ";\n";
          guard = "@%p ";
        }
        p << "\t" << guard << "cp.async.cg.shared.global [" << dst << "+"
          << N(j * t.rstep * t.row_bytes) << "], [%" << g << N(j)
          << "], 16, %sz;\n";
      }
    };
    copies("ga", "%da", t.ca, t.tile_m, "%pa_last");
    copies("gb", "%db", t.cb, t.tile_n, "%pb_last");
    p << "\tcp.async.commit_group;\n";
    for (int64_t j = 0; j < t.ca; ++j)
      p << "\tadd.u64 %ga" << N(j) << ", %ga" << N(j) << ", " << N(q.kc * 4)
        << ";\n";
    for (int64_t j = 0; j < t.cb; ++j)
      p << "\tadd.u64 %gb" << N(j) << ", %gb" << N(j) << ", " << N(q.kc * 4)
        << ";\n";
    p << "\tadd.u32 %kt, %kt, " << N(q.kc) << ";\n\tadd.u32 %it, %it, 1;\n"
      << "\tadd.u32 %ws, %ws, " << N(t.stage) << ";\n"
      << "\tsetp.eq.u32 %p, %ws, %send;\n\t@%p mov.u32 %ws, %smem;\n";
  };

  p << "\t// ---- the lane's reads: lane (lm, ln) = (lane mod LM, lane / LM) "
       "of warp (w mod WM, w / WM)\n"
    << "\tand.b32 %lm, %lane, " << N(q.lanes_m - 1) << ";\n"
    << "\tshr.u32 %ln, %lane, " << N(Log2(q.lanes_m)) << ";\n"
    << "\tand.b32 %r, %warp, " << N(q.wm - 1) << ";\n"
    << "\tmad.lo.u32 %crow0, %r, " << N(q.lanes_m * q.tm) << ", %lm;\n"
    << "\tshr.u32 %r, %warp, " << N(Log2(q.wm)) << ";\n";
  if (q.wk > 1) p << "\tand.b32 %r, %r, " << N(q.wn - 1) << ";\n";
  p << "\tmad.lo.u32 %ccol0, %r, " << N(t.ln * q.tn) << ", %ln;\n"
    << "\tmul.lo.u32 %xa, %crow0, " << N(t.row_bytes) << ";\n"
    << "\tmad.lo.u32 %xb, %ccol0, " << N(t.row_bytes) << ", "
    << N(t.stage_a) << ";\n";
  if (q.wk > 1)
    p << "\t// group wk = w / (WM*WN) reads K elements " << N(4 * t.gq)
      << "*wk .. of each stage\n"
      << "\tshr.u32 %wk, %warp, " << N(Log2(q.wm * q.wn)) << ";\n"
      << "\tmad.lo.u32 %xa, %wk, " << N(16 * t.gq) << ", %xa;\n"
      << "\tmad.lo.u32 %xb, %wk, " << N(16 * t.gq) << ", %xb;\n";
  for (int64_t i = 0; i < sums; ++i)
    p << "\tmov.f32 %acc" << N(i) << ", 0f00000000;\n";

  p << "\t// ---- prologue: stages 0 .. ST-2 in flight\n"
    << "\tmov.u32 %ws, %smem;\n\tmov.u32 %it, 0;\n\tmov.u32 %kt, %kbeg;\n";
  for (int64_t s = 0; s + 1 < q.stages; ++s) issue();
  p << "\tmov.u32 %rs, %smem;\n\tmov.u32 %tile, 0;\n"
    << "\tsetp.eq.u32 %p, %ntiles, 0;\n\t@%p bra $EPILOGUE;\n"
    << "$MAIN:\n"
    << "\t// stage `tile` has landed (for every thread after the barrier); "
       "the stage read before it is free for stage tile + ST - 1\n"
    << "\tcp.async.wait_group " << N(q.stages - 2) << ";\n\tbar.sync 0;\n";
  issue();
  p << "\tadd.u32 %da, %rs, %xa;\n\tadd.u32 %db, %rs, %xb;\n";
  for (int64_t kq = 0; kq < t.gq; ++kq) {
    p << "\t// k " << N(4 * kq) << " .. " << N(4 * kq + 3) << "\n";
    for (int64_t i = 0; i < q.tm; ++i)
      p << "\tld.shared.v4.f32 " << Vec4("fa", 4 * i) << ", [%da+"
        << N(q.lanes_m * i * t.row_bytes + 16 * kq) << "];\n";
    for (int64_t j = 0; j < q.tn; ++j)
      p << "\tld.shared.v4.f32 " << Vec4("fb", 4 * j) << ", [%db+"
        << N(t.ln * j * t.row_bytes + 16 * kq) << "];\n";
    for (int64_t e = 0; e < 4; ++e)
      for (int64_t i = 0; i < q.tm; ++i)
        for (int64_t j = 0; j < q.tn; ++j) {
          const std::string acc = "%acc" + N(i * q.tn + j);
          p << "\tfma.rn.f32 " << acc << ", %fa" << N(4 * i + e) << ", %fb"
            << N(4 * j + e) << ", " << acc << ";\n";
        }
  }
  p << "\tadd.u32 %rs, %rs, " << N(t.stage) << ";\n"
    << "\tsetp.eq.u32 %p, %rs, %send;\n\t@%p mov.u32 %rs, %smem;\n"
    << "\tadd.u32 %tile, %tile, 1;\n"
    << "\tsetp.lt.u32 %p, %tile, %ntiles;\n\t@%p bra $MAIN;\n";

  p << "$EPILOGUE:\n";
  // With CL > 1 every thread of the cluster reaches its barriers: the
  // groups 1 .. WK-1 skip only the adds.
  const char* skip = q.cl > 1 ? "$CLUSTER" : "$DONE";
  if (q.wk > 1) {
    // Sum s of thread tmn of group g (1 .. WK-1) at word
    // ((g-1)*TM*TN + s)*G + tmn of the ring (G: a group's threads), once
    // every warp is past its last read of the ring.
    const int64_t slice = sums * t.gthreads * 4;
    p << "\t// ---- groups 1 .. " << N(q.wk - 1)
      << " leave their sums in shared memory; group 0 adds them\n"
      << "\tcp.async.wait_group 0;\n\tbar.sync 0;\n"
      << "\tand.b32 %tmn, %t, " << N(t.gthreads - 1) << ";\n"
      << "\tsetp.ne.u32 %pk, %wk, 0;\n"
      << "\tmad.lo.u32 %ws, %tmn, 4, %smem;\n"
      << "\tmad.lo.u32 %da, %wk, " << N(slice) << ", %ws;\n"
      << "\tsub.u32 %da, %da, " << N(slice) << ";\n";
    for (int64_t i = 0; i < sums; ++i)
      p << "\t@%pk st.shared.f32 [%da+" << N(i * t.gthreads * 4)
        << "], %acc" << N(i) << ";\n";
    p << "\tbar.sync 0;\n\t@%pk bra " << skip << ";\n";
    for (int64_t g = 1; g < q.wk; ++g)
      for (int64_t i = 0; i < sums; ++i)
        p << "\tld.shared.f32 %v, [%ws+"
          << N(((g - 1) * sums + i) * t.gthreads * 4) << "];\n"
          << "\tadd.f32 %acc" << N(i) << ", %acc" << N(i) << ", %v;\n";
  }
  if (q.cl > 1) {
    ClusterEpilogue(t, &p);
    return p.str();
  }
  if (q.kg == 1) {
    p << "\t// ---- C[row][col] = alpha * sum + beta * C (C is not read when "
         "beta == 0)\n"
      << "\tsetp.ne.f32 %pbeta, %beta, 0f00000000;\n";
  } else {
    p << "\t// ---- the partial sums to W[z][row][col]\n";
  }
  p << "\tadd.u32 %crow0, %crow0, %m0;\n\tadd.u32 %ccol0, %ccol0, %n0;\n";
  for (int64_t i = 0; i < q.tm; ++i) {
    p << "\tadd.u32 %row, %crow0, " << N(q.lanes_m * i) << ";\n"
      << "\tsetp.lt.u32 %prow, %row, %M;\n";
    if (q.kg == 1) {
      p << "\tmul.wide.u32 %o, %row, %ldc;\n"
        << "\tshl.b64 %o, %o, 2;\n\tadd.u64 %addr, %C, %o;\n";
    } else {  // ((z*M + row) * N) in 64 bits
      p << "\tmul.wide.u32 %o, %z, %M;\n\tcvt.u64.u32 %o2, %row;\n"
        << "\tadd.u64 %o, %o, %o2;\n\tcvt.u64.u32 %o2, %N;\n"
        << "\tmul.lo.u64 %o, %o, %o2;\n"
        << "\tshl.b64 %o, %o, 2;\n\tadd.u64 %addr, %W, %o;\n";
    }
    for (int64_t j = 0; j < q.tn; ++j) {
      const std::string acc = "%acc" + N(i * q.tn + j);
      p << "\tadd.u32 %col, %ccol0, " << N(t.ln * j) << ";\n"
        << "\tsetp.lt.and.u32 %pv, %col, %N, %prow;\n"
        << "\tmul.wide.u32 %o, %col, 4;\n\tadd.u64 %o, %addr, %o;\n";
      if (q.kg == 1) {
        EmitScaledStore(p, acc);
      } else {
        p << "\t@%pv st.global.f32 [%o], " << acc << ";\n";
      }
    }
  }
  if (q.wk > 1) p << "$DONE:\n";
  p << "\tret;\n}\n";
  return p.str();
}

}  // namespace

const std::vector<int64_t>& FfmaKLaneValues() {
  static const std::vector<int64_t> v = {4, 8, 16, 32};
  return v;
}
const std::vector<int64_t>& FfmaKThreadTileValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8};
  return v;
}
const std::vector<int64_t>& FfmaKWarpValues() {
  static const std::vector<int64_t> v = {1, 2, 4, 8};
  return v;
}
const std::vector<int64_t>& FfmaKStepValues() {
  static const std::vector<int64_t> v = {16, 32, 64};
  return v;
}
const std::vector<int64_t>& FfmaKStageValues() {
  static const std::vector<int64_t> v = {2, 3, 4};
  return v;
}
const std::vector<int64_t>& FfmaKSplitValues() {
  // Up to 1024: a 64 x 64 covariance is one tile, and its K alone fills
  // the SMs (512 and 1024 for more programs per SM: with CL = 8 their
  // workspace is that of 64 and 128).
  // 3, 5, 6 and 7 (v5): a grid of M tiles x K_G programs that fills the
  // SMs where no power of two can (7168 rows = 7 x 1024: 56 tiles of 128
  // rows x K_G = 7 is 392 programs, 2.97 per SM of an H100; with powers of
  // two every grid is 7 x 2^j, 0.85 of the SMs at best; cuBLAS's own grid
  // for that MLP layer is 56 x 7, bench/results/h100/ncu-misses/).
  static const std::vector<int64_t> v = {1,  2,  3,  4,   5,   6,   7,   8,
                                         16, 32, 64, 128, 256, 512, 1024};
  return v;
}
const std::vector<int64_t>& FfmaKClusterValues() {
  // 8: the largest portable cluster.
  static const std::vector<int64_t> v = {1, 2, 4, 8};
  return v;
}

Status Validate(const FfmaKParams& p, std::string_view field) {
  const std::string f(field);
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".LM", FfmaKLaneValues(), p.lanes_m));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".TM", FfmaKThreadTileValues(), p.tm));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".TN", FfmaKThreadTileValues(), p.tn));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".WM", FfmaKWarpValues(), p.wm));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".WN", FfmaKWarpValues(), p.wn));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".KC", FfmaKStepValues(), p.kc));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".ST", FfmaKStageValues(), p.stages));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".KG", FfmaKSplitValues(), p.kg));
  BT_RETURN_IF_ERROR(CheckOneOf(f + ".WK", FfmaKWarpValues(), p.wk));
  return CheckOneOf(f + ".CL", FfmaKClusterValues(), p.cl);
}

const char* ToString(FfmaKRule rule) {
  switch (rule) {
    case FfmaKRule::kLayout:
      return "layout";
    case FfmaKRule::kTile:
      return "tile";
    case FfmaKRule::kThreads:
      return "threads";
    case FfmaKRule::kKWarps:
      return "k_warps";
    case FfmaKRule::kVectorLd:
      return "vector_ld";
    case FfmaKRule::kShared:
      return "shared";
    case FfmaKRule::kRegisters:
      return "registers";
    case FfmaKRule::kCluster:
      return "cluster";
  }
  return "unknown";
}

int64_t FfmaKCopiesA(const FfmaKParams& p) {
  const int64_t rstep = p.Threads() / (p.kc / 4);
  return CeilDiv(p.TileM(), rstep);
}
int64_t FfmaKCopiesB(const FfmaKParams& p) {
  const int64_t rstep = p.Threads() / (p.kc / 4);
  return CeilDiv(p.TileN(), rstep);
}

int64_t FfmaKRegisterEstimate(const FfmaKParams& p) {
  return p.tm * p.tn + 8 * (p.tm + p.tn) +
         2 * (FfmaKCopiesA(p) + FfmaKCopiesB(p)) + 32;
}

bool Passes(FfmaKRule rule, const Problem& problem, const FfmaKParams& p,
            const KernelLimits& limits) {
  const GemmContext& g = GemmOf(problem);
  switch (rule) {
    case FfmaKRule::kLayout:
      return g.layout_a == Layout::kN && g.layout_b == Layout::kT;
    case FfmaKRule::kTile:
      return p.TileM() < 2 * g.m && p.TileN() < 2 * g.n;
    case FfmaKRule::kThreads:
      return p.Threads() <= limits.max_threads_per_block;
    case FfmaKRule::kKWarps:
      return (p.kc / 4) % p.wk == 0;
    case FfmaKRule::kVectorLd: {
      const auto ld = LeadingDims(problem);
      return ld[0] % 4 == 0 && ld[1] % 4 == 0;
    }
    case FfmaKRule::kShared:
      return p.SharedBytes() <= limits.max_dynamic_shared_bytes;
    case FfmaKRule::kRegisters: {
      const int64_t regs = FfmaKRegisterEstimate(p);
      return regs <= limits.max_registers_per_thread &&
             regs * p.Threads() < limits.registers_per_sm;
    }
    case FfmaKRule::kCluster:
      return p.cl == 1 || (p.cl <= p.kg && p.kg % p.cl == 0 &&
                           limits.compute_capability >= 90);
  }
  return false;
}

Status CanImplement(const Problem& problem, const FfmaKParams& p,
                    const KernelLimits& limits) {
  const GemmContext& g = GemmOf(problem);
  const auto ld = LeadingDims(problem);
  for (FfmaKRule rule : kFfmaKRules) {
    if (Passes(rule, problem, p, limits)) continue;
    switch (rule) {
      case FfmaKRule::kLayout:
        return FailedPrecondition(
            std::string("layout: gemm.ffma_k stages both operands K-major: "
                        "layout must be NT (A M rows of K, B N rows of K), "
                        "got ") +
            (g.layout_a == Layout::kN ? "N" : "T") +
            (g.layout_b == Layout::kN ? "N" : "T"));
      case FfmaKRule::kTile: {
        const bool m = p.TileM() >= 2 * g.m;
        return FailedPrecondition(
            "tile: the program's tile of " + N(m ? p.TileM() : p.TileN()) +
            (m ? " rows (LM*TM*WM)" : " columns (LN*TN*WN)") +
            " is at least twice " + (m ? "m " : "n ") + N(m ? g.m : g.n) +
            " (a narrower one does the same work): it must be below " +
            N(2 * (m ? g.m : g.n)));
      }
      case FfmaKRule::kThreads:
        return FailedPrecondition(
            "threads: WM=" + N(p.wm) + " x WN=" + N(p.wn) + " x WK=" +
            N(p.wk) + " warps are " + N(p.Threads()) + " threads, more than " +
            N(limits.max_threads_per_block) + " per program");
      case FfmaKRule::kKWarps:
        return FailedPrecondition(
            "k_warps: WK=" + N(p.wk) + " groups split each stage's KC=" +
            N(p.kc) + " elements in whole 16-byte vectors: WK must divide " +
            "KC / 4 = " + N(p.kc / 4));
      case FfmaKRule::kVectorLd: {
        const bool a = ld[0] % 4 != 0;
        return FailedPrecondition(
            std::string("vector_ld: gemm.ffma_k copies 16 bytes (4 floats) "
                        "at a time: ") +
            (a ? "lda" : "ldb") + " must be a multiple of 4, got " +
            N(a ? ld[0] : ld[1]));
      }
      case FfmaKRule::kShared:
        return FailedPrecondition(
            "shared: ST=" + N(p.stages) + " stages of (" + N(p.TileM()) +
            " + " + N(p.TileN()) + ") rows of KC=" + N(p.kc) +
            " (+4) floats, or WK-1=" + N(p.wk - 1) + " groups' (with CL > 1 "
            "at least one) " +
            N(p.TileM()) + " x " + N(p.TileN()) + " sums, are " +
            N(p.SharedBytes()) + " bytes of shared memory, more than the " +
            N(limits.max_dynamic_shared_bytes) + " a program may have");
      case FfmaKRule::kRegisters:
        return FailedPrecondition(
            "registers: an estimated " + N(FfmaKRegisterEstimate(p)) +
            " registers per thread (TM*TN sums, 8*(TM + TN) fragments, the "
            "copy pointers) exceed " +
            N(limits.max_registers_per_thread) + ", or times " +
            N(p.Threads()) + " threads reach the SM's " +
            N(limits.registers_per_sm));
      case FfmaKRule::kCluster:
        return FailedPrecondition(
            "cluster: CL=" + N(p.cl) + " splits per cluster need " +
            (p.cl > p.kg || p.kg % p.cl != 0
                 ? "CL <= KG=" + N(p.kg) + " and a divisor of it"
                 : std::string("thread-block clusters (compute "
                               "capability 9.0 or later), got ") +
                       N(limits.compute_capability / 10) + "." +
                       N(limits.compute_capability % 10)) +
            "; CL=1 runs anywhere");
    }
  }
  return OkStatus();
}

namespace {

Status CheckGenerate(const Problem& problem, const FfmaKParams& p,
                     const std::string& arch) {
  BT_RETURN_IF_ERROR(CheckArch("arch", arch));
  if (OpOf(problem.ctx) != Op::kGemm)
    return InvalidArgument("context: gemm.ffma_k computes a gemm");
  BT_RETURN_IF_ERROR(Validate(problem.ctx));
  return Validate(p);
}

// The H100's limits, at the architecture asked for (CL > 1 needs sm_90).
KernelLimits LimitsFor(const std::string& arch) {
  KernelLimits limits;
  limits.compute_capability = mma_internal::ArchNumber(arch);
  return limits;
}

// gemm.ffma_k's main entry (reading the packs where `pack` is given) and
// its reduce entry, for a problem the rules took.
GemmKernel Main(const Problem& problem, const FfmaKParams& p,
                const std::string& arch, const MmaPacking* pack) {
  const GemmContext& g = GemmOf(problem);
  GemmKernel k;
  // A reduce entry (K_G / CL partial sums) on sm_90 waits for the main grid
  // in griddepcontrol.wait, and the main entry triggers it.
  const bool dependent =
      p.Partials() > 1 && mma_internal::ArchNumber(arch) >= 90;
  k.ptx = Entry(MakePlan(p), arch, dependent, pack);
  k.entry = "blocktune_ffma_k";
  k.grid = {static_cast<unsigned>(CeilDiv(g.m, p.TileM())),
            static_cast<unsigned>(CeilDiv(g.n, p.TileN())),
            static_cast<unsigned>(p.kg)};
  k.block = {static_cast<unsigned>(p.Threads()), 1, 1};
  k.vector_a = 4;
  k.vector_b = 4;
  if (p.Partials() > 1)
    AddSplitReduce(p.Partials(), g.m, g.n, &k, /*fixed_partials=*/p.cl > 1,
                   dependent);
  return k;
}


}  // namespace

StatusOr<GemmKernel> GenerateFfmaK(const Problem& problem,
                                   const FfmaKParams& p,
                                   const std::string& arch) {
  BT_RETURN_IF_ERROR(CheckGenerate(problem, p, arch));
  BT_RETURN_IF_ERROR(CanImplement(problem, p, LimitsFor(arch)));
  return Main(problem, p, arch, nullptr);
}

bool NeedsFfmaKPacking(const Problem& problem) {
  const auto ld = LeadingDims(problem);
  return ld[0] % 4 != 0 || ld[1] % 4 != 0;
}

MmaPacking PlanFfmaKPacking(const Problem& problem, const FfmaKParams& p) {
  const GemmContext& g = GemmOf(problem);
  const auto ld = LeadingDims(problem);
  MmaPacking pk;
  pk.rows_a = g.m;
  pk.rows_b = g.n;
  pk.cols_a = pk.cols_b = g.k;
  pk.a = ld[0] % 4 != 0;
  pk.b = ld[1] % 4 != 0;
  pk.lda = pk.a ? RoundUp(g.k, 4) : ld[0];
  pk.ldb = pk.b ? RoundUp(g.k, 4) : ld[1];
  // gemm.ffma_k's partial sums stay at the workspace's start, where its
  // reduce entry finds them.
  PlaceMmaPacks(p.Partials() > 1 ? p.Partials() * g.m * g.n * 4 : 0, 4, &pk);
  return pk;
}

Problem PackedFfmaKProblem(const Problem& problem, const MmaPacking& pk) {
  Problem q = problem;
  q.lda = pk.lda;
  q.ldb = pk.ldb;
  return q;
}

Status CanImplementFfmaKPacked(const Problem& problem, const FfmaKParams& p,
                               const KernelLimits& limits) {
  if (!Passes(FfmaKRule::kLayout, problem, p, limits))
    return CanImplement(problem, p, limits);  // names the layout rule
  if (!NeedsFfmaKPacking(problem)) {
    const auto ld = LeadingDims(problem);
    return FailedPrecondition(
        "unaligned_rows: gemm.ffma_kpk packs operands whose rows are not "
        "whole 16-byte units, and lda=" + N(ld[0]) + " and ldb=" + N(ld[1]) +
        " are multiples of 4 floats: gemm.ffma_k reads them in place");
  }
  return CanImplement(PackedFfmaKProblem(problem, PlanFfmaKPacking(problem, p)),
                      p, limits);
}

StatusOr<GemmKernel> GenerateFfmaKPacked(const Problem& problem,
                                         const FfmaKParams& p,
                                         const std::string& arch) {
  BT_RETURN_IF_ERROR(CheckGenerate(problem, p, arch));
  BT_RETURN_IF_ERROR(CanImplementFfmaKPacked(problem, p, LimitsFor(arch)));
  const MmaPacking pk = PlanFfmaKPacking(problem, p);
  GemmKernel k = Main(PackedFfmaKProblem(problem, pk), p, arch, &pk);
  // gemm.mma_pk's pack entry with 4-byte elements (tf32 is stored as fp32).
  k.ptx += mma_internal::PackEntry(MmaPrecision::kTf32, pk);
  k.pack_entry = "blocktune_gemm_mma_pack";
  const int64_t chunks = mma_internal::PackChunksA(pk, 4) +
                         mma_internal::PackChunksB(pk, 4);
  k.pack_grid = mma_internal::PackGrid(chunks);
  k.pack_block = {static_cast<unsigned>(mma_internal::kPackThreads), 1, 1};
  k.workspace_bytes = pk.workspace_bytes;
  // The packs are read from the workspace; an operand read in place keeps
  // gemm.ffma_k's 16-byte copies.
  k.vector_a = pk.a ? 1 : 4;
  k.vector_b = pk.b ? 1 : 4;
  return k;
}

}  // namespace blocktune
