// conv.mma (conv_mma.h): the implicit-GEMM convolution's copies and
// reduction order, on gemm.mma's pipeline (gemm_mma_ptx.h EmitMainBody).
#include "kernels/conv_mma.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/gemm_mma_ptx.h"
#include "kernels/gemm_ptx.h"
#include "kernels/ptx_text.h"

namespace blocktune {

using mma_internal::Tiling;

namespace {

using Ptx = PtxText;

Tiling MakeTiling(const ConvMmaProblem& problem, const MmaParams& p) {
  const int64_t cw = ConvMmaCopyBytes(problem);
  return Tiling(problem.precision, /*a_t=*/false, /*b_t=*/true, p, cw, cw);
}

// The equivalent GEMM (A N: pixels x reduction, B T: channels x
// reduction) for gemm.mma's estimates.
MmaProblem ImplicitMmaProblem(const ConvMmaProblem& problem) {
  const GemmShape g = ImplicitGemm(problem.ctx);
  MmaProblem m;
  m.ctx = GemmContext{g.m, g.n, g.k, Layout::kN, Layout::kT,
                      StorageType(problem.precision)};
  m.precision = problem.precision;
  // Leading dimensions that give the copy width C gives.
  m.lda = m.ldb = problem.ctx.c;
  return m;
}

// The entry's own registers and parameters, beside gemm.mma's: the
// convolution's sizes, each A copy's pixel (h0, w0 and the address of
// input pixel (n, h0, w0) at the copy's first channel), each B copy's
// filter row address and whether its output channel exists, and the
// reduction position (stage %it of [%itb, %ite), tap (%cr, %cs), channel
// %cc).
void EmitConvDeclarations(Ptx& p, const Tiling& t) {
  const std::string ac = N(t.a_copies), bc = N(t.b_copies);
  p << "\t.reg .b32 %Hin, %Win, %Cin, %Pout, %Qout, %Sf, %padh, %padw, "
       "%sth, %stw, %dlh, %dlw, %PQ, %CB;\n"
    << "\t.reg .b32 %itb, %ite, %it, %cc, %cs, %cr, %hoff, %woff;\n"
    << "\t.reg .b32 %gh<" << ac << ">, %gw<" << ac << ">;\n"
    << "\t.reg .b64 %gp<" << ac << ">, %fp<" << bc << ">, %dA, %dB;\n"
    << "\t.reg .pred %fv<" << bc << ">, %pit, %pw;\n\n";
}

void EmitConvParams(Ptx& p) {
  p << "\tld.param.u32 %Hin, [pH];\n\tld.param.u32 %Win, [pWin];\n"
    << "\tld.param.u32 %Cin, [pCin];\n\tld.param.u32 %Pout, [pP];\n"
    << "\tld.param.u32 %Qout, [pQ];\n\tld.param.u32 %Sf, [pS];\n"
    << "\tld.param.u32 %padh, [ppadh];\n\tld.param.u32 %padw, [ppadw];\n"
    << "\tld.param.u32 %sth, [psth];\n\tld.param.u32 %stw, [pstw];\n"
    << "\tld.param.u32 %dlh, [pdlh];\n\tld.param.u32 %dlw, [pdlw];\n"
    << "\tmul.lo.u32 %PQ, %Pout, %Qout;\n";
}

// A row whose pixel is past M: h0 so far outside the image that no tap
// brings it in.
constexpr const char* kNoPixel = "-1073741824";

void EmitCopySetup(Ptx& p, const Tiling& t) {
  const int lg = Log2(t.esize);
  // A: rows are output pixels, chunk column %ch is channels ch*v ..
  mma_internal::EmitRegularSharedOffsets(p, t, 'a');
  const int64_t arstep = t.threads / t.a_chunks;
  p << "\tmul.lo.u32 %kka0, %ch, " << N(t.v)
    << ";  // the first channel of this thread's chunks\n"
    << "\t// each A copy's output pixel m = m0 + row -> (n, p, q); h0 = "
       "p*stride_h - pad_h, w0 = q*stride_w - pad_w; its address is input "
       "pixel (n, h0, w0) at channel kka0 (outside the image for most taps "
       "where h0 or w0 < 0: never read there)\n";
  for (int64_t i = 0; i < t.a_copies; ++i) {
    const std::string I = N(i);
    p << "\tadd.u32 %g, %r0a, " << N(i * arstep) << ";\n"
      << "\tadd.u32 %g, %g, %m0;\n"
      << "\tsetp.lt.u32 %pk, %g, %M;\n"
      << "\tdiv.u32 %e, %g, %PQ;\n\trem.u32 %x, %g, %PQ;\n"
      << "\tdiv.u32 %y, %x, %Qout;\n\trem.u32 %x, %x, %Qout;\n"
      << "\tmul.lo.u32 %y, %y, %sth;\n\tsub.s32 %y, %y, %padh;\n"
      << "\tmul.lo.u32 %x, %x, %stw;\n\tsub.s32 %x, %x, %padw;\n"
      << "\tselp.b32 %gh" << I << ", %y, " << kNoPixel << ", %pk;\n"
      << "\tmov.u32 %gw" << I << ", %x;\n"
      << "\tselp.b32 %e, %e, 0, %pk;\n"
      << "\tmul.wide.u32 %d0, %e, %Hin;\n"
      << "\tcvt.s64.s32 %d1, %y;\n\tadd.s64 %d0, %d0, %d1;\n"
      << "\tcvt.u64.u32 %d1, %Win;\n\tmul.lo.s64 %d0, %d0, %d1;\n"
      << "\tcvt.s64.s32 %d1, %x;\n\tadd.s64 %d0, %d0, %d1;\n"
      << "\tcvt.u64.u32 %d1, %Cin;\n\tmul.lo.s64 %d0, %d0, %d1;\n"
      << "\tcvt.u64.u32 %d1, %kka0;\n\tadd.s64 %d0, %d0, %d1;\n"
      << "\tshl.b64 %d0, %d0, " << N(lg) << ";\n"
      << "\tadd.s64 %gp" << I << ", %A, %d0;\n";
  }
  // B: rows are output channels of the KRSC filter, rows of K = C*R*S.
  mma_internal::EmitRegularSharedOffsets(p, t, 'b');
  const int64_t brstep = t.threads / t.b_chunks;
  p << "\t// each B copy's output channel n0 + row: its filter row at "
       "channel kka0 (the same chunk column as A's)\n";
  for (int64_t i = 0; i < t.b_copies; ++i) {
    const std::string I = N(i);
    p << "\tadd.u32 %g, %r0b, " << N(i * brstep) << ";\n"
      << "\tadd.u32 %g, %g, %n0;\n"
      << "\tsetp.lt.u32 %fv" << I << ", %g, %N;\n"
      << "\tmul.wide.u32 %d0, %g, %K;\n"
      << "\tcvt.u64.u32 %d1, %kka0;\n\tadd.u64 %d0, %d0, %d1;\n"
      << "\tshl.b64 %d0, %d0, " << N(lg) << ";\n"
      << "\tadd.u64 %fp" << I << ", %B, %d0;\n";
  }
}

// One stage's copies: tap (%cr, %cs), channels from %cc.
void EmitStageCopies(Ptx& p, const Tiling& t) {
  const int lg = Log2(t.esize);
  p << "\t// ---- stage %it: tap (r, s) = (%cr, %cs), channels %cc + "
       "[0, BK); zero-filled past the program's last stage\n"
    << "\tsetp.lt.u32 %pit, %it, %ite;\n"
    << "\tmul.lo.u32 %hoff, %cr, %dlh;\n\tmul.lo.u32 %woff, %cs, %dlw;\n"
    << "\tcvt.u64.u32 %d1, %cc;\n"
    << "\tmad.lo.u32 %x, %hoff, %Win, %woff;\n"
    << "\tmul.wide.u32 %dA, %x, %Cin;\n\tadd.u64 %dA, %dA, %d1;\n"
    << "\tshl.b64 %dA, %dA, " << N(lg) << ";\n"
    << "\tmad.lo.u32 %x, %cr, %Sf, %cs;\n"
    << "\tmul.wide.u32 %dB, %x, %Cin;\n\tadd.u64 %dB, %dB, %d1;\n"
    << "\tshl.b64 %dB, %dB, " << N(lg) << ";\n"
    << "\t// bytes of this thread's chunk inside C (both operands)\n"
    << "\tsub.s32 %sz0, %Cin, %cc;\n\tsub.s32 %sz0, %sz0, %kka0;\n"
    << "\tmax.s32 %sz0, %sz0, 0;\n\tmin.s32 %sz0, %sz0, " << N(t.v) << ";\n"
    << "\tshl.b32 %sz0, %sz0, " << N(lg) << ";\n"
    << "\tselp.b32 %sz0, %sz0, 0, %pit;\n";
  const int64_t arstep = t.threads / t.a_chunks;
  const bool a_same = arstep % 8 == 0 || t.a_copies == 1;
  for (int64_t i = 0; i < t.a_copies; ++i) {
    const std::string I = N(i);
    const bool guarded = (i + 1) * t.threads > t.a_rows * t.a_chunks;
    if (guarded) {
      p << "\tsetp.lt.u32 %pg, %r0a, " << N(t.a_rows - i * arstep) << ";\n";
    }
    p << "\tadd.s32 %x, %gh" << I << ", %hoff;\n"
      << "\tsetp.lt.u32 %pk, %x, %Hin;\n"
      << "\tadd.s32 %y, %gw" << I << ", %woff;\n"
      << "\tsetp.lt.and.u32 %pk, %y, %Win, %pk;\n"
      << "\tand.pred %pk, %pk, %pit;\n"
      << "\tselp.b32 %sz, %sz0, 0, %pk;\n"
      << "\tadd.s64 %pcp, %gp" << I << ", %dA;\n"
      << "\tselp.b64 %pcp, %pcp, %A, %pk;\n"
      << "\tadd.u32 %dst, %slot_w, %sa" << (a_same ? "0" : I) << ";\n";
    mma_internal::EmitChunk(p, t, 'a', i, guarded ? "%pg" : "",
                            a_same ? i * arstep * t.a_rb : 0, "%pcp");
  }
  const int64_t brstep = t.threads / t.b_chunks;
  const bool b_same = brstep % 8 == 0 || t.b_copies == 1;
  for (int64_t i = 0; i < t.b_copies; ++i) {
    const std::string I = N(i);
    const bool guarded = (i + 1) * t.threads > t.b_rows * t.b_chunks;
    if (guarded) {
      p << "\tsetp.lt.u32 %pg, %r0b, " << N(t.b_rows - i * brstep) << ";\n";
    }
    p << "\tand.pred %pk, %fv" << I << ", %pit;\n"
      << "\tselp.b32 %sz, %sz0, 0, %pk;\n"
      << "\tadd.u64 %pcp, %fp" << I << ", %dB;\n"
      << "\tselp.b64 %pcp, %pcp, %B, %pk;\n"
      << "\tadd.u32 %dst, %slot_w, %sb" << (b_same ? "0" : I) << ";\n";
    mma_internal::EmitChunk(p, t, 'b', i, guarded ? "%pg" : "",
                            t.a_stage + (b_same ? i * brstep * t.b_rb : 0),
                            "%pcp");
  }
}

std::string ConvEntry(const ConvMmaProblem& prob, const Tiling& t,
                      const std::string& arch) {
  const ConvContext& c = prob.ctx;
  Ptx p;
  p << "//\n// blocktune conv.mma v" << N(kConvMmaGeneratorVersion) << ", "
    << ToString(t.prec)
    << ": implicit-GEMM convolution (NHWC input, KRSC filter, NPQK output) "
       "with mma.sync\n"
    << "// BM=" << N(t.bm) << " BN=" << N(t.bn) << " BK=" << N(t.bk)
    << " warps " << N(t.warps_m) << "x" << N(t.warps_n) << " (warp tile "
    << N(t.wm) << "x" << N(t.wn) << ") stages=" << N(t.stages)
    << " K_G=" << N(t.kg) << " group_m=" << N(t.group_m) << "; copies of "
    << N(t.cw_a) << " bytes (C = " << N(c.c) << ")\n"
    << "// reduction order: filter tap (r, s) outer, channels in steps of "
       "BK inner; stage j = tap j / ceil(C/BK), channels BK * (j % "
       "ceil(C/BK))\n//\n"
    << ".version 8.0\n.target " << arch << "\n.address_size 64\n\n"
    << ".extern .shared .align 128 .b8 smem[];\n\n"
    << ".visible .entry blocktune_conv_mma(\n"
    << "\t.param .u64 pA, .param .u64 pB, .param .u64 pC, .param .u64 pW,\n"
    << "\t.param .u32 pM, .param .u32 pN, .param .u32 pK,\n"
    << "\t.param .u32 plda, .param .u32 pldb, .param .u32 pldc,\n"
    << "\t.param .f32 palpha, .param .f32 pbeta,\n"
    << "\t.param .u32 pH, .param .u32 pWin, .param .u32 pCin,\n"
    << "\t.param .u32 pP, .param .u32 pQ, .param .u32 pS,\n"
    << "\t.param .u32 ppadh, .param .u32 ppadw, .param .u32 psth,\n"
    << "\t.param .u32 pstw, .param .u32 pdlh, .param .u32 pdlw)\n"
    << mma_internal::MaxRegisterDirective(t) << "{\n";
  mma_internal::EmitDeclarations(p, t);
  EmitConvDeclarations(p, t);
  mma_internal::EmitCommonParams(p);
  EmitConvParams(p);
  mma_internal::StageHooks h;
  h.k_range = [&](Ptx& q) {
    q << "\t// ---- the reduction's stages: (K / C) taps x CB = ceil(C / "
         "BK) channel steps; this program's share (K_G = "
      << N(t.kg) << "): [itb, ite)\n"
      << "\tadd.u32 %CB, %Cin, " << N(t.bk - 1) << ";\n"
      << "\tdiv.u32 %CB, %CB, " << N(t.bk) << ";\n"
      << "\tdiv.u32 %x, %K, %Cin;\n\tmul.lo.u32 %x, %x, %CB;\n"
      << "\tadd.u32 %kc, %x, " << N(t.kg - 1) << ";\n"
      << "\tdiv.u32 %kc, %kc, " << N(t.kg) << ";\n"
      << "\tmul.lo.u32 %itb, %z, %kc;\n\tmin.u32 %itb, %itb, %x;\n"
      << "\tadd.u32 %ite, %itb, %kc;\n\tmin.u32 %ite, %ite, %x;\n"
      << "\tsub.u32 %ntiles, %ite, %itb;\n";
  };
  h.copy_setup = [&](Ptx& q) { EmitCopySetup(q, t); };
  h.start = [&](Ptx& q) {
    q << "\tmov.u32 %it, %itb;\n"
      << "\trem.u32 %cc, %itb, %CB;\n\tmul.lo.u32 %cc, %cc, " << N(t.bk)
      << ";\n"
      << "\tdiv.u32 %x, %itb, %CB;\n"
      << "\trem.u32 %cs, %x, %Sf;\n\tdiv.u32 %cr, %x, %Sf;\n";
  };
  h.copies = [&](Ptx& q) { EmitStageCopies(q, t); };
  h.advance = [&](Ptx& q) {
    q << "\t// next stage: channels + BK, or the next tap\n"
      << "\tadd.u32 %it, %it, 1;\n"
      << "\tadd.u32 %cc, %cc, " << N(t.bk) << ";\n"
      << "\tsetp.ge.u32 %pw, %cc, %Cin;\n"
      << "\tselp.b32 %cc, 0, %cc, %pw;\n"
      << "\tselp.b32 %x, 1, 0, %pw;\n\tadd.u32 %cs, %cs, %x;\n"
      << "\tsetp.ge.u32 %pw, %cs, %Sf;\n"
      << "\tselp.b32 %cs, 0, %cs, %pw;\n"
      << "\tselp.b32 %x, 1, 0, %pw;\n\tadd.u32 %cr, %cr, %x;\n";
  };
  mma_internal::EmitMainBody(p, t, arch, h);
  return p.str();
}

}  // namespace

const char* ToString(ConvMmaRule rule) {
  switch (rule) {
    case ConvMmaRule::kNone:
      return "none";
    case ConvMmaRule::kThreads:
      return "threads";
    case ConvMmaRule::kSharedMemory:
      return "shared_memory";
    case ConvMmaRule::kRegisters:
      return "registers";
    case ConvMmaRule::kGather:
      return "gather";
    case ConvMmaRule::kGrid:
      return "grid";
    case ConvMmaRule::kAddressing:
      return "addressing";
  }
  return "?";
}

int ConvMmaCopyBytes(const ConvMmaProblem& problem) {
  return static_cast<int>(mma_internal::CopyBytes(
      problem.ctx.c, ElementBytes(problem.precision)));
}

int64_t ConvMmaStages(const ConvContext& ctx, int64_t bk) {
  return ctx.r * ctx.s * CeilDiv(ctx.c, bk);
}

int64_t ConvMmaRegisterEstimate(const ConvMmaProblem& problem,
                                const MmaParams& p, int compute_capability) {
  const Tiling t = MakeTiling(problem, p);
  // gemm.mma's estimate, and per A copy its pixel (h0, w0) and 64-bit
  // address, per B copy an address and a predicate, less 32: calibrated
  // with ptxas -v on sm_90 over 184 kernels of 2K-16K warp-tile elements
  // (bf16, tf32; C = 64 and C = 3): up to 256 threads, the kernels this
  // estimates at <= 254 used at most 255 registers without spilling, and
  // every one that spilled is estimated at >= 256 (the least, a 256 x 128
  // tile of 2 x 4 warps, spilled 12 bytes); gemm.mma's copy bookkeeping
  // (regular copies: one pointer per operand) is more than ptxas keeps
  // here, where each copy has its own. Tall warp tiles (more than 4 m16
  // tiles: 128 x 32, 256 x 8) spilled a few bytes at 254 in the sampled
  // test: 4 more per m16 tile past 4. Past 256 threads, where .maxnreg
  // caps registers at 65536 / threads, 8 more (a 16-warp 128 x 32 tile
  // spilled at its cap of 128). family_ptxas_test checks samples.
  return MmaRegisterEstimate(ImplicitMmaProblem(problem), p,
                             compute_capability) +
         4 * t.a_copies + 3 * t.b_copies - 32 +
         4 * std::max<int64_t>(0, t.mt - 4) + (t.threads > 256 ? 8 : 0);
}

int64_t ConvMmaWorkspaceBytes(const ConvMmaProblem& problem,
                              const MmaParams& p) {
  if (p.kg <= 1) return 0;
  const GemmShape g = ImplicitGemm(problem.ctx);
  return p.kg * g.m * g.n * 4;
}

bool PassesConvMmaRule(ConvMmaRule rule, const ConvMmaProblem& problem,
                       const MmaParams& p, const MmaLimits& limits) {
  switch (rule) {
    case ConvMmaRule::kNone:
      return true;
    case ConvMmaRule::kThreads:
      return FitsThreads(p, limits);
    case ConvMmaRule::kSharedMemory:
      return FitsSharedMemory(problem.precision, p, limits);
    case ConvMmaRule::kRegisters:
      return FitsRegisters(
          ConvMmaRegisterEstimate(problem, p, limits.compute_capability), p,
          limits);
    case ConvMmaRule::kGather:
      return p.Threads() % (p.bk * ElementBytes(problem.precision) / 16) == 0;
    case ConvMmaRule::kGrid: {
      const GemmShape g = ImplicitGemm(problem.ctx);
      return CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn) <= 2147483647 &&
             p.kg <= 65535;
    }
    case ConvMmaRule::kAddressing:
      return CheckConvAddressing(problem.ctx).ok();
  }
  return false;
}

namespace {

// Why `rule` fails, with its numbers (OK for kNone).
Status RuleFailure(ConvMmaRule rule, const ConvMmaProblem& problem,
                   const MmaParams& p, const MmaLimits& limits) {
  switch (rule) {
    case ConvMmaRule::kNone:
      return OkStatus();
    case ConvMmaRule::kThreads:
      return ThreadsFailure(p, limits);
    case ConvMmaRule::kSharedMemory:
      return SharedMemoryFailure(problem.precision, p, limits);
    case ConvMmaRule::kRegisters:
      return RegistersFailure(
          ConvMmaRegisterEstimate(problem, p, limits.compute_capability),
          limits);
    case ConvMmaRule::kGather:
      return FailedPrecondition(
          "gather: threads 32*wm*wn = " + N(p.Threads()) +
          " must be a multiple of the 16-byte chunks per row, bk*bytes/16 = " +
          N(p.bk * ElementBytes(problem.precision) / 16));
    case ConvMmaRule::kGrid:
      return FailedPrecondition(
          "grid: ceil(M/bm)*ceil(N/bn) exceeds 2^31-1 or K_G exceeds 65535");
    case ConvMmaRule::kAddressing:
      return CheckConvAddressing(problem.ctx);
  }
  return Internal("unknown rule");
}

}  // namespace

Status CanImplementConvMma(const ConvMmaProblem& problem, const MmaParams& p,
                           const MmaLimits& limits) {
  for (ConvMmaRule rule : kConvMmaRules)
    if (!PassesConvMmaRule(rule, problem, p, limits))
      return RuleFailure(rule, problem, p, limits);
  return OkStatus();
}

StatusOr<ConvMmaKernel> GenerateConvMma(const ConvMmaProblem& problem,
                                        const MmaParams& p,
                                        const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(problem.ctx, "conv"));
  BT_RETURN_IF_ERROR(ValidateMmaParams(p));
  if (p.split_reduce != 0) {
    return InvalidArgument(
        "params.sk must be 0 for conv.mma (its K_G partial sums are added "
        "by the reduce entry), got " +
        N(p.split_reduce));
  }
  if (problem.ctx.dtype != StorageType(problem.precision)) {
    return InvalidArgument("conv.dtype " +
                           std::string(ToString(problem.ctx.dtype)) +
                           " does not store precision " +
                           std::string(ToString(problem.precision)));
  }
  const int number = mma_internal::ArchNumber(arch);
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0 || number < 80) {
    return InvalidArgument(
        "arch must be sm_80 or later for mma.sync bf16 and cp.async, got '" +
        arch + "'");
  }
  BT_RETURN_IF_ERROR(CheckConvAddressing(problem.ctx));
  if (!PassesConvMmaRule(ConvMmaRule::kGather, problem, p, {}))
    return RuleFailure(ConvMmaRule::kGather, problem, p, {});
  const GemmShape g = ImplicitGemm(problem.ctx);
  Tiling t = MakeTiling(problem, p);
  t.sm = number;
  ConvMmaKernel k;
  k.ptx = ConvEntry(problem, t, arch);
  k.grid = {static_cast<unsigned>(CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn)),
            static_cast<unsigned>(p.kg), 1};
  k.block = {static_cast<unsigned>(p.Threads()), 1, 1};
  k.shared_bytes = static_cast<unsigned>(MmaSharedBytes(problem.precision, p));
  k.copy_bytes = static_cast<int>(t.cw_a);
  k.element_bytes = static_cast<int>(t.esize);
  k.workspace_bytes = ConvMmaWorkspaceBytes(problem, p);
  if (p.kg > 1) {
    mma_internal::AddReduceLaunch(
        mma_internal::MakeReduceLaunch(problem.precision, p.kg, g.m, g.n,
                                       arch),
        &k);
  }
  return k;
}

}  // namespace blocktune
