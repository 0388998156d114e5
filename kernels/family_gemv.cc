// The family `gemm.gemv` (gemm_gemv.h): fp32 GEMMs of few columns (decode,
// skinny products, N <= 128) as a streaming kernel on CUDA cores, behind
// the family interface. Offered only where A's rows and B's columns run
// along K.
#include <iterator>

#include "kernels/family.h"
#include "kernels/family_params.h"
#include "kernels/gemm_gemv.h"
#include "kernels/gemm_ptx.h"
#include "kernels/ptx_text.h"

namespace blocktune {
namespace {

// GemvParams' fields in the family's parameter order.
struct Field {
  const char* name;
  int64_t GemvParams::*member;
  const std::vector<int64_t>& (*values)();
  const char* meaning;
  bool log_feature = true;  // false for PF, a 0/1 switch
  // false for PF: the sampling rule power_of_two would refuse PF = 0 (it
  // did, in campaign run26: every one of its samples has PF = 1).
  bool power_of_two = true;
};
const Field kFields[] = {
    {"R", &GemvParams::rows, GemvRowValues, "R: rows of C per warp"},
    {"NC", &GemvParams::cols, GemvColValues,
     "NC: columns of C per warp (min(NC, N))"},
    {"W", &GemvParams::warps, GemvWarpValues, "W: warps per program along M"},
    {"WN", &GemvParams::warps_n, GemvWarpNValues,
     "WN: warps per program along N (sharing A's rows through L1)"},
    {"V", &GemvParams::vec, GemvVectorValues,
     "V: consecutive floats per lane per load (vector width)"},
    {"U", &GemvParams::unroll, GemvUnrollValues,
     "U: loads per row in flight (main-loop chunks of 32*V*U of K)"},
    {"PF", &GemvParams::prefetch, GemvPrefetchValues,
     "PF: 1 loads the next chunk while this one's FMAs run (two register "
     "sets)",
     false, false},
    {"KG", &GemvParams::kg, GemvSplitValues,
     "K_G: programs splitting one reduction"},
};
constexpr int kFieldCount = static_cast<int>(std::size(kFields));

GemvParams ToGemv(const Params& p) {
  GemvParams g;
  for (int i = 0; i < kFieldCount; ++i) g.*(kFields[i].member) = p[i];
  return g;
}

Params FromGemv(const GemvParams& g) {
  Params p;
  p.size = kFieldCount;
  for (int i = 0; i < kFieldCount; ++i) p[i] = g.*(kFields[i].member);
  return p;
}

class GemvFamily : public KernelFamily {
 public:
  GemvFamily() {
    for (const Field& f : kFields) {
      ParamSpec s;
      s.name = f.name;
      s.values = f.values();
      s.meaning = f.meaning;
      s.log_feature = f.log_feature;
      s.power_of_two = f.power_of_two;
      specs_.push_back(std::move(s));
    }
    for (GemvRule r : kGemvRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override { return kGemmGemvFamily; }
  int version() const override { return kGemmGemvGeneratorVersion; }
  Op op() const override { return Op::kGemm; }
  const std::vector<DType>& precisions() const override {
    static const std::vector<DType> p = {DType::kFp32};
    return p;
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }
  const std::vector<std::string>& rules() const override { return rules_; }
  std::string_view summary() const override {
    return "fp32 GEMV-style GEMM for N = 1 .. 128 (decode, skinny products) "
           "on CUDA cores: a warp streams R rows of A and NC of B along K "
           "(NT, or NN with one column), shfl.sync reduction";
  }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    BT_RETURN_IF_ERROR(CheckParamCount(params, kFieldCount, field));
    return Validate(ToGemv(params), field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    return blocktune::Passes(kGemvRules[rule], problem, ToGemv(params), limits);
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return blocktune::CanImplement(problem, ToGemv(params), limits);
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const GemvParams p = ToGemv(params);
    const GemmShape g = ImplicitGemm(problem.ctx);
    ConfigShape s;
    s.tile_m = p.RowsPerProgram();
    s.tile_n = p.ColsPerProgram(g.n);
    s.step_k = p.Chunk();
    s.split_k = p.kg;
    s.threads = p.Threads();
    s.programs =
        CeilDiv(g.m, s.tile_m) * CeilDiv(g.n, s.tile_n) * p.kg;
    s.workspace_bytes = p.kg > 1 ? p.kg * g.m * g.n * 4 : 0;
    return s;
  }

  std::vector<Params> DefaultCandidates() const override {
    // The widest column tile that N takes (NC < 2N), so that A is read
    // once for up to 8 columns; per width, vectors of 4 where the rows
    // allow them, else of 2, else floats; two rows per warp, four warps
    // per program, two loads per row in flight.
    std::vector<Params> out;
    for (int64_t nc : {8, 4, 2, 1}) {
      for (int64_t v : {4, 2, 1}) {
        GemvParams p;
        p.rows = 2;
        p.cols = nc;
        p.warps = 4;
        p.warps_n = 1;
        p.vec = v;
        p.unroll = v == 1 ? 4 : 2;
        p.prefetch = 0;
        p.kg = 1;
        out.push_back(FromGemv(p));
      }
    }
    return out;
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    const GemvParams p = ToGemv(params);
    BT_ASSIGN_OR_RETURN(GemmKernel k, GenerateGemv(problem, p, arch));
    // V floats per load: lda (and ldb where B has several columns) a
    // multiple of V, A and B 4*V-byte aligned.
    return FromGemmKernel(*this, std::move(k), Op::kGemm);
  }

 private:
  std::vector<ParamSpec> specs_;
  std::vector<std::string> rules_;
};

}  // namespace

const KernelFamily& GemmGemvFamily() {
  static const GemvFamily family;
  return family;
}

}  // namespace blocktune
