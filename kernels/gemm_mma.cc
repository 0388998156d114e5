#include "kernels/gemm_mma.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "kernels/gemm_mma_ptx.h"

namespace blocktune {

using mma_internal::Tiling;

namespace {

// The tiling of `p` with the problem's copy widths (CopyBytes of lda, ldb).
Tiling MakeTiling(const MmaProblem& problem, const MmaParams& p) {
  const int64_t es = ElementBytes(problem.precision);
  return Tiling(problem.precision, problem.ctx.layout_a == Layout::kT,
                problem.ctx.layout_b == Layout::kT, p,
                mma_internal::CopyBytes(problem.Lda(), es),
                mma_internal::CopyBytes(problem.Ldb(), es));
}

}  // namespace

std::string_view ToString(MmaPrecision p) {
  switch (p) {
    case MmaPrecision::kBf16:
      return "bf16";
    case MmaPrecision::kFp16:
      return "fp16";
    case MmaPrecision::kTf32:
      return "tf32";
  }
  return "?";
}

StatusOr<MmaPrecision> MmaPrecisionFromString(std::string_view text) {
  std::string s(text);
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "bf16") return MmaPrecision::kBf16;
  if (s == "fp16" || s == "f16") return MmaPrecision::kFp16;
  if (s == "tf32") return MmaPrecision::kTf32;
  return InvalidArgument("precision must be bf16, fp16 or tf32, got '" + s +
                         "'");
}

int ElementBytes(MmaPrecision p) { return p == MmaPrecision::kTf32 ? 4 : 2; }

DType StorageType(MmaPrecision p) {
  switch (p) {
    case MmaPrecision::kBf16:
      return DType::kBf16;
    case MmaPrecision::kFp16:
      return DType::kFp16;
    case MmaPrecision::kTf32:
      return DType::kFp32;
  }
  return DType::kFp32;
}

int64_t MmaProblem::Lda() const {
  if (lda) return lda;
  return ctx.layout_a == Layout::kT ? ctx.m : ctx.k;
}
int64_t MmaProblem::Ldb() const {
  if (ldb) return ldb;
  return ctx.layout_b == Layout::kT ? ctx.k : ctx.n;
}
int64_t MmaProblem::Ldc() const { return ldc ? ldc : ctx.n; }

std::string ToString(const MmaParams& p) {
  return "bm=" + N(p.bm) + " bn=" + N(p.bn) + " bk=" + N(p.bk) +
         " wm=" + N(p.warps_m) + " wn=" + N(p.warps_n) + " st=" + N(p.stages) +
         " kg=" + N(p.kg) + " gm=" + N(p.group_m) + " sk=" + N(p.split_reduce);
}

StatusOr<MmaParams> MmaParamsFromString(std::string_view text) {
  MmaParams p;
  std::istringstream in{std::string(text)};
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos)
      return InvalidArgument("params: expected key=value, got '" + tok + "'");
    const std::string key = tok.substr(0, eq);
    int64_t v = 0;
    try {
      v = std::stoll(tok.substr(eq + 1));
    } catch (...) {
      return InvalidArgument("params: " + key + " needs an integer");
    }
    if (key == "bm")
      p.bm = v;
    else if (key == "bn")
      p.bn = v;
    else if (key == "bk")
      p.bk = v;
    else if (key == "wm")
      p.warps_m = v;
    else if (key == "wn")
      p.warps_n = v;
    else if (key == "st")
      p.stages = v;
    else if (key == "kg")
      p.kg = v;
    else if (key == "gm")
      p.group_m = v;
    else if (key == "sk")
      p.split_reduce = v;
    else
      return InvalidArgument("params: unknown key '" + key +
                             "' (bm bn bk wm wn st kg gm sk)");
  }
  return p;
}

std::vector<MmaParamDomain> MmaParamDomains() {
  return {{"bm", {16, 32, 64, 128, 256}},
          {"bn", {8, 16, 32, 64, 128, 256}},
          {"bk", {16, 32, 64, 128, 256}},
          {"wm", {1, 2, 4, 8}},
          {"wn", {1, 2, 4, 8}},
          {"st", {2, 3, 4, 5}},
          {"kg", {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}},
          {"gm", {1, 2, 4, 8, 16}},
          {"sk", {0, 1}}};
}

Status ValidateMmaParams(const MmaParams& p) {
  auto in = [](const char* name, int64_t v, int64_t lo, int64_t hi,
               bool pow2) -> Status {
    if (v < lo || v > hi || (pow2 && !IsPow2(v)))
      return InvalidArgument(std::string("params.") + name + " must be " +
                             (pow2 ? "a power of two " : "") + "in [" + N(lo) +
                             ", " + N(hi) + "], got " + N(v));
    return OkStatus();
  };
  BT_RETURN_IF_ERROR(in("bm", p.bm, 16, 256, true));
  BT_RETURN_IF_ERROR(in("bn", p.bn, 8, 256, true));
  BT_RETURN_IF_ERROR(in("bk", p.bk, 16, 256, true));
  BT_RETURN_IF_ERROR(in("wm", p.warps_m, 1, 8, true));
  BT_RETURN_IF_ERROR(in("wn", p.warps_n, 1, 8, true));
  BT_RETURN_IF_ERROR(in("st", p.stages, 2, 5, false));
  BT_RETURN_IF_ERROR(in("kg", p.kg, 1, 4096, false));
  BT_RETURN_IF_ERROR(in("gm", p.group_m, 1, 16, false));
  BT_RETURN_IF_ERROR(in("sk", p.split_reduce, 0, 1, false));
  if (p.warps_m * p.warps_n > 16)
    return InvalidArgument("params: wm*wn must be at most 16 warps, got " +
                           N(p.warps_m * p.warps_n));
  if (p.WarpTileM() < 16 || p.WarpTileN() < 8)
    return InvalidArgument(
        "params: the warp tile bm/wm x bn/wn = " + N(p.WarpTileM()) + "x" +
        N(p.WarpTileN()) + " must be at least 16x8");
  return OkStatus();
}

const char* ToString(MmaRule rule) {
  switch (rule) {
    case MmaRule::kNone:
      return "none";
    case MmaRule::kThreads:
      return "threads";
    case MmaRule::kSharedMemory:
      return "shared_memory";
    case MmaRule::kRegisters:
      return "registers";
    case MmaRule::kAlignment:
      return "alignment";
    case MmaRule::kGrid:
      return "grid";
  }
  return "?";
}

int64_t MmaSharedBytes(MmaPrecision precision, const MmaParams& p) {
  return p.stages * (p.bm + p.bn) * p.bk * ElementBytes(precision);
}

int64_t MmaRegisterEstimate(const MmaProblem& problem, const MmaParams& p,
                            int compute_capability) {
  const Tiling t = MakeTiling(problem, p);
  // Accumulators; two buffers of fragments (the pipelined loop); the lane
  // offsets; copy bookkeeping (regular: 7 per operand, plus a shared
  // offset per copy where the swizzle differs; else 5 per copy); 40 for
  // coordinates and temporaries. 2-byte copies hold eight halves per copy
  // across the step's math. Calibrated with ptxas (gemm_mma_test) on sm_80
  // and sm_90: with the loop's copies in one block with the mma's, ptxas
  // may give every copy its own 64-bit pointer, so past 8 copies per
  // thread each counts 2 more. The split-K tree: 4 * radix loaded values
  // and radix addresses (56; v1's 40 let a 64x64 warp tile spill), and a
  // quarter of the accumulators more with the pipelined loop (16 x 128
  // warp tiles spilled at an estimate of 248).
  auto copy_regs = [&](bool regular, int64_t copies, int64_t chunks,
                       int64_t cw) {
    const int64_t held = cw == 2 ? 8 * copies : 0;
    const int64_t split = copies > 8 ? 2 * copies : 0;
    if (!regular) return 5 * copies + held + split;
    const int64_t rstep = t.threads / chunks;
    return 7 + (rstep % 8 == 0 || copies == 1 ? 0 : copies) + held + split;
  };
  const int64_t acc = 4 * t.mt * t.nt;
  // Before sm_90, tf32 rounds with cvt.rna (three instructions and a
  // temporary per element): a 256 x 8 warp tile (mt 16) estimated at 254
  // spilled 136 bytes on sm_80.
  const int64_t tf32_round =
      t.prec == MmaPrecision::kTf32 && compute_capability < 90 ? 2 * t.mt : 0;
  return acc + tf32_round + 2 * (4 * t.mt + 2 * t.nt) + t.FragAddrA() + t.FragAddrB() +
         copy_regs(t.RegularA(), t.a_copies, t.a_chunks, t.cw_a) +
         copy_regs(t.RegularB(), t.b_copies, t.b_chunks, t.cw_b) + 40 +
         (t.sk == 1 ? 56 + acc / 4 : 0);
}

bool FitsThreads(const MmaParams& p, const MmaLimits& limits) {
  return p.Threads() <= limits.max_threads_per_block;
}

bool FitsSharedMemory(MmaPrecision precision, const MmaParams& p,
                      const MmaLimits& limits) {
  return MmaSharedBytes(precision, p) <= limits.max_dynamic_shared_bytes;
}

bool FitsRegisters(int64_t registers, const MmaParams& p,
                   const MmaLimits& limits) {
  return registers <= limits.max_registers_per_thread &&
         registers * p.Threads() <= limits.registers_per_sm;
}

Status ThreadsFailure(const MmaParams& p, const MmaLimits& limits) {
  return FailedPrecondition("threads per program 32*wm*wn = " +
                            N(p.Threads()) + " exceed " +
                            N(limits.max_threads_per_block));
}

Status SharedMemoryFailure(MmaPrecision precision, const MmaParams& p,
                           const MmaLimits& limits) {
  return FailedPrecondition("shared memory stages*(bm+bn)*bk*bytes = " +
                            N(MmaSharedBytes(precision, p)) + " B exceeds " +
                            N(limits.max_dynamic_shared_bytes) + " B");
}

Status RegistersFailure(int64_t registers, const MmaLimits& limits) {
  return FailedPrecondition("an estimated " + N(registers) +
                            " registers per thread do not fit (" +
                            N(limits.max_registers_per_thread) +
                            " per thread, " + N(limits.registers_per_sm) +
                            " per SM)");
}

bool PassesMmaRule(MmaRule rule, const MmaProblem& problem,
                   const MmaParams& p, const MmaLimits& limits) {
  switch (rule) {
    case MmaRule::kNone:
      return true;
    case MmaRule::kThreads:
      return FitsThreads(p, limits);
    case MmaRule::kSharedMemory:
      return FitsSharedMemory(problem.precision, p, limits);
    case MmaRule::kRegisters:
      return FitsRegisters(
          MmaRegisterEstimate(problem, p, limits.compute_capability), p,
          limits);
    case MmaRule::kAlignment:  // narrow copies since generator v2
      return true;
    case MmaRule::kGrid: {
      const GemmContext& g = problem.ctx;
      return CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn) <= 2147483647 &&
             p.kg <= 65535;
    }
  }
  return false;
}

MmaRule FirstFailingMmaRule(const MmaProblem& problem, const MmaParams& p,
                            const MmaLimits& limits) {
  for (MmaRule rule : kMmaRules)
    if (!PassesMmaRule(rule, problem, p, limits)) return rule;
  return MmaRule::kNone;
}

int64_t MmaPartialBytes(const MmaProblem& problem, const MmaParams& p) {
  if (p.kg <= 1) return 0;
  const GemmContext& g = problem.ctx;
  if (p.split_reduce == 1)  // per tile, K_G whole bm x bn partial tiles
    return CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn) * p.kg * p.bm * p.bn * 4;
  return p.kg * g.m * g.n * 4;
}

int64_t MmaWorkspaceBytes(const MmaProblem& problem, const MmaParams& p) {
  if (p.kg <= 1) return 0;
  const int64_t partials = MmaPartialBytes(problem, p);
  if (p.split_reduce == 1) {  // the tree's arrival counters after them
    const GemmContext& g = problem.ctx;
    const int64_t tiles = CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn);
    return partials + tiles * (p.kg + mma_internal::kSplitCounterPad) * 4;
  }
  return partials;
}

Status CanImplementMma(const MmaProblem& problem, const MmaParams& p,
                       const MmaLimits& limits) {
  switch (FirstFailingMmaRule(problem, p, limits)) {
    case MmaRule::kNone:
      return OkStatus();
    case MmaRule::kThreads:
      return ThreadsFailure(p, limits);
    case MmaRule::kSharedMemory:
      return SharedMemoryFailure(problem.precision, p, limits);
    case MmaRule::kRegisters:
      return RegistersFailure(
          MmaRegisterEstimate(problem, p, limits.compute_capability), limits);
    case MmaRule::kAlignment:  // not produced since generator v2
      return FailedPrecondition("alignment");
    case MmaRule::kGrid:
      return FailedPrecondition(
          "grid: ceil(M/bm)*ceil(N/bn) exceeds 2^31-1 "
          "or K_G exceeds 65535");
  }
  return Internal("unknown rule");
}

namespace {

// GenerateGemmMma's, and with `pack` GenerateGemmMmaPacked's main kernel
// (`problem` then PackedMmaProblem's).
StatusOr<MmaKernel> GenerateMain(const MmaProblem& problem, const MmaParams& p,
                                 const std::string& arch,
                                 const MmaPacking* pack) {
  BT_RETURN_IF_ERROR(Validate(problem.ctx, "gemm"));
  BT_RETURN_IF_ERROR(ValidateMmaParams(p));
  if (problem.ctx.dtype != StorageType(problem.precision)) {
    return InvalidArgument("gemm.dtype " +
                           std::string(ToString(problem.ctx.dtype)) +
                           " does not store precision " +
                           std::string(ToString(problem.precision)));
  }
  int number = 0;
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0 ||
      (number = std::atoi(arch.c_str() + 3)) < 80) {
    return InvalidArgument(
        "arch must be sm_80 or later for mma.sync bf16 and "
        "cp.async, got '" +
        arch + "'");
  }
  const GemmContext& g = problem.ctx;
  Tiling t = MakeTiling(problem, p);
  t.sm = number;
  MmaKernel k;
  k.ptx = mma_internal::MainEntry(problem, t, arch, pack);
  k.grid = {static_cast<unsigned>(CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn)),
            static_cast<unsigned>(p.kg), 1};
  k.block = {static_cast<unsigned>(p.Threads()), 1, 1};
  k.shared_bytes = static_cast<unsigned>(MmaSharedBytes(problem.precision, p));
  k.a_copy_bytes = static_cast<int>(t.cw_a);
  k.b_copy_bytes = static_cast<int>(t.cw_b);
  k.align_elements = std::min(t.cw_a, t.cw_b) / t.esize;
  k.element_bytes = static_cast<int>(t.esize);
  k.workspace_bytes = MmaWorkspaceBytes(problem, p);
  if (p.kg > 1 && t.sk == 1) {
    k.counter_offset = MmaPartialBytes(problem, p);
  } else if (p.kg > 1) {
    mma_internal::AddReduceLaunch(
        mma_internal::MakeReduceLaunch(problem.precision, p.kg, g.m, g.n,
                                       arch),
        &k);
  }
  return k;
}

// Whether rows of `ld` elements of `es` bytes are copied in pieces narrower
// than 16 bytes (gemm.mma's copy width, CopyBytes): what packing is for.
bool RowsUnaligned(int64_t ld, int64_t es) {
  return mma_internal::CopyBytes(ld, es) < 16;
}

}  // namespace

StatusOr<MmaKernel> GenerateGemmMma(const MmaProblem& problem,
                                    const MmaParams& p,
                                    const std::string& arch) {
  return GenerateMain(problem, p, arch, nullptr);
}

bool NeedsMmaPacking(const MmaProblem& problem) {
  const int64_t es = ElementBytes(problem.precision);
  return RowsUnaligned(problem.Lda(), es) || RowsUnaligned(problem.Ldb(), es);
}

MmaPacking PlanMmaPacking(const MmaProblem& problem, const MmaParams& p) {
  const GemmContext& g = problem.ctx;
  const int64_t es = ElementBytes(problem.precision), v = 16 / es;
  MmaPacking pk;
  // As stored: A N is M rows of K, A T K rows of M; B N K rows of N, B T
  // N rows of K.
  const bool a_t = g.layout_a == Layout::kT, b_t = g.layout_b == Layout::kT;
  pk.rows_a = a_t ? g.k : g.m;
  pk.cols_a = a_t ? g.m : g.k;
  pk.rows_b = b_t ? g.n : g.k;
  pk.cols_b = b_t ? g.k : g.n;
  pk.a = RowsUnaligned(problem.Lda(), es);
  pk.b = RowsUnaligned(problem.Ldb(), es);
  pk.lda = pk.a ? RoundUp(pk.cols_a, v) : problem.Lda();
  pk.ldb = pk.b ? RoundUp(pk.cols_b, v) : problem.Ldb();
  // The split-K partials and counters (PackedMmaProblem's) stay at the
  // workspace's start, where gemm.mma's reduce entry and tree find them.
  PlaceMmaPacks(MmaWorkspaceBytes(PackedMmaProblem(problem, pk), p), es, &pk);
  return pk;
}

void PlaceMmaPacks(int64_t before, int64_t element_bytes, MmaPacking* pk) {
  int64_t at = RoundUp(before, 256);
  if (pk->a) {
    pk->a_offset = at;
    at += RoundUp(pk->rows_a * pk->lda * element_bytes, 256);
  }
  if (pk->b) {
    pk->b_offset = at;
    at += RoundUp(pk->rows_b * pk->ldb * element_bytes, 256);
  }
  pk->workspace_bytes = at;
}

MmaProblem PackedMmaProblem(const MmaProblem& problem, const MmaPacking& pk) {
  MmaProblem q = problem;
  if (pk.a) q.lda = pk.lda;
  if (pk.b) q.ldb = pk.ldb;
  return q;
}

Status CanImplementMmaPacked(const MmaProblem& problem, const MmaParams& p,
                             const MmaLimits& limits) {
  if (!NeedsMmaPacking(problem)) {
    const int64_t es = ElementBytes(problem.precision);
    return FailedPrecondition(
        "unaligned_rows: gemm.mma_pk packs operands whose rows are not "
        "16-byte aligned, and A's (" +
        N(problem.Lda()) + " x " + N(es) + " bytes) and B's (" +
        N(problem.Ldb()) + " x " + N(es) +
        " bytes) are: gemm.mma reads them in place");
  }
  return CanImplementMma(PackedMmaProblem(problem, PlanMmaPacking(problem, p)),
                         p, limits);
}

StatusOr<MmaKernel> GenerateGemmMmaPacked(const MmaProblem& problem,
                                          const MmaParams& p,
                                          const std::string& arch) {
  BT_RETURN_IF_ERROR(Validate(problem.ctx, "gemm"));
  BT_RETURN_IF_ERROR(ValidateMmaParams(p));
  if (!NeedsMmaPacking(problem)) {
    return FailedPrecondition(
        "gemm.mma_pk: no operand has rows that are not 16-byte aligned");
  }
  const MmaPacking pk = PlanMmaPacking(problem, p);
  BT_ASSIGN_OR_RETURN(MmaKernel k,
                      GenerateMain(PackedMmaProblem(problem, pk), p, arch, &pk));
  k.ptx += mma_internal::PackEntry(problem.precision, pk);
  k.pack_entry = "blocktune_gemm_mma_pack";
  const int64_t chunks = mma_internal::PackChunksA(pk, k.element_bytes) +
                         mma_internal::PackChunksB(pk, k.element_bytes);
  k.pack_grid = mma_internal::PackGrid(chunks);
  k.pack_block = {static_cast<unsigned>(mma_internal::kPackThreads), 1, 1};
  k.workspace_bytes = pk.workspace_bytes;
  // The packed operands are read whole-chunk from the workspace; the
  // others keep gemm.mma's in-place widths.
  if (pk.a) k.a_copy_bytes = k.element_bytes;
  if (pk.b) k.b_copy_bytes = k.element_bytes;
  k.align_elements = 1;
  return k;
}

}  // namespace blocktune
