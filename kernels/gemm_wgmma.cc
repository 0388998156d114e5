#include "kernels/gemm_wgmma.h"

#include <algorithm>

#include "kernels/family_params.h"
#include "kernels/gemm_mma_ptx.h"
#include "kernels/gemm_wgmma_ptx.h"

namespace blocktune {

using wgmma_internal::Tiling;

namespace {

bool IsT(Layout l) { return l == Layout::kT; }

// Leading dimensions with 0 resolved (family.h's LeadingDims).
int64_t Lda(const Problem& problem) { return LeadingDims(problem)[0]; }
int64_t Ldb(const Problem& problem) { return LeadingDims(problem)[1]; }

Tiling TilingOf(const Problem& problem, const WgmmaParams& p) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  Tiling t(g.dtype, IsT(g.layout_a), IsT(g.layout_b), p);
  if (p.tail > 1) t.tail_slots = WgmmaTailSlots(problem, p);
  return t;
}

}  // namespace

std::string ToString(const WgmmaParams& p) {
  return "bm=" + N(p.bm) + " bn=" + N(p.bn) + " bk=" + N(p.bk) +
         " st=" + N(p.stages) + " wg=" + N(p.consumers) + " gm=" +
         N(p.group_m) + " kg=" + N(p.kg) + " cm=" + N(p.cluster_m) +
         (p.tail > 1 ? " tl=" + N(p.tail) : "") +
         (p.b_per_box ? " (a wgmma per B box)" : "") +
         (p.relaxed_start ? " (relaxed start)" : "");
}

const std::vector<WgmmaParamDomain>& WgmmaParamDomains() {
  static const std::vector<WgmmaParamDomain> d = {
      {"bm", {64, 128, 192, 256}, "rows of C per program (M_L)", false},
      {"bn", {16, 32, 64, 96, 128, 192, 256},
       "columns of C per program (N_L): the wgmma N", false},
      {"bk", {32, 64, 128}, "K per pipeline stage (U)", true},
      {"st", {2, 3, 4, 5, 6, 7, 8}, "TMA ring stages", false},
      {"wg", {1, 2}, "consumer warpgroups", true},
      {"gm", {1, 2, 4, 8, 16}, "rows of tiles per raster group (L2 reuse)",
       false},
      {"kg", {1, 2, 3, 4, 6, 8},
       "programs splitting K (K_G): fp32 partial sums plus a reduce entry",
       false},
      {"cm", {1, 2},
       "programs per thread-block cluster along M (2: the pair shares B "
       "by TMA multicast)",
       true},
      {"tl", {1, 2, 3, 4},
       "gemm.wgmma_ts: the most splits over K of each tile of the "
       "persistent grid's last, partly empty round",
       false}};
  return d;
}

Status ValidateWgmmaParams(const WgmmaParams& p) {
  const int64_t values[] = {p.bm,      p.bn, p.bk,        p.stages,
                            p.consumers, p.group_m, p.kg, p.cluster_m,
                            p.tail};
  const auto& domains = WgmmaParamDomains();
  for (size_t i = 0; i < domains.size(); ++i) {
    BT_RETURN_IF_ERROR(CheckOneOf(std::string("params.") + domains[i].name,
                                  domains[i].values, values[i]));
  }
  if (p.bm % (64 * p.consumers) != 0) {
    return InvalidArgument("params: bm = " + N(p.bm) +
                           " must split into m64 tiles over wg = " +
                           N(p.consumers) + " consumer warpgroups");
  }
  return OkStatus();
}

const char* ToString(WgmmaRule rule) {
  switch (rule) {
    case WgmmaRule::kNone:
      return "none";
    case WgmmaRule::kComputeCapability:
      return "compute_capability";
    case WgmmaRule::kPrecisionLayout:
      return "precision_layout";
    case WgmmaRule::kTileLayout:
      return "tile_layout";
    case WgmmaRule::kSwizzleRow:
      return "swizzle_row";
    case WgmmaRule::kSharedMemory:
      return "shared_memory";
    case WgmmaRule::kRegisters:
      return "registers";
    case WgmmaRule::kAlignment:
      return "alignment";
    case WgmmaRule::kGrid:
      return "grid";
    case WgmmaRule::kClusterBox:
      return "cluster_box";
    case WgmmaRule::kSplitHasWork:
      return "split_has_work";
  }
  return "?";
}

int WgmmaElementBytes(DType precision) {
  return precision == DType::kTf32 || precision == DType::kFp32 ? 4 : 2;
}

int64_t WgmmaSharedBytes(DType precision, const WgmmaParams& p) {
  const int64_t esize = WgmmaElementBytes(precision);
  return 1024 + p.stages * (p.bm + p.bn) * p.bk * esize +
         wgmma_internal::EpilogueBytes(p.bn, esize, p.consumers) +
         16 * p.stages + WgmmaClusterSplitBytes(p);
}

int64_t WgmmaClusterSplitBytes(const WgmmaParams& p) {
  return p.split_cluster ? 16 + (p.kg - 1) * p.bm * p.bn * 4 : 0;
}

int64_t WgmmaRegisterEstimate(const WgmmaParams& p) {
  // Accumulators, plus loop state, descriptors and epilogue addressing
  // (calibrated with ptxas in gemm_wgmma_test).
  return p.MTiles() * p.bn / 2 + 40;
}

int64_t WgmmaRegisterBudget(const WgmmaParams& p) {
  // Two consumers: setmaxnreg gives each 232, of which 8 stay free for what
  // the estimate leaves out. At exactly 232 (192 accumulators: 256 x 192
  // and 128 x 384 tiles) the H100 bf16 campaigns measured 71 kernels at a
  // median 14 TFLOP/s, none above 31, against hundreds for every other
  // accumulator count, though ptxas reports no spill at the entry's 168
  // registers (issue 20's evaluation).
  return p.consumers == 2 ? 224 : 255;
}

bool PassesWgmmaTileRule(WgmmaRule rule, DType precision,
                         const WgmmaParams& p, const KernelLimits& limits) {
  switch (rule) {
    case WgmmaRule::kComputeCapability:
      return limits.compute_capability == 90;
    case WgmmaRule::kSwizzleRow:
      return p.bk * WgmmaElementBytes(precision) % 128 == 0;
    case WgmmaRule::kSharedMemory:
      return WgmmaSharedBytes(precision, p) <= limits.max_dynamic_shared_bytes;
    case WgmmaRule::kRegisters:
      return WgmmaRegisterEstimate(p) <= WgmmaRegisterBudget(p) &&
             WgmmaRegisterEstimate(p) <= limits.max_registers_per_thread;
    default:
      return false;
  }
}

bool PassesWgmmaRule(WgmmaRule rule, const Problem& problem,
                     const WgmmaParams& p, const KernelLimits& limits) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  switch (rule) {
    case WgmmaRule::kNone:
      return true;
    case WgmmaRule::kComputeCapability:
    case WgmmaRule::kSwizzleRow:
    case WgmmaRule::kSharedMemory:
    case WgmmaRule::kRegisters:
      return PassesWgmmaTileRule(rule, g.dtype, p, limits);
    case WgmmaRule::kPrecisionLayout:
      return g.dtype != DType::kTf32 ||
             (g.layout_a == Layout::kN && g.layout_b == Layout::kT);
    case WgmmaRule::kTileLayout:
      return g.layout_b == Layout::kT ||
             p.bn % (128 / WgmmaElementBytes(g.dtype)) == 0;
    case WgmmaRule::kAlignment: {
      const int64_t align = 16 / WgmmaElementBytes(g.dtype);
      return Lda(problem) % align == 0 && Ldb(problem) % align == 0 &&
             LeadingDims(problem)[2] % align == 0;
    }
    case WgmmaRule::kGrid:
      return p.cluster_m * CeilDiv(g.m, p.bm * p.cluster_m) *
                 CeilDiv(g.n, p.bn) * p.kg <=
             2147483647;
    case WgmmaRule::kSplitHasWork:
      return p.kg == 1 || p.kg * p.bk <= g.k;
    case WgmmaRule::kClusterBox: {
      // In a cluster launch (a pair, or the cluster split) an N-major B is
      // one box per stage, unless each box has a wgmma of its own
      // (b_per_box); a pair's multicast takes a K-major B in one box too
      // (the cluster split's two K-major boxes, bk = 128, computed right).
      const int64_t es = WgmmaElementBytes(g.dtype);
      const bool pair = p.cluster_m == 2;
      if (!pair && !(p.split_cluster && p.kg > 1)) return true;
      if (g.layout_b == Layout::kN) return p.b_per_box || p.bn * es == 128;
      return !pair || p.bk * es == 128;
    }
  }
  return false;
}

WgmmaRule FirstFailingWgmmaRule(const Problem& problem, const WgmmaParams& p,
                                const KernelLimits& limits) {
  for (WgmmaRule rule : kWgmmaRules)
    if (!PassesWgmmaRule(rule, problem, p, limits)) return rule;
  return WgmmaRule::kNone;
}

Status CanImplementWgmma(const Problem& problem, const WgmmaParams& p,
                         const KernelLimits& limits) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  const WgmmaRule rule = FirstFailingWgmmaRule(problem, p, limits);
  const std::string name = ToString(rule);
  const int64_t esize = WgmmaElementBytes(g.dtype);
  switch (rule) {
    case WgmmaRule::kNone:
      return OkStatus();
    case WgmmaRule::kComputeCapability:
      return FailedPrecondition(
          name + ": gemm.wgmma is sm_90a code (wgmma, setmaxnreg), which runs "
          "on compute capability 9.0 only; the device has " +
          N(limits.compute_capability / 10) + "." +
          N(limits.compute_capability % 10));
    case WgmmaRule::kPrecisionLayout:
      return FailedPrecondition(
          name + ": wgmma reads tf32 operands K-major only (no transpose), so "
          "tf32 needs layout A N and B T; got A " +
          std::string(ToString(g.layout_a)) + ", B " +
          std::string(ToString(g.layout_b)) +
          " (tf32 NN and TT: family gemm.wgmma_rs)");
    case WgmmaRule::kTileLayout:
      return FailedPrecondition(
          name + ": B in layout N is read N-major in panels of " +
          N(128 / esize) + " columns, so bn must be a multiple of " +
          N(128 / esize) + "; got bn " + N(p.bn));
    case WgmmaRule::kSwizzleRow:
      return FailedPrecondition(
          name + ": the 128-byte swizzle needs bk * element bytes a multiple "
          "of 128; got bk " + N(p.bk) + " * " + N(esize) + " = " +
          N(p.bk * esize));
    case WgmmaRule::kSharedMemory:
      return FailedPrecondition(
          name + ": 1024 + st*(bm+bn)*bk*bytes + wg*16384 (where bn*bytes "
          "is a multiple of 128) + 16*st = " +
          N(WgmmaSharedBytes(g.dtype, p)) + " B exceeds " +
          N(limits.max_dynamic_shared_bytes) + " B");
    case WgmmaRule::kRegisters:
      return FailedPrecondition(
          name + ": an estimated " + N(WgmmaRegisterEstimate(p)) +
          " registers per consumer thread (" + N(p.MTiles() * p.bn / 2) +
          " accumulators) exceed the budget of " + N(WgmmaRegisterBudget(p)) +
          " with wg = " + N(p.consumers));
    case WgmmaRule::kAlignment:
      return FailedPrecondition(
          name + ": TMA needs 16-byte row strides, so lda, ldb and ldc must "
          "be multiples of " + N(16 / esize) + " elements; got lda " +
          N(Lda(problem)) + ", ldb " + N(Ldb(problem)) + ", ldc " +
          N(LeadingDims(problem)[2]));
    case WgmmaRule::kGrid:
      return FailedPrecondition(
          name + ": cm*ceil(M/(bm*cm))*ceil(N/bn)*kg exceeds 2^31-1");
    case WgmmaRule::kSplitHasWork:
      return FailedPrecondition(
          name + ": kg * bk = " + N(p.kg * p.bk) + " exceeds K = " + N(g.k) +
          ", so a split would have no k tile");
    case WgmmaRule::kClusterBox:
      if (p.split_cluster && p.kg > 1)
        return FailedPrecondition(
            name +
            ": in a cluster split (gemm.wgmma_sc) an N-major B "
            "(layout_b N) must be one TMA box per stage: bn * element bytes "
            "must be 128 (bn = " +
            N(128 / esize) + "); got bn = " + N(p.bn) +
            " (the H100 computes the second box's columns wrong in a "
            "cluster launch)");
      return FailedPrecondition(
          name + ": a cluster pair (cm = 2) multicasts B only as one TMA box "
          "per stage: " +
          std::string(g.layout_b == Layout::kT ? "bk" : "bn") +
          " * element bytes must be 128; got " +
          N((g.layout_b == Layout::kT ? p.bk : p.bn) * esize));
  }
  return Internal("unknown rule");
}

int64_t WgmmaTailSlots(const Problem& problem, const WgmmaParams& p) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  const int64_t tiles = CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn);
  return std::min(tiles, kWgmmaTailSlots);
}

int64_t WgmmaTailCounterOffset(const Problem& problem, const WgmmaParams& p) {
  return WgmmaTailSlots(problem, p) * p.bm * p.bn * 4;
}

int64_t WgmmaWorkspaceBytes(const Problem& problem, const WgmmaParams& p) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  if (p.tail > 1)
    return WgmmaTailCounterOffset(problem, p) + WgmmaTailSlots(problem, p) * 4;
  // gemm.wgmma_sc: the partial sums stay in the cluster's shared memory.
  return p.kg > 1 && !p.split_cluster ? p.kg * g.m * g.n * 4 : 0;
}

TensorMapSpec WgmmaTensorMap(const Problem& problem, const WgmmaParams& p,
                             char operand) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  const Tiling t = TilingOf(problem, p);
  const TensorMapType type = wgmma_internal::MapTypeOf(g.dtype);
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (operand == 'c' || operand == 'C') {
    // C is M rows of N; one box is 128 bytes of a row by an m64 tile's rows.
    return TensorMapSpec::Matrix(type, u(g.n), u(g.m),
                                 u(LeadingDims(problem)[2] * t.esize),
                                 static_cast<uint32_t>(t.atom), 64);
  }
  const bool a = operand == 'a' || operand == 'A';
  const bool kmajor = a ? t.a_kmajor : t.b_kmajor;
  // The stored matrix: A N is M rows of K, A T is K rows of M; B N is K
  // rows of N, B T is N rows of K.
  const int64_t mn = a ? g.m : g.n;
  const int64_t ld = a ? Lda(problem) : Ldb(problem);
  // A cluster pair loads half of every B box each (Tiling::b_box_rows).
  return TensorMapSpec::Matrix(
      type, u(kmajor ? g.k : mn), u(kmajor ? mn : g.k), u(ld * t.esize),
      static_cast<uint32_t>(t.atom),
      static_cast<uint32_t>(a ? (kmajor ? t.bm : t.bk) : t.b_box_rows));
}

namespace {

// GenerateGemmWgmma's checks: the problem, the parameters, the
// architecture and the rules that make the generated text itself wrong.
Status CheckGemmWgmma(const Problem& problem, const WgmmaParams& p,
                      const std::string& arch) {
  if (OpOf(problem.ctx) != Op::kGemm)
    return InvalidArgument("context: gemm.wgmma computes gemm");
  BT_RETURN_IF_ERROR(Validate(problem.ctx));
  BT_RETURN_IF_ERROR(ValidateWgmmaParams(p));
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  if (g.dtype != DType::kBf16 && g.dtype != DType::kFp16 &&
      g.dtype != DType::kTf32) {
    return InvalidArgument("context.dtype: gemm.wgmma implements bf16, fp16 "
                           "and tf32, got " +
                           std::string(ToString(g.dtype)));
  }
  if (arch != "sm_90a") {
    return InvalidArgument("arch must be sm_90a (wgmma and setmaxnreg), got '" +
                           arch + "'");
  }
  // Rules that make the generated text itself wrong, whatever the device.
  for (WgmmaRule rule : {WgmmaRule::kPrecisionLayout, WgmmaRule::kTileLayout,
                         WgmmaRule::kSwizzleRow, WgmmaRule::kClusterBox}) {
    if (!PassesWgmmaRule(rule, problem, p, KernelLimits{})) {
      return CanImplementWgmma(problem, p, KernelLimits{});
    }
  }
  if (!PassesWgmmaRule(WgmmaRule::kSplitHasWork, problem, p, KernelLimits{}))
    return CanImplementWgmma(problem, p, KernelLimits{});
  // The tail split's units are whole-K tiles and its own splits, one
  // program's each (gemm.wgmma_ts's domain: kg = 1, cm = 1).
  if (p.tail > 1 && (p.kg > 1 || p.cluster_m > 1)) {
    return InvalidArgument("params: tl = " + N(p.tail) +
                           " (the tail split) needs kg = 1 and cm = 1, got "
                           "kg = " + N(p.kg) + ", cm = " + N(p.cluster_m));
  }
  // gemm.wgmma_sc's cluster is its kg splits of one tile.
  if (p.split_cluster && (p.kg < 2 || p.cluster_m != 1 || p.tail != 1)) {
    return InvalidArgument("params: gemm.wgmma_sc splits each tile over the "
                           "2 to 8 programs of a cluster (kg = 2..8) with "
                           "cm = 1 and tl = 1, got " + ToString(p));
  }
  return OkStatus();
}

}  // namespace

StatusOr<WgmmaKernel> GenerateGemmWgmma(const Problem& problem,
                                        const WgmmaParams& p,
                                        const std::string& arch) {
  BT_RETURN_IF_ERROR(CheckGemmWgmma(problem, p, arch));
  return wgmma_internal::AssembleGemmWgmma(problem, p, TilingOf(problem, p),
                                           arch);
}

namespace {

// Rows of `ld` elements of `es` bytes that TMA reads at full speed.
bool RowsOff128(int64_t ld, int64_t es) { return ld * es % 128 != 0; }
bool RowsOff16(int64_t ld, int64_t es) { return ld * es % 16 != 0; }

// The pack entry's grid: a grid-stride loop, so any size is correct; at
// most 16 programs per SM of an H100 (132 SMs), enough to keep its loads in
// flight. Its chunk counter is 32-bit (rule pack_size).
constexpr int64_t kPackThreads = 256;
constexpr int64_t kMaxPackPrograms = 132 * 16;
constexpr int64_t kMaxPackChunks = int64_t{1} << 31;

// Rows of an operand's pack: a transposed operand's are its stored columns.
int64_t PackedRowsA(const WgmmaPacking& pk) {
  return pk.a_transposed ? pk.cols_a : pk.rows_a;
}
int64_t PackedRowsB(const WgmmaPacking& pk) {
  return pk.b_transposed ? pk.cols_b : pk.rows_b;
}

// Every packed operand's 16-byte chunks, transposed ones too (rule
// pack_size bounds them all).
int64_t PackChunks(const WgmmaPacking& pk, int64_t es) {
  const int64_t v = 16 / es;
  int64_t chunks = 0;
  if (pk.a) chunks += PackedRowsA(pk) * pk.lda / v;
  if (pk.b) chunks += PackedRowsB(pk) * pk.ldb / v;
  return chunks;
}

// The pack entry's programs: enough for one chunk per thread of the
// operands copied row by row, and one program per 32 x 32 tile of those
// copied transposed (PackEntry), at most kMaxPackPrograms.
int64_t PackPrograms(const WgmmaPacking& pk, int64_t es) {
  const wgmma_internal::PackWork w = wgmma_internal::PackWorkOf(pk, es);
  return std::min(std::max(CeilDiv(w.chunks_a + w.chunks_b, kPackThreads),
                           w.tiles_a + w.tiles_b),
                  kMaxPackPrograms);
}

}  // namespace

bool NeedsWgmmaPacking(const Problem& problem) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  const int64_t es = WgmmaElementBytes(g.dtype);
  return RowsOff16(Lda(problem), es) || RowsOff16(Ldb(problem), es);
}

WgmmaPacking PlanWgmmaPacking(const Problem& problem, const WgmmaParams& p) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  const int64_t es = WgmmaElementBytes(g.dtype), atom = 128 / es;
  const bool tf32 = g.dtype == DType::kTf32;
  WgmmaPacking pk;
  // As stored: A N is M rows of K, A T K rows of M; B N K rows of N, B T
  // N rows of K.
  const bool a_t = IsT(g.layout_a), b_t = IsT(g.layout_b);
  pk.rows_a = a_t ? g.k : g.m;
  pk.cols_a = a_t ? g.m : g.k;
  pk.rows_b = b_t ? g.n : g.k;
  pk.cols_b = b_t ? g.k : g.n;
  pk.src_lda = Lda(problem);
  pk.src_ldb = Ldb(problem);
  pk.a_transposed = tf32 && a_t;
  pk.b_transposed = tf32 && !b_t;
  pk.a = pk.a_transposed || RowsOff128(Lda(problem), es);
  pk.b = pk.b_transposed || RowsOff128(Ldb(problem), es);
  // Packed row lengths: a transposed operand's are its stored rows (its
  // packed rows are K-major).
  pk.lda = !pk.a ? Lda(problem)
                 : RoundUp(pk.a_transposed ? pk.rows_a : pk.cols_a, atom);
  pk.ldb = !pk.b ? Ldb(problem)
                 : RoundUp(pk.b_transposed ? pk.rows_b : pk.cols_b, atom);
  // Split-K's partials stay at the workspace's start, where the reduce
  // entry finds them.
  int64_t at = RoundUp(WgmmaWorkspaceBytes(problem, p), 256);
  if (pk.a) {
    pk.a_offset = at;
    at += RoundUp(PackedRowsA(pk) * pk.lda * es, 256);
  }
  if (pk.b) {
    pk.b_offset = at;
    at += RoundUp(PackedRowsB(pk) * pk.ldb * es, 256);
  }
  pk.workspace_bytes = at;
  return pk;
}

Problem PackedWgmmaProblem(const Problem& problem, const WgmmaPacking& pk) {
  Problem q = problem;
  GemmContext& g = std::get<GemmContext>(q.ctx);
  if (pk.a) q.lda = pk.lda;
  if (pk.b) q.ldb = pk.ldb;
  if (pk.a_transposed) g.layout_a = Layout::kN;
  if (pk.b_transposed) g.layout_b = Layout::kT;
  q.ldc = RoundUp(LeadingDims(problem)[2], 16 / WgmmaElementBytes(g.dtype));
  return q;
}

bool PassesWgmmaPackSize(const Problem& problem, const WgmmaParams& p) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  return PackChunks(PlanWgmmaPacking(problem, p),
                    WgmmaElementBytes(g.dtype)) < kMaxPackChunks;
}

Status CanImplementWgmmaPacked(const Problem& problem, const WgmmaParams& p,
                               const KernelLimits& limits) {
  if (!NeedsWgmmaPacking(problem)) {
    const GemmContext& g = std::get<GemmContext>(problem.ctx);
    return FailedPrecondition(
        "unaligned_rows: gemm.wgmma_pk is offered where an operand's rows "
        "are not 16-byte aligned; lda " + N(Lda(problem)) + " and ldb " +
        N(Ldb(problem)) + " are multiples of " +
        N(16 / WgmmaElementBytes(g.dtype)) +
        " elements (gemm.wgmma reads them in place)");
  }
  const WgmmaPacking pk = PlanWgmmaPacking(problem, p);
  BT_RETURN_IF_ERROR(CanImplementWgmma(PackedWgmmaProblem(problem, pk), p,
                                       limits));
  if (!PassesWgmmaPackSize(problem, p))
    return FailedPrecondition("pack_size: the packed operands exceed 2^31 "
                              "16-byte chunks (the pack entry's counter)");
  return OkStatus();
}

StatusOr<WgmmaKernel> GenerateGemmWgmmaPacked(const Problem& problem,
                                              const WgmmaParams& p,
                                              const std::string& arch) {
  if (OpOf(problem.ctx) != Op::kGemm)
    return InvalidArgument("context: gemm.wgmma_pk computes gemm");
  BT_RETURN_IF_ERROR(Validate(problem.ctx));
  if (!NeedsWgmmaPacking(problem)) return CanImplementWgmmaPacked(problem, p);
  const WgmmaPacking pk = PlanWgmmaPacking(problem, p);
  if (!PassesWgmmaPackSize(problem, p)) return CanImplementWgmmaPacked(problem, p);
  const Problem packed = PackedWgmmaProblem(problem, pk);
  // gemm.wgmma's checks (precision, architecture, the rules that make the
  // text wrong) on the packed problem.
  BT_RETURN_IF_ERROR(CheckGemmWgmma(packed, p, arch));
  Tiling t = TilingOf(packed, p);
  t.packed = true;
  WgmmaKernel k = wgmma_internal::AssembleGemmWgmma(packed, p, t, arch);
  const int64_t es = k.element_bytes;
  k.ptx += wgmma_internal::PackEntry(t, pk);
  k.pack_entry = "blocktune_gemm_wgmma_pack";
  k.pack_grid = {static_cast<unsigned>(PackPrograms(pk, es)), 1, 1};
  k.pack_block = {static_cast<unsigned>(kPackThreads), 1, 1};
  k.workspace_bytes = pk.workspace_bytes;
  if (pk.a) {
    k.map_a_operand = 'W';
    k.map_a_offset = pk.a_offset;
  }
  if (pk.b) {
    k.map_b_operand = 'W';
    k.map_b_offset = pk.b_offset;
  }
  // Operands read in place keep TMA's 16-byte rows; C is free (its map
  // was encoded for ldc rounded up and is not used where ldc is not).
  k.align_elements = 1;
  return k;
}

namespace wgmma_internal {

WgmmaKernel AssembleGemmWgmma(const Problem& problem, const WgmmaParams& p,
                              const Tiling& t, const std::string& arch) {
  const GemmContext& g = std::get<GemmContext>(problem.ctx);
  WgmmaKernel k;
  k.ptx = MainEntry(t, arch);
  // One program per (tile, split); with clusters, whole pairs (a pair past
  // M computes nothing but still loads its half of B for its partner).
  k.grid = {static_cast<unsigned>(p.cluster_m *
                                  CeilDiv(g.m, p.bm * p.cluster_m) *
                                  CeilDiv(g.n, p.bn) * p.kg),
            1, 1};
  // gemm.wgmma_sc: a tile's kg splits are one cluster, and add their sums
  // there (no reduce entry).
  k.cluster = {static_cast<unsigned>(p.split_cluster ? p.kg : p.cluster_m),
               1, 1};
  k.workspace_bytes = WgmmaWorkspaceBytes(problem, p);
  if (p.tail > 1) k.counter_offset = WgmmaTailCounterOffset(problem, p);
  if (p.kg > 1 && !p.split_cluster) {
    mma_internal::AddReduceLaunch(
        mma_internal::MakeReduceLaunch(g.dtype, p.kg, g.m, g.n, arch), &k);
  }
  k.block = {static_cast<unsigned>(p.Threads()), 1, 1};
  k.shared_bytes = static_cast<unsigned>(WgmmaSharedBytes(g.dtype, p));
  k.map_a = WgmmaTensorMap(problem, p, 'a');
  k.map_b = WgmmaTensorMap(problem, p, 'b');
  k.map_c = WgmmaTensorMap(problem, p, 'c');
  k.align_elements = 16 / t.esize;
  k.element_bytes = static_cast<int>(t.esize);
  return k;
}

}  // namespace wgmma_internal

}  // namespace blocktune
