// The families `gemm.wgmma` (gemm_wgmma.h): Hopper GEMM with TMA and
// wgmma for bf16, fp16 and tf32; `gemm.wgmma_rs` (gemm_wgmma_rs.h): its
// kernel with A from registers, for tf32 NN and TT; and `conv.wgmma`
// (conv_wgmma.h): the implicit-GEMM convolution on the same kernel;
// `gemm.wgmma_pk`, on packed operands; `gemm.wgmma_ps` and `conv.wgmma_ps`,
// gemm.wgmma's and conv.wgmma's kernels launched as persistent grids;
// `gemm.wgmma_ts`, gemm.wgmma_ps with the tail split; `conv.wgmma_sk`,
// conv.wgmma with each tile's reduction split over programs, and
// `conv.wgmma_sc`, the same split added inside a cluster. Behind the family
// interface, registered in family.cc after gemm.mma and conv.mma.
#include <iterator>
#include <utility>

#include "kernels/conv_wgmma.h"
#include "kernels/family.h"
#include "kernels/family_params.h"
#include "kernels/gemm_ptx.h"
#include "kernels/gemm_wgmma.h"
#include "kernels/gemm_wgmma_rs.h"

namespace blocktune {

const KernelFamily& GemmWgmmaFamily();
const KernelFamily& GemmWgmmaRsFamily();
const KernelFamily& GemmWgmmaPackedFamily();
const KernelFamily& ConvWgmmaFamily();
const KernelFamily& GemmWgmmaPersistentFamily();
const KernelFamily& ConvWgmmaPersistentFamily();
const KernelFamily& ConvWgmmaSplitFamily();
const KernelFamily& ConvWgmmaClusterSplitFamily();
const KernelFamily& GemmWgmmaTailFamily();
const KernelFamily& GemmWgmmaClusterSplitFamily();

namespace {

// WgmmaParams' fields in WgmmaParamDomains() order.
constexpr int64_t WgmmaParams::*kMembers[] = {
    &WgmmaParams::bm,        &WgmmaParams::bn,      &WgmmaParams::bk,
    &WgmmaParams::stages,    &WgmmaParams::consumers,
    &WgmmaParams::group_m,   &WgmmaParams::kg,      &WgmmaParams::cluster_m,
    &WgmmaParams::tail};
static_assert(std::size(kMembers) == kGemmWgmmaTailParamCount);
// gemm.wgmma's, gemm.wgmma_rs's and gemm.wgmma_pk's: all but tail.
constexpr int kFieldCount = kGemmWgmmaParamCount;

// conv.wgmma's are the first kConvWgmmaParamCount (no kg, no cm).
WgmmaParams ToWgmma(const Params& p, int fields = kFieldCount) {
  WgmmaParams w;
  for (int i = 0; i < fields; ++i) w.*(kMembers[i]) = p[i];
  return w;
}

Params FromWgmma(const WgmmaParams& w, int fields = kFieldCount) {
  Params p;
  p.size = fields;
  for (int i = 0; i < fields; ++i) p[i] = w.*(kMembers[i]);
  return p;
}

// A default candidate: WgmmaParams' defaults but for the tile, stages,
// consumers, group_m and kg given, as the first `fields` parameters.
Params WgmmaCandidate(int fields, int64_t bm, int64_t bn, int64_t bk,
                      int64_t st, int64_t wg, int64_t gm = WgmmaParams().group_m,
                      int64_t kg = 1) {
  WgmmaParams w;
  w.bm = bm;
  w.bn = bn;
  w.bk = bk;
  w.stages = st;
  w.consumers = wg;
  w.group_m = gm;
  w.kg = kg;
  return FromWgmma(w, fields);
}

std::vector<ParamSpec> WgmmaSpecs(int fields) {
  std::vector<ParamSpec> specs;
  for (int i = 0; i < fields; ++i) {
    const WgmmaParamDomain& d = WgmmaParamDomains()[i];
    ParamSpec s;
    s.name = d.name;
    s.values = d.values;
    s.meaning = d.meaning;
    s.power_of_two = d.power_of_two;
    specs.push_back(std::move(s));
  }
  return specs;
}

// A family whose parameter domains narrow or widen gemm.wgmma's
// (gemm.wgmma_ts's kg, cm and tl; conv.wgmma_sk's kg): `params` has one
// value per spec, each in its spec's values.
Status CheckOwnDomains(const std::vector<ParamSpec>& specs,
                       const Params& params, std::string_view field,
                       const char* family) {
  BT_RETURN_IF_ERROR(
      CheckParamCount(params, static_cast<int>(specs.size()), field));
  for (size_t i = 0; i < specs.size(); ++i) {
    BT_RETURN_IF_ERROR(CheckOneOf(std::string(field) + "." + specs[i].name,
                                  specs[i].values, params[i],
                                  std::string(" in ") + family));
  }
  return OkStatus();
}

// What the two Hopper families share: the precisions, the first `fields`
// of gemm.wgmma's parameter domains, compute capability 9.0, and the
// parameters' validation.
class WgmmaFamilyBase : public KernelFamily {
 public:
  explicit WgmmaFamilyBase(int fields)
      : fields_(fields), specs_(WgmmaSpecs(fields)) {}

  const std::vector<DType>& precisions() const override {
    static const std::vector<DType> p = {DType::kBf16, DType::kFp16,
                                         DType::kTf32};
    return p;
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }
  const std::vector<std::string>& rules() const override { return rules_; }
  int min_compute_capability() const override { return 90; }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckParamCount(params, fields_, field));
    return RenameParamsField(ValidateWgmmaParams(Wgmma(params)), field);
  }

 protected:
  WgmmaParams Wgmma(const Params& params) const {
    WgmmaParams w = ToWgmma(params, fields_);
    w.split_cluster = split_cluster_;
    w.b_per_box = b_per_box_;
    return w;
  }
  int fields() const { return fields_; }
  std::vector<std::string> rules_;
  // conv.wgmma_sc: every kernel's splits add their sums in a cluster.
  bool split_cluster_ = false;
  // gemm.wgmma_sc (v3): a wgmma per TMA box of an N-major B (rule
  // cluster_box, gemm_wgmma.h).
  bool b_per_box_ = false;

 private:
  int fields_;
  std::vector<ParamSpec> specs_;
};

// The tiling of a gemm.wgmma kernel on an m x n product (gemm.wgmma_rs:
// the kernel's, M and N exchanged for NN): whole cluster pairs of tiles
// along m, times the K splits.
ConfigShape KernelShape(const WgmmaParams& w, int64_t m, int64_t n) {
  ConfigShape s;
  s.tile_m = w.bm;
  s.tile_n = w.bn;
  s.step_k = w.bk;
  s.split_k = w.kg;
  s.threads = w.Threads();
  s.programs = w.cluster_m *
               ((m + w.bm * w.cluster_m - 1) / (w.bm * w.cluster_m)) *
               ((n + w.bn - 1) / w.bn) * w.kg;
  return s;
}

// A gemm.wgmma or gemm.wgmma_rs kernel's launch description: shared
// memory, alignment, the entry's parameters (gemm_wgmma.h), the tensor maps
// and split-K's reduce entry. A swapped kernel (gemm.wgmma_rs on NN)
// computes C^T = B^T A^T: its M and N parameters take the problem's N and
// M, and its A and B maps are encoded for B's and A's addresses.
void FillGemmEntry(const WgmmaKernel& k, GeneratedKernel* out) {
  out->dynamic_shared_bytes = k.shared_bytes;
  out->align_a = k.align_elements;
  out->align_b = k.align_elements;
  out->align_c = k.align_elements;
  out->align_bytes = 16;
  // The tensor maps are 128-byte parameters (CUtensorMap by value); the
  // launcher encodes tensor_maps[i].map for the operand's address into
  // entry parameter tensor_maps[i].param_index.
  const bool s = k.swapped;
  out->entry_params = {
      {"tmap_a", "b8[128]", 0, 128,
       s ? "CUtensorMap of B (by value), read as the kernel's A = B^T"
         : "CUtensorMap of A (by value)"},
      {"tmap_b", "b8[128]", 128, 128,
       s ? "CUtensorMap of A (by value), read as the kernel's B = A^T"
         : "CUtensorMap of B (by value)"},
      {"C", "u64", 256, 8, "C device address"},
      {s ? "N" : "M", "u32", 264, 4,
       s ? "the kernel's rows: columns of C" : "rows of C"},
      {s ? "M" : "N", "u32", 268, 4,
       s ? "the kernel's columns: rows of C" : "columns of C"},
      {"K", "u32", 272, 4, "reduction length"},
      {"ldc", "u32", 276, 4, "leading dimension of C"},
      {"alpha", "f32", 280, 4, "scale of A*B"},
      {"beta", "f32", 284, 4, "scale of C"},
      {"W", "u64", 288, 8,
       "workspace (K_G partial sums, kg > 1; the tail split's slots and "
       "counters, tl > 1)"},
      {"tmap_c", "b8[128]", 320, 128, "CUtensorMap of C (by value)"}};
  out->cluster = k.cluster[0];
  out->counter_offset = k.counter_offset;
  out->reduce_entry = k.reduce_entry;
  out->reduce_dependent = k.reduce_dependent;
  out->reduce_grid = k.reduce_grid;
  out->reduce_block = k.reduce_block;
  if (!out->reduce_entry.empty()) out->reduce_params = ReduceParams();
  out->tensor_maps = {{0, s ? 'B' : 'A', k.map_a},
                      {1, s ? 'A' : 'B', k.map_b},
                      {10, 'C', k.map_c}};
  if (k.pack_entry.empty()) return;
  // gemm.wgmma_pk: the operands as stored, for the pack entry; the maps of
  // packed operands cover the workspace.
  out->entry_params.push_back({"A", "u64", 448, 8, "A device address"});
  out->entry_params.push_back({"B", "u64", 456, 8, "B device address"});
  out->entry_params.push_back({"lda", "u32", 464, 4, "leading dimension of A"});
  out->entry_params.push_back({"ldb", "u32", 468, 4, "leading dimension of B"});
  out->tensor_maps[0].operand = k.map_a_operand;
  out->tensor_maps[0].offset = k.map_a_offset;
  out->tensor_maps[1].operand = k.map_b_operand;
  out->tensor_maps[1].offset = k.map_b_offset;
  out->pack_entry = k.pack_entry;
  out->pack_grid = k.pack_grid;
  out->pack_block = k.pack_block;
}

class WgmmaFamily : public WgmmaFamilyBase {
 public:
  explicit WgmmaFamily(int fields = kFieldCount) : WgmmaFamilyBase(fields) {
    for (WgmmaRule r : kWgmmaRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kGemmWgmmaFamily; }
  int version() const override { return kGemmWgmmaGeneratorVersion; }
  Op op() const override { return Op::kGemm; }
  std::string_view summary() const override {
    return "Hopper GEMM (sm_90a): TMA ring with mbarriers, producer "
           "warpgroup, wgmma.mma_async consumers (bf16/fp16 m64nNk16, tf32 "
           "m64nNk8 K-major only, fp32 accumulate), 128-byte swizzle";
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    return PassesWgmmaRule(kWgmmaRules[rule], problem, Wgmma(params),
                           limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return CanImplementGemm(problem, Wgmma(params), limits);
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const WgmmaParams w = Wgmma(params);
    const GemmShape g = ImplicitGemm(problem.ctx);
    ConfigShape s = KernelShape(w, g.m, g.n);
    s.workspace_bytes = WorkspaceBytes(problem, w);
    return s;
  }

  std::vector<Params> DefaultCandidates() const override {
    auto make = [this](int64_t bm, int64_t bn, int64_t bk, int64_t st,
                       int64_t wg) {
      return WgmmaCandidate(fields(), bm, bn, bk, st, wg);
    };
    // 128x256 over two consumers is the shape Hopper GEMMs usually peak
    // at; the smaller ones fit tf32 (bk 32) and small problems.
    return {make(128, 256, 64, 4, 2), make(128, 128, 64, 4, 1),
            make(128, 128, 32, 4, 1), make(64, 64, 64, 4, 1),
            make(64, 64, 32, 4, 1)};
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    // Callers name the generic architecture ("sm_90"); this family's code
    // is for the arch-specific target.
    const std::string target = arch == "sm_90" ? "sm_90a" : arch;
    BT_ASSIGN_OR_RETURN(WgmmaKernel k,
                        GenerateGemm(problem, Wgmma(params), target));
    GeneratedKernel out = ToGenerated(*this, k);
    out.target = target;
    FillGemmEntry(k, &out);
    return out;
  }

 protected:
  // What gemm.wgmma_pk changes besides its name and rules: the checks
  // after the parameters', the workspace and the generator.
  virtual Status CanImplementGemm(const Problem& problem, const WgmmaParams& w,
                                  const KernelLimits& limits) const {
    return CanImplementWgmma(problem, w, limits);
  }
  virtual int64_t WorkspaceBytes(const Problem& problem,
                                 const WgmmaParams& w) const {
    return WgmmaWorkspaceBytes(problem, w);
  }
  virtual StatusOr<WgmmaKernel> GenerateGemm(const Problem& problem,
                                             const WgmmaParams& w,
                                             const std::string& target) const {
    return GenerateGemmWgmma(problem, w, target);
  }
};

// gemm.wgmma on packed operands (gemm_wgmma.h WgmmaPacking): gemm.wgmma's
// parameters and rules, the latter on the packed problem, after one of its
// own (some operand's rows are not 16-byte aligned, which gemm.wgmma cannot
// read: where they all are, the H100 evaluation found the pack never
// paid; gemm_wgmma.h), and a last one on the pack's size.
class WgmmaPackedFamily : public WgmmaFamily {
 public:
  WgmmaPackedFamily() {
    rules_.insert(rules_.begin() + 1, "unaligned_rows");
    rules_.push_back("pack_size");
  }

  std::string_view name() const override { return kGemmWgmmaPackedFamily; }
  int version() const override { return kGemmWgmmaPackedGeneratorVersion; }
  std::string_view summary() const override {
    return "gemm.wgmma on packed operands, where A's or B's rows are not "
           "16-byte aligned: a first kernel copies A or B whose rows are not "
           "128-byte aligned (tf32: or not K-major, transposed) into the "
           "workspace with padded rows, which TMA reads at full speed; any "
           "ldc";
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    const WgmmaParams w = Wgmma(params);
    if (rule == 0)
      return PassesWgmmaRule(kWgmmaRules[0], problem, w, limits);
    if (rule == 1) return NeedsWgmmaPacking(problem);
    if (rule == static_cast<int>(rules_.size()) - 1)
      return PassesWgmmaPackSize(problem, w);
    return PassesWgmmaRule(kWgmmaRules[rule - 1],
                           PackedWgmmaProblem(problem, PlanWgmmaPacking(problem, w)),
                           w, limits);
  }

 protected:
  Status CanImplementGemm(const Problem& problem, const WgmmaParams& w,
                          const KernelLimits& limits) const override {
    return CanImplementWgmmaPacked(problem, w, limits);
  }
  int64_t WorkspaceBytes(const Problem& problem,
                         const WgmmaParams& w) const override {
    return NeedsWgmmaPacking(problem) ? PlanWgmmaPacking(problem, w).workspace_bytes
                                      : WgmmaWorkspaceBytes(problem, w);
  }
  StatusOr<WgmmaKernel> GenerateGemm(const Problem& problem,
                                     const WgmmaParams& w,
                                     const std::string& target) const override {
    return GenerateGemmWgmmaPacked(problem, w, target);
  }
};

// A persistent grid (GeneratedKernel::persistent): as many programs as the
// device holds at once walk the work units grid-stride (gemm_wgmma.h), so
// each program's producer loads its next tile's first stages while its
// consumers store the last tile, and no program pays a launch and a
// pipeline fill per tile. Where there are fewer work units than resident
// programs, the launch is the base family's.
constexpr char kPersistentSummary[] =
    "'s kernel (the same PTX and parameters) launched as a persistent grid: "
    "SMs x resident programs walk the tiles grid-stride, so the ring runs "
    "on across tiles and a tile's epilogue overlaps the next tile's loads";

// Their own rule, after the base family's: more work units than the
// device has SMs (where it is known). With fewer, every program takes one
// unit and the launch is the base family's: the same kernel measured twice
// under two names, whose second model (fewer samples) answered small
// problems too optimistically in the first H100 evaluation (bf16 model-only
// geomean 1.04x -> 0.95x; bench/results/h100/wgmma_ps/README.txt).
constexpr char kSeveralWaves[] = "several_waves";

bool PassesSeveralWaves(const ConfigShape& s, const KernelLimits& limits) {
  return limits.sm_count <= 0 || s.programs > limits.sm_count;
}

Status CheckSeveralWaves(std::string_view family, std::string_view base,
                         const ConfigShape& s, const KernelLimits& limits) {
  if (PassesSeveralWaves(s, limits)) return OkStatus();
  return FailedPrecondition(
      "rule several_waves: " + std::string(family) + " is offered only where "
      "a configuration has more work units than the device's " +
      std::to_string(limits.sm_count) + " SMs (this one has " +
      std::to_string(s.programs) + "); with fewer, " + std::string(base) +
      " launches the same kernel the same way");
}

// gemm.wgmma_rs (gemm_wgmma_rs.h): gemm.wgmma's kernel with A from
// registers, for tf32 NN (computed as C^T = B^T A^T) and TT.
class WgmmaRsFamily : public WgmmaFamilyBase {
 public:
  WgmmaRsFamily() : WgmmaFamilyBase(kFieldCount) {
    for (WgmmaRsRule r : kWgmmaRsRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kGemmWgmmaRsFamily; }
  int version() const override { return kGemmWgmmaRsGeneratorVersion; }
  Op op() const override { return Op::kGemm; }
  const std::vector<DType>& precisions() const override {
    static const std::vector<DType> p = {DType::kTf32};
    return p;
  }
  std::string_view summary() const override {
    return "Hopper tf32 GEMM for layouts NN and TT (sm_90a): gemm.wgmma's "
           "TMA ring, A read from shared memory into registers and rounded "
           "to tf32 (wgmma has no tf32 transpose), B by descriptor; NN runs "
           "as C^T = B^T A^T, so there the parameters are the kernel's: bm "
           "tiles C's columns (N), bn its rows (M)";
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    return PassesWgmmaRsRule(kWgmmaRsRules[rule], problem, ToWgmma(params),
                             limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return CanImplementWgmmaRs(problem, ToWgmma(params), limits);
  }

  // In the problem's frame: for NN the kernel's bm tiles N and bn tiles M.
  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const WgmmaParams w = ToWgmma(params);
    const GemmContext& g = std::get<GemmContext>(problem.ctx);
    const bool swap = WgmmaRsSwaps(g);
    ConfigShape s = KernelShape(w, swap ? g.n : g.m, swap ? g.m : g.n);
    if (swap) std::swap(s.tile_m, s.tile_n);
    s.workspace_bytes = WgmmaWorkspaceBytes(WgmmaRsKernelProblem(problem), w);
    return s;
  }

  std::vector<Params> DefaultCandidates() const override {
    auto make = [](int64_t bm, int64_t bn, int64_t st, int64_t wg) {
      WgmmaParams w;
      w.bm = bm;
      w.bn = bn;
      w.bk = 32;
      w.stages = st;
      w.consumers = wg;
      return FromWgmma(w);
    };
    return {make(128, 256, 4, 2), make(128, 128, 4, 1), make(64, 128, 4, 1),
            make(64, 64, 4, 1)};
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    const std::string target = arch == "sm_90" ? "sm_90a" : arch;
    BT_ASSIGN_OR_RETURN(WgmmaKernel k,
                        GenerateGemmWgmmaRs(problem, ToWgmma(params), target));
    GeneratedKernel out = ToGenerated(*this, k);
    out.target = target;
    FillGemmEntry(k, &out);
    return out;
  }
};

// conv.wgmma: gemm.wgmma's kernel with im2col copies (conv_wgmma.h).
class ConvWgmmaKernelFamily : public WgmmaFamilyBase {
 public:
  explicit ConvWgmmaKernelFamily(int fields = kConvWgmmaParamCount)
      : WgmmaFamilyBase(fields) {
    for (ConvWgmmaRule r : kConvWgmmaRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kConvWgmmaFamily; }
  int version() const override { return kConvWgmmaGeneratorVersion; }
  Op op() const override { return Op::kConv; }
  std::string_view summary() const override {
    return "Hopper implicit-GEMM convolution (sm_90a, NHWC, KRSC): "
           "gemm.wgmma's TMA ring and wgmma consumers, the input read by "
           "im2col TMA copies (pad, stride, dilation in the copy engine)";
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    return PassesConvWgmmaRule(kConvWgmmaRules[rule],
                               std::get<ConvContext>(problem.ctx),
                               Wgmma(params), limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return CanImplementConvWgmma(std::get<ConvContext>(problem.ctx),
                                 Wgmma(params),
                                 limits);
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const WgmmaParams w = Wgmma(params);
    const GemmShape g = ImplicitGemm(problem.ctx);
    ConfigShape s;
    s.tile_m = w.bm;
    s.tile_n = w.bn;
    s.step_k = w.bk;
    s.split_k = w.kg;  // 1 but for conv.wgmma_sk
    s.threads = w.Threads();
    s.programs =
        ((g.m + w.bm - 1) / w.bm) * ((g.n + w.bn - 1) / w.bn) * w.kg;
    s.workspace_bytes =
        ConvWgmmaWorkspaceBytes(std::get<ConvContext>(problem.ctx), w);
    return s;
  }

  std::vector<Params> DefaultCandidates() const override {
    auto make = [](int64_t bm, int64_t bn, int64_t bk, int64_t st,
                   int64_t wg) {
      return WgmmaCandidate(kConvWgmmaParamCount, bm, bn, bk, st, wg);
    };
    return {make(128, 256, 64, 4, 2), make(128, 128, 64, 4, 1),
            make(128, 64, 64, 4, 1), make(64, 64, 64, 4, 1),
            make(128, 128, 32, 4, 1), make(64, 64, 32, 4, 1)};
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    const std::string target = arch == "sm_90" ? "sm_90a" : arch;
    BT_ASSIGN_OR_RETURN(
        ConvWgmmaKernel k,
        GenerateConvWgmma(std::get<ConvContext>(problem.ctx),
                          Wgmma(params), target));
    GeneratedKernel out = ToGenerated(*this, k);
    out.dynamic_shared_bytes = k.shared_bytes;
    // C and K multiples of 16 bytes (rule alignment); the input, filter and
    // output addresses 16-byte aligned.
    out.align_bytes = 16;
    out.target = target;
    out.entry_params = ConvWgmmaEntryParams(!k.reduce_entry.empty());
    out.tensor_maps = {{0, 'A', k.map_a}, {1, 'B', k.map_b}, {2, 'C', k.map_c}};
    out.cluster = k.cluster;  // conv.wgmma_sc: kg
    // conv.wgmma_sk: the partial sums and the reduce entry that adds them.
    out.workspace_bytes = k.workspace_bytes;
    out.reduce_entry = k.reduce_entry;
    out.reduce_dependent = k.reduce_dependent;
    out.reduce_grid = k.reduce_grid;
    out.reduce_block = k.reduce_block;
    if (!out.reduce_entry.empty()) out.reduce_params = ReduceParams();
    return out;
  }
};

// conv.wgmma_sk (conv_wgmma.h): conv.wgmma's kernel with each tile's
// reduction split over kg = 2..32 programs, offered where the layer's
// tiles leave SMs idle. Its own rules after conv.wgmma's: every split has
// a k tile (split_has_work), the layer has fewer tiles than the device
// has SMs and its tiles x kg units make at most 4 waves (few_tiles; where
// the SM count is unknown it passes), and a tile holds no more pixel rows
// than the layer's pixels rounded up to 64 (tile_fits_layer: on the H200,
// 8x8x256 bf16, the best of 37 sampled bm = 64 configurations measured
// 7.76 us against 8.30 for bm = 128 (91 samples) and 9.79 for bm = 256;
// the larger tiles hold rows of no pixel and took 78% of the samples).
// The split families' rule few_tiles (conv.wgmma_sk, conv.wgmma_sc,
// gemm.wgmma_sc): fewer tiles than the device has SMs, and at most
// kMaxSplitWaves waves of tiles x kg units (where the SM count is unknown
// it passes). Splits past a few waves add partial sums without filling the
// SMs any better. The tiles are the configuration's programs over its
// splits.
constexpr int64_t kMaxSplitWaves = 4;
bool FewTiles(const ConfigShape& s, const KernelLimits& limits) {
  return limits.sm_count <= 0 ||
         (s.programs / s.split_k < limits.sm_count &&
          s.programs <= kMaxSplitWaves * limits.sm_count);
}
// few_tiles' refusal: what the configuration has, and who takes it instead.
Status FewTilesRefusal(std::string_view family, std::string_view problem,
                       const ConfigShape& shape, const KernelLimits& limits,
                       std::string_view others) {
  return FailedPrecondition(
      "rule few_tiles: " + std::string(family) + " is offered only where the " +
      std::string(problem) + " has fewer tiles than the "
      "device's " + std::to_string(limits.sm_count) + " SMs and the splits "
      "make at most " + std::to_string(kMaxSplitWaves) + " waves of them "
      "(this configuration has " + std::to_string(shape.programs / shape.split_k) +
      " tiles, " + std::to_string(shape.programs) + " units); with more "
      "tiles, " + std::string(others) + " fill the SMs without a split");
}

class ConvWgmmaSplitKernelFamily : public ConvWgmmaKernelFamily {
 public:
  ConvWgmmaSplitKernelFamily()
      : ConvWgmmaSplitKernelFamily(kConvWgmmaSplitFamily,
                                   kConvWgmmaSplitGeneratorVersion,
                                   {2, 3, 4, 6, 8, 12, 16, 24, 32}) {}

  std::string_view name() const override { return name_; }
  int version() const override { return version_; }
  std::string_view summary() const override {
    return "conv.wgmma with each tile's reduction (C*R*S) split over kg "
           "programs: fp32 partial sums in the workspace, added in a fixed "
           "order by a reduce entry (a dependent launch); for layers whose "
           "tiles leave SMs idle (batch-1 inference)";
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckOwnDomains(specs_, params, field, name_));
    // The rest as gemm.wgmma validates it (its kg domain ends at 8).
    WgmmaParams w = Wgmma(params);
    w.kg = 1;
    return RenameParamsField(ValidateWgmmaParams(w), field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    if (rule < base_rules_)
      return ConvWgmmaKernelFamily::Passes(rule, problem, params, limits);
    const WgmmaParams w = Wgmma(params);
    switch (rule - base_rules_) {
      case kSplitHasWork:
        return w.kg <= ConvWgmmaKTiles(std::get<ConvContext>(problem.ctx), w);
      case kFewTiles:
        return FewTiles(Shape(problem, params), limits);
      default:  // kTileFitsLayer
        return w.bm <= PixelRows(problem);
    }
  }

  // conv.wgmma's checks, then each of this family's rules as Passes decides
  // it, with the numbers behind a refusal.
  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(
        ConvWgmmaKernelFamily::CanImplement(problem, params, limits));
    const WgmmaParams w = Wgmma(params);
    if (!Passes(base_rules_ + kSplitHasWork, problem, params, limits)) {
      return FailedPrecondition(
          "rule split_has_work: kg = " + std::to_string(w.kg) +
          " splits of a reduction of " +
          std::to_string(
              ConvWgmmaKTiles(std::get<ConvContext>(problem.ctx), w)) +
          " k tiles (R*S taps of ceil(C / bk) channel steps) leave a split "
          "without work");
    }
    if (!Passes(base_rules_ + kFewTiles, problem, params, limits)) {
      return FewTilesRefusal(name_, "layer", Shape(problem, params), limits,
                             "conv.wgmma and conv.wgmma_ps");
    }
    if (!Passes(base_rules_ + kTileFitsLayer, problem, params, limits)) {
      return FailedPrecondition(
          "rule tile_fits_layer: bm = " + std::to_string(w.bm) +
          " pixel rows per tile, but the layer has " +
          std::to_string(ImplicitGemm(problem.ctx).m) +
          " output pixels (N*P*Q), so bm may be at most " +
          std::to_string(PixelRows(problem)) +
          " (that rounded up to 64); a larger tile holds rows of no pixel");
    }
    return OkStatus();
  }

  // conv.wgmma's, split 4 ways.
  std::vector<Params> DefaultCandidates() const override {
    std::vector<Params> out = ConvWgmmaKernelFamily::DefaultCandidates();
    for (Params& p : out) {
      p.size = kConvWgmmaSplitParamCount;
      p[kConvWgmmaSplitParamCount - 1] = 4;
    }
    return out;
  }

 protected:
  // conv.wgmma_sc's: its name, version and kg domain.
  ConvWgmmaSplitKernelFamily(const char* name, int version,
                             std::vector<int64_t> kg_values)
      : ConvWgmmaKernelFamily(kConvWgmmaSplitParamCount),
        specs_(ConvWgmmaKernelFamily::params()),
        name_(name),
        version_(version) {
    base_rules_ = static_cast<int>(rules_.size());
    rules_.push_back("split_has_work");
    rules_.push_back("few_tiles");
    rules_.push_back("tile_fits_layer");
    for (ParamSpec& spec : specs_)
      if (spec.name == "kg") spec.values = std::move(kg_values);
  }

 private:
  // This family's rules, in rules_ after conv.wgmma's (from base_rules_).
  enum OwnRule { kSplitHasWork, kFewTiles, kTileFitsLayer };
  // The layer's output pixels (the GEMM's M) rounded up to whole m64
  // tiles: the largest bm whose tile holds some pixel in each 64 rows.
  static int64_t PixelRows(const Problem& problem) {
    return (ImplicitGemm(problem.ctx).m + 63) / 64 * 64;
  }

  std::vector<ParamSpec> specs_;
  int base_rules_ = 0;
  const char* name_;
  int version_;
};

// conv.wgmma_sc (conv_wgmma.h): conv.wgmma_sk's split with the kg = 2..8
// programs of a tile in one cluster, adding their sums in the first one's
// shared memory (one launch, no workspace). conv.wgmma_sk's rules; the
// slots count in rule shared_memory.
class ConvWgmmaClusterSplitKernelFamily : public ConvWgmmaSplitKernelFamily {
 public:
  ConvWgmmaClusterSplitKernelFamily()
      : ConvWgmmaSplitKernelFamily(kConvWgmmaClusterSplitFamily,
                                   kConvWgmmaClusterSplitGeneratorVersion,
                                   {2, 3, 4, 5, 6, 7, 8}) {
    split_cluster_ = true;
  }

  std::string_view summary() const override {
    return "conv.wgmma_sk's split with the kg programs of a tile in one "
           "thread-block cluster: the partial sums added in the first "
           "program's shared memory (distributed shared memory, an "
           "mbarrier), one launch, no workspace";
  }

  // Tiles whose kg - 1 slots of partial sums fit beside the ring (the
  // split's defaults, conv.wgmma's large tiles, do not).
  std::vector<Params> DefaultCandidates() const override {
    auto make = [](int64_t bm, int64_t bn, int64_t bk, int64_t st,
                   int64_t wg, int64_t kg) {
      return WgmmaCandidate(kConvWgmmaSplitParamCount, bm, bn, bk, st, wg,
                            /*gm=*/1, kg);
    };
    return {make(64, 64, 64, 4, 1, 4), make(64, 32, 128, 4, 1, 8),
            make(64, 16, 128, 5, 1, 8), make(128, 64, 64, 4, 1, 2),
            make(128, 128, 64, 3, 2, 2)};
  }
};

// gemm.wgmma_ps and conv.wgmma_ps: a base family (gemm.wgmma's or
// conv.wgmma's class) under its own name and version, with rule
// several_waves after the base's rules and the persistent launch.
template <typename Base>
class PersistentFamily : public Base {
 public:
  template <typename... BaseArgs>
  PersistentFamily(const char* name, int version, const char* base_name,
                   BaseArgs... base_args)
      : Base(base_args...),
        name_(name),
        base_name_(base_name),
        version_(version),
        summary_(std::string(base_name) + kPersistentSummary) {
    this->rules_.push_back(kSeveralWaves);
  }

  std::string_view name() const override { return name_; }
  int version() const override { return version_; }
  std::string_view summary() const override { return summary_; }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    if (rule == static_cast<int>(this->rules_.size()) - 1)
      return PassesSeveralWaves(this->Shape(problem, params), limits);
    return Base::Passes(rule, problem, params, limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(Base::CanImplement(problem, params, limits));
    return CheckSeveralWaves(name_, base_name_, this->Shape(problem, params),
                             limits);
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_ASSIGN_OR_RETURN(GeneratedKernel out,
                        Base::Generate(problem, params, arch));
    out.persistent = true;
    return out;
  }

 private:
  const char* name_;
  const char* base_name_;
  int version_;
  std::string summary_;
};

// gemm.wgmma_ts: gemm.wgmma_ps with the tail split (gemm_wgmma.h):
// gemm.wgmma's parameters and tl, with kg = 1 (the split units are the
// tail's own K splits), cm = 1 (a cluster pair's programs take the same
// units) and tl = 2..4 (tl = 1 is gemm.wgmma_ps's kernel, byte for byte).
class GemmTailSplitFamily : public PersistentFamily<WgmmaFamily> {
 public:
  GemmTailSplitFamily()
      : PersistentFamily(kGemmWgmmaTailFamily, kGemmWgmmaTailGeneratorVersion,
                         kGemmWgmmaFamily, kGemmWgmmaTailParamCount),
        specs_(WgmmaFamily::params()) {
    for (ParamSpec& spec : specs_) {
      if (spec.name == "kg" || spec.name == "cm") spec.values = {1};
      if (spec.name == "tl") spec.values = {2, 3, 4};
    }
  }

  std::string_view summary() const override {
    return "gemm.wgmma_ps with the tail split: the persistent grid's last, "
           "partly empty round splits each of its tiles over K into up to "
           "tl units (fp32 partial sums in the workspace, added by the "
           "tile's first split in a fixed order), so the idle programs of "
           "that round take a share of it";
  }

  const std::vector<ParamSpec>& params() const override { return specs_; }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(
        CheckOwnDomains(specs_, params, field, kGemmWgmmaTailFamily));
    return PersistentFamily::ValidateParams(params, field);
  }

  // gemm.wgmma's, split up to 4 ways.
  std::vector<Params> DefaultCandidates() const override {
    std::vector<Params> out = PersistentFamily::DefaultCandidates();
    for (Params& p : out) p[p.size - 1] = 4;
    return out;
  }

 private:
  std::vector<ParamSpec> specs_;
};

// gemm.wgmma_sc (gemm_wgmma.h): gemm.wgmma with each tile's K split over
// the kg = 2..8 programs of one cluster, which add their sums in the first
// program's shared memory (conv.wgmma_sc's split on a GEMM). gemm.wgmma's
// rules (the slots count in shared_memory; split_has_work: every split has
// a k tile), then few_tiles; kg from gemm.wgmma's domain past 1, cm = 1
// (the cluster is the splits'). An N-major B of several TMA boxes per
// stage gets a wgmma per box (v3), which rule cluster_box takes.
class GemmClusterSplitFamily : public WgmmaFamily {
 public:
  GemmClusterSplitFamily() : specs_(WgmmaFamily::params()) {
    split_cluster_ = true;
    b_per_box_ = true;
    base_rules_ = static_cast<int>(rules_.size());
    rules_.push_back("few_tiles");
    for (ParamSpec& spec : specs_) {
      if (spec.name == "kg") {
        spec.values = {2, 3, 4, 6, 8};
        spec.meaning =
            "programs of a cluster splitting each tile's K (K_G), adding "
            "their fp32 sums in the first one's shared memory";
      }
      if (spec.name == "cm") spec.values = {1};
    }
  }

  std::string_view name() const override {
    return kGemmWgmmaClusterSplitFamily;
  }
  int version() const override {
    return kGemmWgmmaClusterSplitGeneratorVersion;
  }
  std::string_view summary() const override {
    return "gemm.wgmma with each tile's K split over the kg programs of one "
           "thread-block cluster: the partial sums added in the first "
           "program's shared memory (distributed shared memory, an "
           "mbarrier), one launch, no workspace; for products of fewer "
           "tiles than SMs";
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckOwnDomains(specs_, params, field,
                                       kGemmWgmmaClusterSplitFamily));
    return WgmmaFamily::ValidateParams(params, field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    if (rule < base_rules_)
      return WgmmaFamily::Passes(rule, problem, params, limits);
    return FewTiles(Shape(problem, params), limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(WgmmaFamily::CanImplement(problem, params, limits));
    if (!Passes(base_rules_, problem, params, limits)) {
      return FewTilesRefusal(kGemmWgmmaClusterSplitFamily, "product",
                             Shape(problem, params), limits,
                             "gemm.wgmma and gemm.wgmma_ps");
    }
    return OkStatus();
  }

  // Tiles whose kg - 1 slots of partial sums fit beside the ring; bk 32
  // for tf32 (a 128-byte row of K).
  std::vector<Params> DefaultCandidates() const override {
    auto make = [this](int64_t bm, int64_t bn, int64_t bk, int64_t st,
                       int64_t wg, int64_t kg) {
      return WgmmaCandidate(fields(), bm, bn, bk, st, wg, /*gm=*/8, kg);
    };
    return {make(128, 128, 64, 4, 1, 2), make(128, 128, 32, 4, 1, 2),
            make(128, 64, 64, 4, 1, 4),  make(64, 64, 64, 4, 1, 4),
            make(64, 64, 32, 4, 1, 4)};
  }

 private:
  std::vector<ParamSpec> specs_;
  int base_rules_ = 0;
};

}  // namespace

const KernelFamily& GemmWgmmaClusterSplitFamily() {
  static const GemmClusterSplitFamily family;
  return family;
}

const KernelFamily& GemmWgmmaFamily() {
  static const WgmmaFamily family;
  return family;
}

const KernelFamily& GemmWgmmaRsFamily() {
  static const WgmmaRsFamily family;
  return family;
}

const KernelFamily& GemmWgmmaPackedFamily() {
  static const WgmmaPackedFamily family;
  return family;
}

const KernelFamily& ConvWgmmaFamily() {
  static const ConvWgmmaKernelFamily family;
  return family;
}

const KernelFamily& GemmWgmmaPersistentFamily() {
  static const PersistentFamily<WgmmaFamily> family(
      kGemmWgmmaPersistentFamily, kGemmWgmmaPersistentGeneratorVersion,
      kGemmWgmmaFamily);
  return family;
}

const KernelFamily& GemmWgmmaTailFamily() {
  static const GemmTailSplitFamily family;
  return family;
}

const KernelFamily& ConvWgmmaSplitFamily() {
  static const ConvWgmmaSplitKernelFamily family;
  return family;
}

const KernelFamily& ConvWgmmaClusterSplitFamily() {
  static const ConvWgmmaClusterSplitKernelFamily family;
  return family;
}

const KernelFamily& ConvWgmmaPersistentFamily() {
  static const PersistentFamily<ConvWgmmaKernelFamily> family(
      kConvWgmmaPersistentFamily, kConvWgmmaPersistentGeneratorVersion,
      kConvWgmmaFamily);
  return family;
}

}  // namespace blocktune
