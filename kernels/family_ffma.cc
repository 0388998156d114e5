// The families `gemm.ffma` and `conv.ffma`: the fp32 CUDA-core generators
// of gemm_ptx.h (thesis §4.1) behind the family interface. Their
// parameters are the block shape x_B, named as the thesis names them.
#include <algorithm>
#include <memory>

#include "kernels/block_shape.h"
#include "kernels/family.h"
#include "kernels/gemm_ptx.h"
#include "kernels/validate.h"

namespace blocktune {
namespace {

std::vector<int64_t> Pow2(int64_t hi, std::vector<int64_t> extra) {
  for (int64_t v = 1; v <= hi; v *= 2) extra.push_back(v);
  std::sort(extra.begin(), extra.end());
  return extra;
}

class FfmaFamily : public KernelFamily {
 public:
  explicit FfmaFamily(Op op) : op_(op) {
    specs_ = {
        {"ML", Pow2(1024, {12, 24, 48, 96, 192, 384}),
         "M_L: rows of C per program"},
        {"NL", Pow2(1024, {12, 24, 48, 96, 192, 384}),
         "N_L: columns of C per program"},
        {"MS", Pow2(64, {3, 6, 12}), "M_S: rows of C per thread"},
        {"NS", Pow2(64, {3, 6, 12}), "N_S: columns of C per thread"},
        {"U", Pow2(256, {3, 6, 12, 24}),
         "U: reduction step staged in shared memory"},
        {"KG", Pow2(4096, {3, 6, 12, 24, 48}),
         "K_G: programs splitting one reduction"},
        // Added in version 2; rows of version 1 are ST = 1.
        {"ST", {1, 2, 3, 4, 5, 6, 8},
         "ST: shared-memory stages; 1 stages through registers, >= 2 copy "
         "by cp.async",
         /*power_of_two=*/false, /*log_feature=*/true, /*absent_means=*/1,
         /*refines=*/true},
    };
    for (HardwareRule r : kHardwareRules) rules_.push_back(ToString(r));
  }

  std::string_view name() const override {
    return op_ == Op::kGemm ? "gemm.ffma" : "conv.ffma";
  }
  int version() const override {
    return op_ == Op::kGemm ? kGemmFfmaGeneratorVersion
                            : kConvFfmaGeneratorVersion;
  }
  Op op() const override { return op_; }
  const std::vector<DType>& precisions() const override {
    static const std::vector<DType> p = {DType::kFp32};
    return p;
  }
  const std::vector<ParamSpec>& params() const override { return specs_; }
  const std::vector<std::string>& rules() const override { return rules_; }
  std::string_view summary() const override {
    return op_ == Op::kGemm
               ? "fp32 GEMM on CUDA cores (FFMA), thesis §4.1.1"
               : "fp32 implicit-GEMM convolution on CUDA cores (FFMA), NHWC x "
                 "KRSC, thesis §4.1.2";
  }

  Status ValidateParams(const Params& params,
                        std::string_view field) const override {
    if (params.size != kBlockShapeValues) {
      return InvalidArgument(std::string(field) + " must have the 7 values " +
                             "ML NL MS NS U KG ST, got " +
                             std::to_string(params.size));
    }
    return Validate(ToBlockShape(params), field);
  }

  bool Passes(int rule, const Problem& problem, const Params& params,
              const KernelLimits& limits) const override {
    return blocktune::Passes(kHardwareRules[rule], problem.ctx,
                             ToBlockShape(params), limits);
  }

  bool RuleUsesProblem(int rule) const override {
    const HardwareRule r = kHardwareRules[rule];
    return r != HardwareRule::kThreads && r != HardwareRule::kSharedMemory &&
           r != HardwareRule::kInstructionCache &&
           r != HardwareRule::kAsyncCopy;
  }

  Status CanImplement(const Problem& problem, const Params& params,
                      const KernelLimits& limits) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    return blocktune::CanImplement(problem.ctx, ToBlockShape(params), limits);
  }

  ConfigShape Shape(const Problem& problem,
                    const Params& params) const override {
    const BlockShape xb = ToBlockShape(params);
    const GemmShape g = ImplicitGemm(problem.ctx);
    ConfigShape s;
    s.tile_m = xb.ml;
    s.tile_n = xb.nl;
    s.step_k = xb.u;
    s.split_k = xb.kg;
    s.threads = xb.ThreadsPerProgram();
    s.programs = ProgramsInGrid(problem.ctx, xb);
    s.workspace_bytes = xb.kg > 1 ? xb.kg * g.m * g.n * 4 : 0;
    return s;
  }

  std::vector<Params> DefaultCandidates() const override {
    static constexpr BlockShape kDefaults[] = {
        {64, 64, 4, 4, 8, 1},  {32, 64, 2, 4, 8, 1}, {32, 32, 2, 2, 8, 1},
        {128, 32, 4, 2, 8, 1}, {16, 16, 1, 1, 4, 1}, {256, 16, 4, 1, 4, 1},
    };
    std::vector<Params> out;
    for (const BlockShape& xb : kDefaults) out.push_back(ToParams(xb));
    return out;
  }

  StatusOr<GeneratedKernel> Generate(const Problem& problem,
                                     const Params& params,
                                     const std::string& arch) const override {
    BT_RETURN_IF_ERROR(CheckProblem(problem));
    BT_RETURN_IF_ERROR(ValidateParams(params, "params"));
    BT_ASSIGN_OR_RETURN(GemmKernel k,
                        GenerateKernel(problem.ctx, ToBlockShape(params), arch));
    // Vector widths 1 or 4: the bases 4- or 16-byte aligned.
    return FromGemmKernel(*this, std::move(k), op_);
  }

 private:
  Op op_;
  std::vector<ParamSpec> specs_;
  std::vector<std::string> rules_;
};

}  // namespace

const KernelFamily& GemmFfmaFamily() {
  static const FfmaFamily family(Op::kGemm);
  return family;
}

const KernelFamily& ConvFfmaFamily() {
  static const FfmaFamily family(Op::kConv);
  return family;
}

}  // namespace blocktune
