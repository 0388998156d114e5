// The family `gemm.ffma_k` (gemm_ffma_k.h): fp32 NT GEMMs on CUDA cores
// with both operands staged K-major in shared memory, behind the family
// interface. Offered only for layout NT with rows of whole 16-byte units.
#include <iterator>

#include "kernels/family.h"
#include "kernels/family_params.h"
#include "kernels/gemm_ffma_k.h"
#include "kernels/gemm_ptx.h"
#include "kernels/ptx_text.h"

namespace blocktune {
namespace {

// FfmaKParams' fields in the family's parameter order.
struct Field {
  const char* name;
  int64_t FfmaKParams::*member;
  const std::vector<int64_t>& (*values)();
  const char* meaning;
  // false for ST (2, 3, 4) and KG (3, 5, 6, 7 since v5): the sampling rule
  // power_of_two would never draw them.
  bool power_of_two = true;
};
const Field kFields[] = {
    {"LM", &FfmaKParams::lanes_m, FfmaKLaneValues,
     "LM: lanes of a warp along M (32 / LM along N)"},
    {"TM", &FfmaKParams::tm, FfmaKThreadTileValues, "TM: rows of C per lane"},
    {"TN", &FfmaKParams::tn, FfmaKThreadTileValues,
     "TN: columns of C per lane"},
    {"WM", &FfmaKParams::wm, FfmaKWarpValues, "WM: warps per program along M"},
    {"WN", &FfmaKParams::wn, FfmaKWarpValues, "WN: warps per program along N"},
    {"KC", &FfmaKParams::kc, FfmaKStepValues,
     "KC: elements of K per shared-memory stage"},
    {"ST", &FfmaKParams::stages, FfmaKStageValues,
     "ST: stages of the cp.async ring (ST - 1 in flight)", false},
    {"KG", &FfmaKParams::kg, FfmaKSplitValues,
     "K_G: programs splitting one reduction", false},
    {"WK", &FfmaKParams::wk, FfmaKWarpValues,
     "WK: groups of WM x WN warps splitting each stage's K (summed in "
     "shared memory)"},
    {"CL", &FfmaKParams::cl, FfmaKClusterValues,
     "CL: splits of K per thread-block cluster, their sums added in "
     "distributed shared memory (sm_90)"},
};
constexpr int kFieldCount = static_cast<int>(std::size(kFields));

FfmaKParams ToFfmaK(const Params& p) {
  FfmaKParams g;
  for (int i = 0; i < kFieldCount; ++i) g.*(kFields[i].member) = p[i];
  return g;
}

Params FromFfmaK(const FfmaKParams& g) {
  Params p;
  p.size = kFieldCount;
  for (int i = 0; i < kFieldCount; ++i) p[i] = g.*(kFields[i].member);
  return p;
}

class FfmaKFamily : public KernelFamily {
 public:
  FfmaKFamily() {
    for (const Field& f : kFields) {
      ParamSpec s;
      s.name = f.name;
      s.values = f.values();
      s.meaning = f.meaning;
      s.power_of_two = f.power_of_two;
      specs_.push_back(std::move(s));
    }
    for (FfmaKRule r : kFfmaKRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kGemmFfmaKFamily; }
  int version() const override { return kGemmFfmaKGeneratorVersion; }
  // cp.async (its ring) exists from sm_80 on: campaigns, models and queries
  // leave the family out on older GPUs.
  int min_compute_capability() const override { return 80; }
  Op op() const override { return Op::kGemm; }
  const std::vector<DType>& precisions() const override {
    static const std::vector<DType> p = {DType::kFp32};
    return p;
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }
  const std::vector<std::string>& rules() const override { return rules_; }
  std::string_view summary() const override {
    return "fp32 NT GEMM on CUDA cores with A and B K-major in shared memory "
           "(cp.async ring, no transpose): lanes own TM x TN outputs, "
           "16-byte broadcast reads";
  }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckParamCount(params, kFieldCount, field));
    return Validate(ToFfmaK(params), field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    return blocktune::Passes(kFfmaKRules[rule], problem, ToFfmaK(params),
                             limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return blocktune::CanImplement(problem, ToFfmaK(params), limits);
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const FfmaKParams p = ToFfmaK(params);
    const GemmShape g = ImplicitGemm(problem.ctx);
    ConfigShape s;
    s.tile_m = p.TileM();
    s.tile_n = p.TileN();
    s.step_k = p.kc;
    s.split_k = p.kg;
    s.threads = p.Threads();
    s.programs = CeilDiv(g.m, s.tile_m) * CeilDiv(g.n, s.tile_n) * p.kg;
    s.workspace_bytes = p.Partials() > 1 ? p.Partials() * g.m * g.n * 4 : 0;
    return s;
  }

  std::vector<Params> DefaultCandidates() const override {
    // 8 x 4 lanes of 4 x 4 outputs (a warp's 32 x 16), 2 x 2 warps: a
    // 64 x 32 tile; then narrower ones for few columns (N = 16: 16 x 2
    // lanes of 2 x 8; N <= 4: 32 x 1 lanes of 2 x 4, 1 x 1), three stages
    // of 32; last, the first tile with its stages split over 4 groups of
    // warps (16 warps); and a covariance's tile over 512 splits of K in
    // clusters of 8.
    std::vector<Params> out;
    const FfmaKParams shapes[] = {
        {8, 4, 4, 2, 2, 32, 3, 1, 1},  {8, 4, 4, 2, 1, 32, 3, 1, 1},
        {16, 2, 8, 2, 1, 32, 3, 1, 1}, {16, 2, 2, 4, 1, 32, 3, 1, 1},
        {32, 2, 4, 2, 1, 32, 3, 1, 1}, {32, 2, 1, 4, 1, 32, 3, 1, 1},
        {32, 1, 1, 4, 1, 32, 3, 1, 1}, {8, 4, 4, 1, 2, 32, 3, 1, 1},
        {4, 4, 2, 1, 4, 32, 3, 1, 1},  {8, 4, 4, 2, 2, 32, 3, 1, 4},
        {4, 8, 4, 2, 2, 32, 3, 512, 1, 8},
    };
    for (const FfmaKParams& p : shapes) out.push_back(FromFfmaK(p));
    return out;
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    const FfmaKParams p = ToFfmaK(params);
    BT_ASSIGN_OR_RETURN(GemmKernel k, GenerateGemm(problem, p, arch));
    // 16-byte copies: lda and ldb multiples of 4, A and B 16-byte aligned
    // (gemm.ffma_kpk: the operands it reads in place).
    GeneratedKernel out = FromGemmKernel(*this, std::move(k), Op::kGemm);
    out.dynamic_shared_bytes = static_cast<unsigned>(p.SharedBytes());
    return out;
  }

 protected:
  // What gemm.ffma_kpk changes besides its name and rules.
  virtual StatusOr<GemmKernel> GenerateGemm(const Problem& problem,
                                            const FfmaKParams& p,
                                            const std::string& arch) const {
    return GenerateFfmaK(problem, p, arch);
  }

  std::vector<ParamSpec> specs_;
  std::vector<std::string> rules_;
};

// gemm.ffma_k on packed operands (gemm_ffma_k.h PlanFfmaKPacking): its
// parameters; its layout rule, then one of its own (some operand's rows
// are not whole 16-byte units, else gemm.ffma_k reads them in place and
// packing is a copy for nothing), then its other rules on the packed
// problem.
class FfmaKPackedFamily : public FfmaKFamily {
 public:
  FfmaKPackedFamily() { rules_.insert(rules_.begin() + 1, "unaligned_rows"); }

  std::string_view name() const override { return kGemmFfmaKPackedFamily; }
  int version() const override { return kGemmFfmaKPackedGeneratorVersion; }
  std::string_view summary() const override {
    return "gemm.ffma_k on packed operands: a first kernel copies A or B "
           "whose rows are not whole 16-byte units into the workspace with "
           "padded rows, so that fp32 NT products of any K get 16-byte "
           "copies";
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    const FfmaKParams p = ToFfmaK(params);
    if (rule == 0)
      return blocktune::Passes(FfmaKRule::kLayout, problem, p, limits);
    if (rule == 1) return NeedsFfmaKPacking(problem);
    return blocktune::Passes(
        kFfmaKRules[rule - 1],
        PackedFfmaKProblem(problem, PlanFfmaKPacking(problem, p)), p, limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return CanImplementFfmaKPacked(problem, ToFfmaK(params), limits);
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    ConfigShape s = FfmaKFamily::Shape(problem, params);
    if (NeedsFfmaKPacking(problem))
      s.workspace_bytes =
          PlanFfmaKPacking(problem, ToFfmaK(params)).workspace_bytes;
    return s;
  }

 protected:
  StatusOr<GemmKernel> GenerateGemm(const Problem& problem,
                                    const FfmaKParams& p,
                                    const std::string& arch) const override {
    return GenerateFfmaKPacked(problem, p, arch);
  }
};

}  // namespace

const KernelFamily& GemmFfmaKFamily() {
  static const FfmaKFamily family;
  return family;
}

const KernelFamily& GemmFfmaKPackedFamily() {
  static const FfmaKPackedFamily family;
  return family;
}

}  // namespace blocktune
