// The families `gemm.mma` (gemm_mma.h): tensor-core GEMM with mma.sync for
// bf16, fp16 and tf32, and `conv.mma` (conv_mma.h): the implicit-GEMM
// convolution on the same pipeline, behind the family interface. They
// share their parameters (conv.mma without sk) and precisions.
#include <algorithm>
#include <iterator>

#include "kernels/conv_mma.h"
#include "kernels/family.h"
#include "kernels/family_params.h"
#include "kernels/gemm_mma.h"
#include "kernels/gemm_ptx.h"
#include "kernels/validate.h"

namespace blocktune {
namespace {

// MmaParams' fields in MmaParamDomains() order (family_test checks that
// the two agree).
struct Field {
  const char* name;
  int64_t MmaParams::*member;
  const char* meaning;
  bool power_of_two;
};
constexpr Field kFields[] = {
    {"bm", &MmaParams::bm, "rows of C per program (M_L)", true},
    {"bn", &MmaParams::bn, "columns of C per program (N_L)", true},
    {"bk", &MmaParams::bk, "K per pipeline stage (U)", true},
    {"wm", &MmaParams::warps_m, "warps along M", true},
    {"wn", &MmaParams::warps_n, "warps along N", true},
    {"st", &MmaParams::stages, "cp.async pipeline stages", false},
    {"kg", &MmaParams::kg, "programs splitting K (K_G)", true},
    {"gm", &MmaParams::group_m, "rows of tiles per raster group (L2 reuse)",
     false},
    {"sk", &MmaParams::split_reduce,
     "K_G sum: 0 a second kernel (a dependent launch on sm_90), 1 a tree "
     "inside the kernel (the last of each group of 8 adds the group)",
     false},
};
constexpr int kFieldCount = static_cast<int>(std::size(kFields));
// conv.mma's: all but sk (the last), which it does not have.
constexpr int kConvFieldCount = kFieldCount - 1;

// The first `count` fields; the others keep MmaParams' defaults.
MmaParams ToMma(const Params& p, int count = kFieldCount) {
  MmaParams m;
  for (int i = 0; i < count; ++i) m.*(kFields[i].member) = p[i];
  return m;
}

Params FromMma(const MmaParams& m, int count = kFieldCount) {
  Params p;
  p.size = count;
  for (int i = 0; i < count; ++i) p[i] = m.*(kFields[i].member);
  return p;
}

// The fields' specs with MmaParamDomains' values.
std::vector<ParamSpec> MmaSpecs(int count) {
  const std::vector<MmaParamDomain> domains = MmaParamDomains();
  std::vector<ParamSpec> specs;
  for (int i = 0; i < count; ++i) {
    ParamSpec s;
    s.name = kFields[i].name;
    s.meaning = kFields[i].meaning;
    s.power_of_two = kFields[i].power_of_two;
    s.log_feature = s.name != "sk";
    if (i < static_cast<int>(domains.size())) s.values = domains[i].values;
    specs.push_back(std::move(s));
  }
  return specs;
}

// What generic code needs of a configuration of either family: tiles of
// the (implicit) GEMM g, K_G programs each, and its workspace.
ConfigShape MmaShape(const MmaParams& m, const GemmShape& g,
                     int64_t workspace_bytes) {
  ConfigShape s;
  s.tile_m = m.bm;
  s.tile_n = m.bn;
  s.step_k = m.bk;
  s.split_k = m.kg;
  s.threads = m.Threads();
  s.programs = ((g.m + m.bm - 1) / m.bm) * ((g.n + m.bn - 1) / m.bn) * m.kg;
  s.workspace_bytes = workspace_bytes;
  return s;
}

// A default candidate: the tile, warps and stages; the rest MmaParams'.
Params DefaultMma(int count, int64_t bm, int64_t bn, int64_t bk, int64_t wm,
                  int64_t wn, int64_t st) {
  MmaParams m;
  m.bm = bm;
  m.bn = bn;
  m.bk = bk;
  m.warps_m = wm;
  m.warps_n = wn;
  m.stages = st;
  return FromMma(m, count);
}

// The precisions both families implement.
const std::vector<DType>& MmaPrecisions() {
  static const std::vector<DType> p = {DType::kBf16, DType::kFp16,
                                       DType::kTf32};
  return p;
}

// FAILED_PRECONDITION below compute capability 8.0.
Status CheckComputeCapability(std::string_view family, int min,
                              const KernelLimits& limits) {
  if (limits.compute_capability >= min) return OkStatus();
  return FailedPrecondition(
      std::string(family) +
      " needs compute capability 8.0 or later (mma.sync bf16, cp.async), "
      "the device has " +
      std::to_string(limits.compute_capability / 10) + "." +
      std::to_string(limits.compute_capability % 10));
}

MmaPrecision PrecisionOf(DType d) {
  switch (d) {
    case DType::kFp16:
      return MmaPrecision::kFp16;
    case DType::kTf32:
      return MmaPrecision::kTf32;
    default:
      return MmaPrecision::kBf16;
  }
}

MmaLimits ToMmaLimits(const KernelLimits& l) {
  MmaLimits m;
  m.max_threads_per_block = l.max_threads_per_block;
  m.max_dynamic_shared_bytes = l.max_dynamic_shared_bytes;
  m.max_registers_per_thread = l.max_registers_per_thread;
  m.registers_per_sm = l.registers_per_sm;
  m.compute_capability = l.compute_capability;
  return m;
}

// Valid only for a GEMM context; callers check the op first.
MmaProblem ToMmaProblem(const Problem& problem) {
  MmaProblem m;
  m.ctx = std::get<GemmContext>(problem.ctx);
  m.precision = PrecisionOf(m.ctx.dtype);
  m.ctx.dtype = StorageType(m.precision);  // tf32 is stored as fp32
  m.lda = problem.lda;
  m.ldb = problem.ldb;
  m.ldc = problem.ldc;
  return m;
}

// A GeneratedKernel of gemm.mma's generator (gemm.mma and gemm.mma_pk).
GeneratedKernel FromMmaKernel(const KernelFamily& family, MmaKernel k,
                              int64_t kg) {
  GeneratedKernel out = ToGenerated(family, k);
  out.pack_entry = std::move(k.pack_entry);
  out.pack_grid = k.pack_grid;
  out.pack_block = k.pack_block;
  out.reduce_entry = std::move(k.reduce_entry);
  out.reduce_dependent = k.reduce_dependent;
  out.dynamic_shared_bytes = k.shared_bytes;
  out.reduce_grid = k.reduce_grid;
  out.reduce_block = k.reduce_block;
  // K_G > 1 adds its partial sums by a reduce entry or by a tree with
  // counters.
  out.counter_offset =
      kg > 1 && out.reduce_entry.empty() ? k.counter_offset : -1;
  out.align_a = k.a_copy_bytes / k.element_bytes;
  out.align_b = k.b_copy_bytes / k.element_bytes;
  out.align_bytes = std::min(k.a_copy_bytes, k.b_copy_bytes);
  out.entry_params = EntryParams(Op::kGemm);
  if (!out.reduce_entry.empty()) out.reduce_params = ReduceParams();
  return out;
}

class MmaFamily : public KernelFamily {
 public:
  MmaFamily() : specs_(MmaSpecs(kFieldCount)) {
    // The device's compute capability comes first: CanImplement refuses
    // below 8.0, and the rules must say so too (samplers count by rule).
    rules_.push_back("compute_capability");
    for (MmaRule r : kMmaRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kGemmMmaFamily; }
  int version() const override { return kGemmMmaGeneratorVersion; }
  Op op() const override { return Op::kGemm; }
  const std::vector<DType>& precisions() const override {
    return MmaPrecisions();
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }
  const std::vector<std::string>& rules() const override { return rules_; }
  std::string_view summary() const override {
    return "tensor-core GEMM: mma.sync (bf16/fp16 m16n8k16, tf32 m16n8k8, "
           "fp32 accumulate), cp.async ring, swizzled ldmatrix";
  }
  int min_compute_capability() const override { return 80; }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckParamCount(params, kFieldCount, field));
    return RenameParamsField(ValidateMmaParams(ToMma(params)), field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    if (rule == 0)
      return limits.compute_capability >= min_compute_capability();
    return PassesMmaRule(kMmaRules[rule - 1], ToMmaProblem(problem),
                         ToMma(params), ToMmaLimits(limits));
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    BT_RETURN_IF_ERROR(
        CheckComputeCapability(name(), min_compute_capability(), limits));
    return CanImplementGemm(ToMmaProblem(problem), ToMma(params),
                            ToMmaLimits(limits));
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const MmaParams m = ToMma(params);
    return MmaShape(m, ImplicitGemm(problem.ctx),
                    OpOf(problem.ctx) == Op::kGemm
                        ? MmaWorkspaceBytes(ToMmaProblem(problem), m)
                        : 0);
  }

  std::vector<Params> DefaultCandidates() const override {
    auto make = [](int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn,
                   int64_t st) {
      return DefaultMma(kFieldCount, bm, bn, bk, wm, wn, st);
    };
    return {make(128, 128, 32, 2, 2, 4), make(64, 64, 32, 2, 2, 4),
            make(32, 8, 128, 2, 1, 4), make(16, 8, 64, 1, 1, 3)};
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    BT_ASSIGN_OR_RETURN(MmaKernel k,
                        GenerateGemm(ToMmaProblem(problem), ToMma(params),
                                     arch));
    return FromMmaKernel(*this, std::move(k), ToMma(params).kg);
  }

 protected:
  // What gemm.mma_pk changes besides its name, rules and workspace: the
  // rules after the compute capability, and the generator.
  virtual Status CanImplementGemm(const MmaProblem& problem,
                                  const MmaParams& p,
                                  const MmaLimits& limits) const {
    return CanImplementMma(problem, p, limits);
  }
  virtual StatusOr<MmaKernel> GenerateGemm(const MmaProblem& problem,
                                           const MmaParams& p,
                                           const std::string& arch) const {
    return GenerateGemmMma(problem, p, arch);
  }

  std::vector<ParamSpec> specs_;
  std::vector<std::string> rules_;
};

// gemm.mma on packed operands (gemm_mma.h MmaPacking): gemm.mma's
// parameters and rules, the latter on the packed problem, after one of its
// own: some operand's rows are not 16-byte aligned (else gemm.mma reads
// them in place, and packing is a copy for nothing).
class MmaPackedFamily : public MmaFamily {
 public:
  MmaPackedFamily() { rules_.insert(rules_.begin() + 1, "unaligned_rows"); }

  std::string_view name() const override { return kGemmMmaPackedFamily; }
  int version() const override { return kGemmMmaPackedGeneratorVersion; }
  std::string_view summary() const override {
    return "gemm.mma on packed operands: a first kernel copies A or B whose "
           "rows are not 16-byte aligned into the workspace with padded "
           "rows, so that the main loop reads 16-byte chunks";
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    if (rule == 0)
      return limits.compute_capability >= min_compute_capability();
    const MmaProblem m = ToMmaProblem(problem);
    if (rule == 1) return NeedsMmaPacking(m);
    const MmaParams p = ToMma(params);
    return PassesMmaRule(kMmaRules[rule - 2],
                         PackedMmaProblem(m, PlanMmaPacking(m, p)), p,
                         ToMmaLimits(limits));
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const MmaParams m = ToMma(params);
    const MmaProblem q = ToMmaProblem(problem);
    return MmaShape(m, ImplicitGemm(problem.ctx),
                    NeedsMmaPacking(q) ? PlanMmaPacking(q, m).workspace_bytes
                                       : MmaWorkspaceBytes(q, m));
  }

 protected:
  Status CanImplementGemm(const MmaProblem& problem, const MmaParams& p,
                          const MmaLimits& limits) const override {
    return CanImplementMmaPacked(problem, p, limits);
  }
  StatusOr<MmaKernel> GenerateGemm(const MmaProblem& problem,
                                   const MmaParams& p,
                                   const std::string& arch) const override {
    return GenerateGemmMmaPacked(problem, p, arch);
  }
};

// Valid only for a convolution context; callers check the op first.
ConvMmaProblem ToConvMmaProblem(const Problem& problem) {
  ConvMmaProblem m;
  m.ctx = std::get<ConvContext>(problem.ctx);
  m.precision = PrecisionOf(m.ctx.dtype);
  m.ctx.dtype = StorageType(m.precision);
  return m;
}

class ConvMmaKernelFamily : public KernelFamily {
 public:
  ConvMmaKernelFamily() : specs_(MmaSpecs(kConvFieldCount)) {
    rules_.push_back("compute_capability");
    for (ConvMmaRule r : kConvMmaRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kConvMmaFamily; }
  int version() const override { return kConvMmaGeneratorVersion; }
  Op op() const override { return Op::kConv; }
  const std::vector<DType>& precisions() const override {
    return MmaPrecisions();
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }
  const std::vector<std::string>& rules() const override { return rules_; }
  std::string_view summary() const override {
    return "tensor-core implicit-GEMM convolution (NHWC, KRSC): gemm.mma's "
           "pipeline, an im2col gather by cp.async with zero-fill, filter "
           "tap outer, channels inner";
  }
  int min_compute_capability() const override { return 80; }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckParamCount(params, kConvFieldCount, field));
    return RenameParamsField(ValidateMmaParams(ToMma(params, kConvFieldCount)),
                             field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    if (rule == 0)
      return limits.compute_capability >= min_compute_capability();
    return PassesConvMmaRule(kConvMmaRules[rule - 1],
                             ToConvMmaProblem(problem),
                             ToMma(params, kConvFieldCount),
                             ToMmaLimits(limits));
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    BT_RETURN_IF_ERROR(
        CheckComputeCapability(name(), min_compute_capability(), limits));
    return CanImplementConvMma(ToConvMmaProblem(problem),
                               ToMma(params, kConvFieldCount),
                               ToMmaLimits(limits));
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const MmaParams m = ToMma(params, kConvFieldCount);
    return MmaShape(m, ImplicitGemm(problem.ctx),
                    OpOf(problem.ctx) == Op::kConv
                        ? ConvMmaWorkspaceBytes(ToConvMmaProblem(problem), m)
                        : 0);
  }

  std::vector<Params> DefaultCandidates() const override {
    auto make = [](int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn,
                   int64_t st) {
      return DefaultMma(kConvFieldCount, bm, bn, bk, wm, wn, st);
    };
    return {make(128, 128, 32, 2, 2, 4), make(128, 64, 32, 2, 2, 4),
            make(64, 64, 32, 2, 2, 4), make(64, 32, 16, 2, 1, 3)};
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    BT_ASSIGN_OR_RETURN(
        ConvMmaKernel k,
        GenerateConvMma(ToConvMmaProblem(problem),
                        ToMma(params, kConvFieldCount), arch));
    GeneratedKernel out = ToGenerated(*this, k);
    out.reduce_entry = std::move(k.reduce_entry);
    out.reduce_dependent = k.reduce_dependent;
    out.dynamic_shared_bytes = k.shared_bytes;
    out.reduce_grid = k.reduce_grid;
    out.reduce_block = k.reduce_block;
    // The input's rows (C channels) and the filter's (C*R*S) keep the copy
    // width's alignment when C does; their base addresses must too.
    out.align_a = out.align_b = k.copy_bytes / k.element_bytes;
    out.align_bytes = k.copy_bytes;
    out.entry_params = EntryParams(Op::kConv);
    if (!out.reduce_entry.empty()) out.reduce_params = ReduceParams();
    return out;
  }

 private:
  std::vector<ParamSpec> specs_;
  std::vector<std::string> rules_;
};

}  // namespace

const KernelFamily& GemmMmaFamily() {
  static const MmaFamily family;
  return family;
}

const KernelFamily& GemmMmaPackedFamily() {
  static const MmaPackedFamily family;
  return family;
}

const KernelFamily& ConvMmaFamily() {
  static const ConvMmaKernelFamily family;
  return family;
}

}  // namespace blocktune
