#include "tuner/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace blocktune {
namespace {

using ::testing::HasSubstr;

GemmContext Gemm(int64_t m, int64_t n, int64_t k) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  return g;
}

DeviceProfile H100() { return *ProfileByName("h100"); }

// The name of the rule that rejects (ctx, xb), or "" if accepted.
std::string Rejects(const RuleSet& rules, const Context& ctx,
                    const BlockShape& xb) {
  const int failed = rules.FirstFailing({ctx, xb});
  return failed < 0 ? "" : rules.names()[failed];
}

TEST(DeviceProfileTest, BuiltinsAndErrors) {
  for (const char* name : {"h100", "H100-SXM", "h200", "a100", "v100"})
    EXPECT_TRUE(ProfileByName(name).ok()) << name;
  const DeviceProfile h100 = H100();
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_EQ(h100.shared_per_block_optin, 227 * 1024);
  EXPECT_EQ(h100.instruction_cache_bytes, 12 * 1024);
  EXPECT_THAT(h100.s_ic_source, HasSubstr("Hopper"));
  EXPECT_EQ(ProfileByName("a100")->sm_count, 108);
  EXPECT_EQ(ProfileByName("v100")->sm_count, 80);
  auto missing = ProfileByName("h900");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("h100-sxm, h200, a100, v100"));
}

// Thesis §4.2.1 at S_IC = 12 KiB: 16*(8*8 + 8*8 + 8*8*8) = 10240 B fits,
// 16*(16*8 + 8*8 + 16*8*8) = 19456 B does not.
TEST(RulesTest, InstructionCacheBound) {
  KernelLimits limits;
  limits.instruction_cache_bytes = 12 * 1024;
  const Context ctx = Gemm(1024, 1024, 1024);
  EXPECT_TRUE(Passes(HardwareRule::kInstructionCache, ctx,
                     {64, 64, 8, 8, 8, 1}, limits));
  EXPECT_FALSE(Passes(HardwareRule::kInstructionCache, ctx,
                      {128, 64, 16, 8, 8, 1}, limits));
  // 16*(8*12 + 8*12 + 8*8*12) = 15360 B: the loop, not the registers
  // (an estimated 228) or shared memory. U = 12 is for query-time search,
  // so the hardware rules alone.
  EXPECT_EQ(Rejects(RuleSet::HardwareOnly(H100()), ctx,
                    {128, 128, 8, 8, 12, 1}),
            "instruction_cache");
}

// rho = 0.5 on 132 SMs: at least 66 programs.
TEST(RulesTest, OccupancyWithRhoHalfOn132Sms) {
  const RuleSet rules = RuleSet::ForSampling(H100());
  // ceil(1056/16) * ceil(16/16) = 66 programs: accepted; 1040 gives 65.
  EXPECT_EQ(Rejects(rules, Gemm(1056, 16, 512), {16, 16, 4, 4, 8, 1}), "");
  EXPECT_EQ(Rejects(rules, Gemm(1040, 16, 512), {16, 16, 4, 4, 8, 1}),
            "occupancy");
  // 1024^2 in 128x128 tiles: 64 programs, rejected; K_G = 2 makes 128.
  EXPECT_EQ(Rejects(rules, Gemm(1024, 1024, 1024), {128, 128, 8, 8, 8, 1}),
            "occupancy");
  EXPECT_EQ(Rejects(rules, Gemm(1024, 1024, 1024), {128, 128, 8, 8, 8, 2}), "");
  // Hardware-only rules (query time) never apply occupancy.
  EXPECT_EQ(Rejects(RuleSet::HardwareOnly(H100()), Gemm(1024, 1024, 1024),
                    {128, 128, 8, 8, 8, 1}),
            "");
  // rho = 1: 132 programs needed.
  auto strict = RuleSet::Make(H100(), {"occupancy"}, 1.0);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(Rejects(*strict, Gemm(1024, 1024, 1024), {128, 128, 8, 8, 8, 2}),
            "occupancy");
}

TEST(RulesTest, SamplingAndHardwareRulesByHand) {
  const RuleSet rules = RuleSet::ForSampling(H100());
  const Context big = Gemm(2048, 2048, 4096);
  EXPECT_EQ(Rejects(rules, big, {48, 64, 4, 4, 8, 1}), "power_of_two");
  EXPECT_EQ(Rejects(rules, big, {4, 4, 1, 1, 8, 1}), "min_block_elements");
  EXPECT_EQ(Rejects(rules, big, {4, 8, 1, 1, 8, 1}), "");  // 32 elements
  // K_G * U = 64 * 8 > K = 256: splits with nothing to add.
  EXPECT_EQ(Rejects(rules, Gemm(1024, 1024, 256), {128, 128, 8, 8, 8, 64}),
            "split_has_work");
  EXPECT_EQ(Rejects(rules, Gemm(1024, 1024, 256), {128, 128, 8, 8, 8, 32}),
            "");
  EXPECT_EQ(Rejects(rules, big, {8, 64, 16, 2, 8, 1}), "block_shape");
  // 256*256 threads.
  EXPECT_EQ(Rejects(rules, big, {256, 256, 1, 1, 1, 1}), "threads");
  // 2 stages * 32 * (256 + 4 + 256 + 4) * 4 B = 133120 B > 48 KiB.
  EXPECT_EQ(Rejects(rules, big, {256, 256, 16, 16, 32, 1}), "shared_memory");
  // 16 x 16 accumulators alone exceed 255 registers.
  EXPECT_EQ(Rejects(rules, big, {256, 256, 16, 16, 4, 1}), "registers");
  // Grid y = ceil(N / N_L) past 65535.
  EXPECT_EQ(Rejects(rules, Gemm(64, 1 << 24, 16), {64, 16, 4, 4, 4, 1}),
            "grid");
  auto unknown = RuleSet::Make(H100(), {"occupancy", "fast_only"});
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("'fast_only'"));
  EXPECT_FALSE(RuleSet::Make(H100(), {}, 0.0).ok());
}

// What one benchmark may cost: 2*M*N*K <= 2^36 flops, and operands plus
// output plus K_G workspace <= 1 GiB.
TEST(RulesTest, BenchmarkCostBounds) {
  const RuleSet rules = RuleSet::ForSampling(H100());
  // 2 * 4096^2 * 2048 = 2^36 exactly: accepted; K = 2049 is over.
  EXPECT_EQ(Rejects(rules, Gemm(4096, 4096, 2048), {128, 128, 8, 8, 8, 1}), "");
  EXPECT_EQ(Rejects(rules, Gemm(4096, 4096, 2049), {128, 128, 8, 8, 8, 1}),
            "max_work");
  // 64 x 64 x 2^22: A + B = 2 GiB.
  EXPECT_EQ(Rejects(rules, Gemm(64, 64, 1 << 22), {32, 32, 4, 4, 8, 8}),
            "working_set");
  // 4096^2 C with K_G = 8 workspace: (8 + 1) * 64 MiB + A + B (2 * 8 MiB)
  // = 592 MiB: accepted; K_G = 16 makes 1104 MiB.
  EXPECT_EQ(WorkingSetBytes(Gemm(4096, 4096, 512), {128, 128, 8, 8, 8, 8}),
            int64_t{592} << 20);
  EXPECT_EQ(Rejects(rules, Gemm(4096, 4096, 512), {128, 128, 8, 8, 8, 8}), "");
  EXPECT_EQ(Rejects(rules, Gemm(4096, 4096, 512), {128, 128, 8, 8, 8, 16}),
            "working_set");
  auto loose = RuleSet::Make(H100(), {"max_work"}, 0.5, 1e15);
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(Rejects(*loose, Gemm(4096, 4096, 4096), {128, 128, 8, 8, 8, 1}), "");
  EXPECT_FALSE(RuleSet::Make(H100(), {}, 0.5, 0).ok());
}

TEST(RulesTest, ConvolutionContextAndAddressing) {
  const RuleSet rules = RuleSet::ForSampling(H100());
  ConvContext cv;
  cv.n = 1;
  cv.h = cv.w = 7;
  cv.c = cv.k = 64;
  cv.r = cv.s = 7;
  cv.dilation_h = cv.dilation_w = 2;  // 13-pixel window on a 7x7 image
  EXPECT_EQ(Rejects(rules, cv, {16, 16, 2, 2, 8, 1}), "context");
  cv.dilation_h = cv.dilation_w = 1;
  cv.pad_h = cv.pad_w = 3;
  // M = 49 pixels: 4 * 4 tiles * K_G 4 = 64 programs < 66; K_G 8 gives 128.
  EXPECT_EQ(Rejects(rules, cv, {16, 16, 2, 2, 8, 4}), "occupancy");
  EXPECT_EQ(Rejects(rules, cv, {16, 16, 2, 2, 8, 8}), "");
}

TEST(DomainTest, DefaultsCompileAndErrorsNameTheField) {
  auto gemm = DefaultDomain(Op::kGemm);
  ASSERT_TRUE(gemm.ok()) << gemm.status().ToString();
  EXPECT_EQ(gemm->names.size(), 10u);
  EXPECT_EQ(gemm->values[0].front(), 1);  // ml from 1
  EXPECT_EQ(gemm->values[0].back(), 1024);
  EXPECT_FALSE(gemm->named.empty());
  auto conv = DefaultDomain(Op::kConv);
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  EXPECT_EQ(conv->names.size(), 13u);

  auto bad = ParseDomain("op: \"gemm\" block_shape { name: \"ml\" }");
  EXPECT_THAT(bad.status().message(), HasSubstr("domain.block_shape"));
  bad = ParseDomain(R"(op: "gemm"
    block_shape { name: "ml" values: 16 } block_shape { name: "nl" values: 16 }
    block_shape { name: "ms" values: 1 } block_shape { name: "ns" values: 1 }
    block_shape { name: "u" values: 1 } block_shape { name: "kg" values: 1 }
    context { name: "m" values: 16 } context { name: "n" values: 16 }
    context { name: "k" values: 16 } context { name: "layout" values: 7 })");
  EXPECT_THAT(bad.status().message(),
              HasSubstr("domain.context[3] ('layout') values must be in [0, 3]"));
  bad = ParseDomain("op: \"gemm\" nonsense: 1");
  EXPECT_THAT(bad.status().message(), HasSubstr("line 1"));
  bad = ParseDomain("op: \"fft\"");
  EXPECT_THAT(bad.status().message(), HasSubstr("domain.op must be gemm or conv"));
}

// Found by fuzz/domain_fuzz: values no context or block shape can hold
// made the rules overflow int64 (the implicit GEMM n*P*Q of a draw with
// hw = 2^31-1) before any rule could reject the draw.
TEST(DomainTest, ValuesBeyondWhatADrawCanHoldAreRefused) {
  const std::string block = R"(
    block_shape { name: "ml" values: 16 } block_shape { name: "nl" values: 16 }
    block_shape { name: "ms" values: 1 } block_shape { name: "ns" values: 1 }
    block_shape { name: "u" values: 4 } )";
  const std::string conv = R"(op: "conv"
    context { name: "n" values: 1 } context { name: "c" values: 16 }
    context { name: "k" values: 16 } context { name: "rs" values: 3 }
    context { name: "stride" values: 1 } context { name: "dilation" values: 1 })";
  auto bad = ParseDomain(conv + block + R"(block_shape { name: "kg" values: 1 }
    context { name: "hw" values: [7, 2147483647] })");
  EXPECT_THAT(bad.status().message(),
              HasSubstr("domain.context: elements of the input (n*hw*hw*c) at "
                        "the largest values must be at most 1099511627776"));
  bad = ParseDomain(conv + block + R"(block_shape { name: "kg" values: 70000 }
    context { name: "hw" values: 7 })");
  EXPECT_THAT(bad.status().message(),
              HasSubstr("domain.block_shape[5] ('kg') values must be in "
                        "[1, 65535], got 70000"));
  auto fine = ParseDomain(conv + block + R"(block_shape { name: "kg" values: 1 }
    context { name: "hw" values: [7, 4096] })");
  EXPECT_TRUE(fine.ok()) << fine.status().ToString();
}

TEST(DomainTest, ConvDrawsUseSamePadding) {
  auto conv = DefaultDomain(Op::kConv);
  ASSERT_TRUE(conv.ok());
  Draw draw;
  for (size_t p = 0; p < conv->values.size(); ++p) draw.index[p] = 0;
  draw.index[10] = 2;  // rs = 5
  draw.index[12] = 1;  // dilation 2
  Candidate c = Materialize(*conv, draw);
  const auto& cv = std::get<ConvContext>(c.ctx);
  EXPECT_EQ(cv.r, 5);
  EXPECT_EQ(cv.pad_h, 4);
}

SamplingReport Sample(Op op, const std::string& sampler, int64_t count,
                   uint64_t seed, std::vector<Candidate>* out = nullptr) {
  static const Domain gemm = *DefaultDomain(Op::kGemm);
  static const Domain conv = *DefaultDomain(Op::kConv);
  SamplingOptions options;
  options.sampler = sampler;
  options.count = count;
  options.seed = seed;
  auto report = RunSampling(op == Op::kGemm ? gemm : conv, H100(),
                            RuleSet::ForSampling(H100()), options, out);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return *report;
}

TEST(SamplerTest, DeterministicGivenSeed) {
  std::vector<Candidate> a, b, c;
  Sample(Op::kGemm, "bayes", 200, 42, &a);
  Sample(Op::kGemm, "bayes", 200, 42, &b);
  Sample(Op::kGemm, "bayes", 200, 43, &c);
  ASSERT_EQ(a.size(), 200u);
  int same = 0, differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    same += a[i].ctx == b[i].ctx && a[i].xb == b[i].xb;
    differ += !(a[i].ctx == c[i].ctx && a[i].xb == c[i].xb);
  }
  EXPECT_EQ(same, 200);
  EXPECT_GT(differ, 150);
}

TEST(SamplerTest, EveryAcceptedCandidatePassesCanImplement) {
  for (Op op : {Op::kGemm, Op::kConv}) {
    std::vector<Candidate> out;
    Sample(op, "bayes", 2000, 5, &out);
    const KernelLimits limits = H100().Limits();
    for (const Candidate& c : out) {
      ASSERT_TRUE(Validate(c.ctx).ok()) << ToString(c.ctx);
      ASSERT_TRUE(Validate(c.xb).ok()) << ToString(c.xb);
      ASSERT_TRUE(CanImplement(c.ctx, c.xb, limits).ok()) << ToString(c.xb);
    }
  }
}

TEST(SamplerTest, RejectionsAreCountedByRule) {
  SamplingReport r = Sample(Op::kGemm, "uniform", 300, 9);
  int64_t rejected = 0;
  for (const auto& [rule, count] : r.rejected_by_rule) rejected += count;
  EXPECT_EQ(rejected + r.accepted, r.draws);
  EXPECT_EQ(r.accepted, 300);
}

// Targets of issue 4 (the ISAAC paper's figures): >= 20% accepted for
// GEMM, >= 15% for convolution with the Naive Bayes generator.
TEST(SamplerTest, NaiveBayesAcceptanceTargets) {
  SamplingReport gemm = Sample(Op::kGemm, "bayes", 20000, 1);
  SamplingReport conv = Sample(Op::kConv, "bayes", 20000, 1);
  SamplingReport uniform = Sample(Op::kGemm, "uniform", 2000, 1);
  std::cout << "gemm bayes " << gemm.acceptance() << ", conv bayes "
            << conv.acceptance() << ", gemm uniform " << uniform.acceptance()
            << "\n";
  EXPECT_GE(gemm.acceptance(), 0.20);
  EXPECT_GE(conv.acceptance(), 0.15);
  EXPECT_GT(gemm.acceptance(), 5 * uniform.acceptance());
}

// No support is lost: every value of every parameter that a long uniform
// run accepts is also proposed by the Naive Bayes generator.
TEST(SamplerTest, NaiveBayesLosesNoSupport) {
  for (Op op : {Op::kGemm, Op::kConv}) {
    const Domain domain = *DefaultDomain(op);
    SamplingOptions options;
    options.sampler = "uniform";
    options.count = 20000;
    options.seed = 3;
    SamplingReport uniform = *RunSampling(
        domain, H100(), RuleSet::ForSampling(H100()), options, nullptr);

    // Warm up and fit as RunSampling does, then propose.
    const RuleSet rules = RuleSet::ForSampling(H100());
    Rng rng(4);
    NaiveBayesSampler bayes(domain, 100);
    EXPECT_EQ(WarmUp(domain, rules, 20000, int64_t{1} << 40, rng, &bayes).second,
              20000);
    Draw draw;
    std::vector<std::set<int64_t>> proposed(domain.values.size());
    for (int i = 0; i < 200000; ++i) {
      bayes.Propose(rng, &draw);
      const size_t params = DrawnParameters(domain, draw);
      for (size_t p = 0; p < params; ++p)
        proposed[p].insert(domain.values[p][draw.index[p]]);
    }
    for (size_t p = 0; p < domain.values.size(); ++p) {
      for (const auto& [value, count] : uniform.marginals[p].second) {
        if (count == 0) continue;
        EXPECT_TRUE(proposed[p].count(value))
            << ToString(op) << " " << domain.names[p] << "=" << value
            << " accepted " << count << " times uniformly, never proposed";
        EXPECT_GT(bayes.Probability(p, std::find(domain.values[p].begin(),
                                                 domain.values[p].end(),
                                                 value) -
                                           domain.values[p].begin()),
                  0.0);
      }
    }
  }
}

}  // namespace
}  // namespace blocktune
