// What campaigns measure (server/campaign_plan.h): the families a spec
// samples on a GPU, their rotation and its resume, the list a
// retune_stale campaign re-measures, against both stores, and the list a
// guided campaign measures.
#include "server/campaign_plan.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/both_stores_test.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

DeviceProfile Profile(const std::string& name) {
  auto p = ProfileByName(name);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

std::vector<std::string> Names(const std::vector<const KernelFamily*>& fs) {
  std::vector<std::string> out;
  for (const KernelFamily* f : fs) out.emplace_back(f->name());
  return out;
}

TEST(CampaignFamiliesTest, EveryFamilyOfTheDtypeThatRunsOnTheGpu) {
  CampaignSpec spec;
  spec.max_samples = 10;
  auto fp32 = CampaignFamilies(spec, Profile("h100"));
  ASSERT_TRUE(fp32.ok()) << fp32.status().ToString();
  // gemm.gemv (fp32, N <= 8) too: its rules offer it for decode shapes;
  // gemm.ffma_k and gemm.ffma_kpk for NT.
  EXPECT_EQ(Names(*fp32),
            (std::vector<std::string>{"gemm.ffma", "gemm.gemv", "gemm.ffma_k",
                                      "gemm.ffma_kpk"}));
  spec.op = Op::kConv;
  EXPECT_EQ(Names(*CampaignFamilies(spec, Profile("v100"))),
            std::vector<std::string>{"conv.ffma"});
  spec.op = Op::kGemm;
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32}) {
    spec.dtype = d;
    auto got = CampaignFamilies(spec, Profile("a100"));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(Names(*got),
              (std::vector<std::string>{"gemm.mma", "gemm.mma_pk"}));
    // Compute capability 9.0 runs gemm.wgmma too (sm_90a), and in tf32
    // gemm.wgmma_rs.
    std::vector<std::string> hopper_families = {"gemm.mma", "gemm.wgmma"};
    if (d == DType::kTf32) hopper_families.push_back("gemm.wgmma_rs");
    hopper_families.push_back("gemm.mma_pk");
    hopper_families.push_back("gemm.wgmma_pk");
    hopper_families.push_back("gemm.wgmma_ps");
    hopper_families.push_back("gemm.wgmma_ts");
    hopper_families.push_back("gemm.wgmma_sc");
    for (const char* hopper : {"h100", "h200"}) {
      got = CampaignFamilies(spec, Profile(hopper));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(Names(*got), hopper_families) << hopper;
    }
  }
}

TEST(CampaignFamiliesTest, RefusesWhatTheGpuCannotRun) {
  CampaignSpec spec;
  spec.max_samples = 10;
  spec.dtype = DType::kBf16;
  auto none = CampaignFamilies(spec, Profile("v100"));
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(),
              HasSubstr("no gemm kernel family in bf16 runs on the campaign's "
                        "GPU v100 (compute capability 7.0): gemm.mma "
                        "needs compute capability 8.0; gemm.wgmma needs "
                        "compute capability 9.0"));
  spec.families = {"gemm.wgmma"};
  auto a100 = CampaignFamilies(spec, Profile("a100"));
  EXPECT_EQ(a100.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(a100.status().message(),
              HasSubstr("spec.families[0] is gemm.wgmma, which needs compute "
                        "capability 9.0 or later"));
  spec.families.clear();
  spec.families = {"Gemm.MMA"};
  auto named = CampaignFamilies(spec, Profile("v100"));
  EXPECT_EQ(named.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(named.status().message(),
              HasSubstr("spec.families[0] is gemm.mma, which needs compute "
                        "capability 8.0 or later; the campaign's GPU is "
                        "v100 (compute capability 7.0)"));
  auto h100 = CampaignFamilies(spec, Profile("h100"));
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(Names(*h100), std::vector<std::string>{"gemm.mma"});  // its name
  spec.families = {"gemm.ffma"};
  auto wrong = CampaignFamilies(spec, Profile("h100"));
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("spec.families[0]"));
  spec.families.clear();
  // bf16 convolutions: conv.mma, and on 9.0 conv.wgmma, conv.wgmma_ps,
  // conv.wgmma_sk and conv.wgmma_sc.
  spec.op = Op::kConv;
  auto conv = CampaignFamilies(spec, Profile("h100"));
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  EXPECT_EQ(Names(*conv),
            (std::vector<std::string>{"conv.mma", "conv.wgmma",
                                      "conv.wgmma_ps", "conv.wgmma_sk",
                                      "conv.wgmma_sc"}));
  auto conv_a100 = CampaignFamilies(spec, Profile("a100"));
  ASSERT_TRUE(conv_a100.ok()) << conv_a100.status().ToString();
  EXPECT_EQ(Names(*conv_a100), std::vector<std::string>{"conv.mma"});
  spec.families = {"gemm.mma"};  // a family of another op
  auto other_op = CampaignFamilies(spec, Profile("h100"));
  EXPECT_EQ(other_op.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(other_op.status().message(), HasSubstr("spec.families[0]"));
}

// A stand-in for a family's model: its "top k" for a context are k of a
// fixed pool of configurations, starting at a place the context decides,
// and it counts the contexts it was asked about.
struct FakeGuide {
  std::vector<Params> pool;
  std::shared_ptr<std::atomic<int>> asked = std::make_shared<std::atomic<int>>(0);

  GuideModel Model(int64_t id) const {
    GuideModel g;
    g.id = id;
    g.top = [pool = pool, asked = asked](const Context& ctx, int k) {
      ++*asked;
      const size_t start = std::hash<std::string>()(ToString(ctx)) % pool.size();
      std::vector<Params> out;
      for (int i = 0; i < k && i < static_cast<int>(pool.size()); ++i)
        out.push_back(pool[(start + i) % pool.size()]);
      return out;
    };
    return g;
  }
};

FakeGuide GuideOf(const KernelFamily& family, DType dtype, size_t n) {
  FakeGuide g;
  Domain domain = *DefaultDomain(family);
  EXPECT_TRUE(SetPrecision(&domain, dtype).ok());
  auto stream = CandidateStream::Make(domain, Profile("h100"), "uniform", 7);
  EXPECT_TRUE(stream.ok());
  while (g.pool.size() < n) g.pool.push_back((*stream)->Next()->params);
  return g;
}

TEST(PlanGuidedTest, MeasuresTheModelsTopKInDistinctContextsOfTheDomain) {
  CampaignSpec spec;
  spec.dtype = DType::kBf16;
  spec.sampler = "guided";
  spec.max_samples = 8 * 25 + 3;  // the last context gives 3 of its 8
  spec.seed = 5;
  const KernelFamily& mma = **FindFamily("gemm.mma");
  const FakeGuide guide = GuideOf(mma, DType::kBf16, 20);
  std::vector<std::string> asked_for;
  const GuideFinder find = [&](const KernelFamily& f, DType dtype,
                               const std::string& device)
      -> StatusOr<GuideModel> {
    asked_for.push_back(std::string(f.name()) + " " +
                        std::string(ToString(dtype)) + " " + device);
    if (&f != &mma) return NotFound("no current gemm.wgmma bf16 model");
    return guide.Model(12);
  };
  auto plan = PlanGuided(spec, Profile("h100"), "GPU X", find, 4);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Every family of the device was asked for; gemm.wgmma and the packed
  // families have no model, so gemm.mma takes every context, and the
  // summary says so.
  EXPECT_EQ(asked_for, (std::vector<std::string>{"gemm.mma bf16 GPU X",
                                                 "gemm.wgmma bf16 GPU X",
                                                 "gemm.mma_pk bf16 GPU X",
                                                 "gemm.wgmma_pk bf16 GPU X",
                                                 "gemm.wgmma_ps bf16 GPU X",
                                                 "gemm.wgmma_ts bf16 GPU X",
                                                 "gemm.wgmma_sc bf16 GPU X"}));
  ASSERT_EQ(plan->candidates.size(), 203u);
  EXPECT_EQ(plan->contexts, 26);
  EXPECT_EQ(*guide.asked, 26);
  EXPECT_THAT(plan->summary,
              HasSubstr("guided by model 12 (gemm.mma): 26 contexts x (top 6 "
                        "+ 2 of ranks 7-64) = 203 candidates"));
  EXPECT_THAT(plan->summary, HasSubstr("not guided: gemm.wgmma: no current"));
  ASSERT_EQ(plan->unguided.size(), 6u);
  // Context after context, each new, in the campaign's precision: the
  // model's first 6 answers, then 2 more of its ranks 7 .. 64 (the fake
  // ranks 20), distinct and in its order, not always ranks 7 and 8.
  std::set<std::string> contexts;
  int explored = 0;
  for (size_t c = 0; c * 8 < plan->candidates.size(); ++c) {
    const Candidate& first = plan->candidates[c * 8];
    EXPECT_TRUE(contexts.insert(ToString(first.ctx)).second) << c;
    EXPECT_EQ(DTypeOf(first.ctx), DType::kBf16);
    const std::vector<Params> ranked = guide.Model(0).top(first.ctx, 64);
    ASSERT_EQ(ranked.size(), 20u);
    size_t last_rank = 0;
    for (size_t i = c * 8; i < std::min<size_t>(c * 8 + 8, 203); ++i) {
      EXPECT_EQ(plan->candidates[i].family, &mma);
      EXPECT_EQ(plan->candidates[i].ctx, first.ctx);
      const size_t k = i - c * 8;
      if (k < 6) {
        EXPECT_EQ(plan->candidates[i].params, ranked[k]) << i;
        continue;
      }
      const auto at = std::find(ranked.begin() + 6, ranked.end(),
                                plan->candidates[i].params);
      ASSERT_NE(at, ranked.end()) << i;
      const size_t rank = static_cast<size_t>(at - ranked.begin());
      EXPECT_GT(rank, last_rank) << i;  // distinct, in the model's order
      last_rank = rank;
      if (rank >= 8) ++explored;
    }
  }
  EXPECT_GT(explored, 0);
  // The plan is the spec's and the models': other thread counts, the same.
  auto again = PlanGuided(spec, Profile("h100"), "GPU X", find, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->candidates, plan->candidates);
  spec.seed = 6;
  auto other = PlanGuided(spec, Profile("h100"), "GPU X", find, 4);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->candidates, plan->candidates);
  // With work bounds, the guided contexts are drawn inside them too.
  spec.min_flops = 0x1p38;
  spec.max_flops = 0x1p41;
  auto large = PlanGuided(spec, Profile("h100"), "GPU X", find, 4);
  ASSERT_TRUE(large.ok()) << large.status().ToString();
  ASSERT_EQ(large->candidates.size(), 203u);
  for (const Candidate& c : large->candidates) {
    const GemmShape g = ImplicitGemm(c.ctx);
    const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    EXPECT_GE(flops, 0x1p38) << ToString(c.ctx);
    EXPECT_LE(flops, 0x1p41) << ToString(c.ctx);
  }
}

// The campaign measures a guided plan while the models rank the rest of it
// (GuidedPlanner, a chunk of contexts at a time): any cut into ranges,
// ranked in any order, gives the candidates of the plan in one piece; a
// stop leaves the rest of a range out.
TEST(PlanGuidedTest, APlanInPiecesIsThePlanInOne) {
  CampaignSpec spec;
  spec.dtype = DType::kBf16;
  spec.sampler = "guided";
  spec.max_samples = 8 * 30;
  spec.seed = 11;
  spec.families = {"gemm.mma", "gemm.wgmma"};
  const KernelFamily& mma = **FindFamily("gemm.mma");
  const KernelFamily& wgmma = **FindFamily("gemm.wgmma");
  const FakeGuide a = GuideOf(mma, DType::kBf16, 12);
  const FakeGuide b = GuideOf(wgmma, DType::kBf16, 5);  // < 8 a context
  const GuideFinder find = [&](const KernelFamily& f, DType,
                               const std::string&) {
    return StatusOr<GuideModel>(&f == &mma ? a.Model(1) : b.Model(2));
  };
  auto whole = PlanGuided(spec, Profile("h100"), "GPU X", find, 3);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  auto planner = GuidedPlanner::Make(spec, Profile("h100"), "GPU X", find);
  ASSERT_TRUE(planner.ok()) << planner.status().ToString();
  ASSERT_EQ((*planner)->contexts(), 30);
  const int asked_before = *a.asked + *b.asked;
  std::vector<std::vector<Candidate>> parts(3);
  int64_t answered = 0;
  const std::vector<std::pair<int64_t, int64_t>> cuts = {{0, 7}, {7, 8}, {8, 99}};
  for (int i : {2, 0, 1}) {  // out of order, on other thread counts
    int64_t n = -1;
    parts[i] = (*planner)->Search(cuts[i].first, cuts[i].second, i + 1, &n);
    answered += n;
  }
  EXPECT_EQ(*a.asked + *b.asked - asked_before, 30);
  std::vector<Candidate> joined;
  for (auto& part : parts) joined.insert(joined.end(), part.begin(), part.end());
  EXPECT_EQ(joined, whole->candidates);
  EXPECT_EQ(joined.size(), 15u * 8 + 15u * 5);
  EXPECT_EQ(answered, whole->contexts);
  EXPECT_EQ((*planner)->Summary(answered, static_cast<int64_t>(joined.size())),
            whole->summary);
  // Ranges past the end are empty; a stop set before the search ranks none.
  EXPECT_TRUE((*planner)->Search(30, 40, 2).empty());
  std::atomic<bool> stop{true};
  int64_t none = -1;
  EXPECT_TRUE((*planner)->Search(0, 30, 2, &none, &stop).empty());
  EXPECT_EQ(none, 0);
}

TEST(PlanGuidedTest, InterleavesFamiliesThatHaveModels) {
  CampaignSpec spec;
  spec.dtype = DType::kBf16;
  spec.sampler = "guided";
  spec.max_samples = 32;
  spec.families = {"gemm.mma", "gemm.wgmma"};
  const KernelFamily& mma = **FindFamily("gemm.mma");
  const KernelFamily& wgmma = **FindFamily("gemm.wgmma");
  const FakeGuide a = GuideOf(mma, DType::kBf16, 10);
  const FakeGuide b = GuideOf(wgmma, DType::kBf16, 10);
  auto plan = PlanGuided(
      spec, Profile("h100"), "GPU X",
      [&](const KernelFamily& f, DType, const std::string&) {
        return StatusOr<GuideModel>(&f == &mma ? a.Model(1) : b.Model(2));
      },
      2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->candidates.size(), 32u);
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(plan->candidates[i].family, (i / 8) % 2 == 0 ? &mma : &wgmma) << i;
  EXPECT_THAT(plan->summary,
              HasSubstr("guided by models 1 (gemm.mma), 2 (gemm.wgmma)"));
  EXPECT_TRUE(plan->unguided.empty());
}

TEST(PlanGuidedTest, RefusesWithoutAModelOrABudget) {
  CampaignSpec spec;
  spec.op = Op::kConv;
  spec.sampler = "guided";
  spec.max_samples = 16;
  const GuideFinder none = [](const KernelFamily&, DType,
                              const std::string& device)
      -> StatusOr<GuideModel> {
    return NotFound("no current conv.ffma fp32 model of '" + device + "'");
  };
  auto plan = PlanGuided(spec, Profile("h100"), "GPU X", none, 2);
  ASSERT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("no current conv.ffma fp32 "
                                                 "model of 'GPU X'"));
  EXPECT_THAT(plan.status().message(),
              HasSubstr("blocktune train --op conv --dtype fp32"));
  spec.max_samples = 0;
  plan = PlanGuided(spec, Profile("h100"), "GPU X", none, 2);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("spec.max_samples"));
  // The spec's own check says it first (a time budget alone is not
  // enough), and what excludes it.
  spec.minutes = 5;
  Status s = Validate(spec);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("spec.max_samples must be in [1, "));
  spec.max_samples = 16;
  EXPECT_TRUE(Validate(spec).ok());
  spec.retune_stale = true;
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("guided and retune_stale exclude each other"));
  spec.retune_stale = false;
  spec.sampler = "bayes";  // valid, but not a guided campaign
  plan = PlanGuided(spec, Profile("h100"), "GPU X", none, 2);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("must be guided"));
  spec.sampler = "greedy";
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("must be bayes, uniform or guided"));
}

// Two streams of the same family stand in for two families (only one
// family implements each (op, dtype) in this build): seq alternates, each
// stream is the one CandidateStream of its seed would be, and restoring
// each family's state carries the rotation on exactly.
TEST(FamilyRotationTest, AlternatesAndResumesFamilyByFamily) {
  const KernelFamily& ffma = FfmaFamily(Op::kGemm);
  const DeviceProfile h100 = Profile("h100");
  const uint64_t seed = 42;
  auto rotation =
      FamilyRotation::Make({&ffma, &ffma}, DType::kFp32, h100, "uniform", seed);
  ASSERT_TRUE(rotation.ok()) << rotation.status().ToString();
  std::vector<std::unique_ptr<CandidateStream>> alone;
  for (size_t i = 0; i < 2; ++i) {
    auto stream = CandidateStream::Make(*DefaultDomain(Op::kGemm), h100,
                                        "uniform", FamilySeed(seed, i));
    ASSERT_TRUE(stream.ok());
    alone.push_back(std::move(*stream));
  }
  EXPECT_EQ(FamilySeed(seed, 0), seed);  // one family draws as it always did
  EXPECT_NE(FamilySeed(seed, 1), seed);
  std::vector<Candidate> uninterrupted;
  std::vector<FamilyRotation::State> at_6(2);
  for (int64_t seq = 0; seq < 12; ++seq) {
    auto c = (*rotation)->Next(seq);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c, *alone[seq % 2]->Next()) << seq;
    uninterrupted.push_back(*c);
    if (seq == 5) at_6 = {(*rotation)->state(0), (*rotation)->state(1)};
  }
  EXPECT_EQ(at_6[0].accepted, 3);
  EXPECT_EQ(at_6[1].accepted, 3);

  auto resumed =
      FamilyRotation::Make({&ffma, &ffma}, DType::kFp32, h100, "uniform", seed);
  ASSERT_TRUE(resumed.ok());
  for (size_t i = 0; i < 2; ++i) (*resumed)->Restore(i, at_6[i]);
  for (int64_t seq = 6; seq < 12; ++seq) {
    EXPECT_EQ(*(*resumed)->Next(seq), uninterrupted[seq]) << seq;
  }
  EXPECT_EQ((*resumed)->state(0).accepted, 6);
  EXPECT_EQ((*resumed)->state(1).accepted, 6);
  EXPECT_EQ((*resumed)->state(1).rng, (*rotation)->state(1).rng);
}

TEST(FamilyRotationTest, DrawsBf16ContextsForGemmMma) {
  auto mma = FindFamily("gemm.mma");
  ASSERT_TRUE(mma.ok());
  auto rotation =
      FamilyRotation::Make({*mma}, DType::kBf16, Profile("h100"), "bayes", 7);
  ASSERT_TRUE(rotation.ok()) << rotation.status().ToString();
  for (int64_t seq = 0; seq < 50; ++seq) {
    auto c = (*rotation)->Next(seq);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->family, *mma);
    EXPECT_EQ(DTypeOf(c->ctx), DType::kBf16);
    EXPECT_TRUE((*mma)->ValidateParams(c->params).ok());
  }
}

// contexts_per_kernel 4: each family's candidates come in groups of four
// that share parameters and PTX in distinct contexts (where a kernel finds
// none, the next candidate starts a group of its own); a rotation restored
// at a group boundary plans the same groups again.
TEST(FamilyRotationTest, GroupsShareOneKernelOverDistinctContexts) {
  auto mma = FindFamily("gemm.mma");
  auto wgmma = FindFamily("gemm.wgmma");
  ASSERT_TRUE(mma.ok() && wgmma.ok());
  const DeviceProfile h100 = Profile("h100");
  auto make = [&] {
    return FamilyRotation::Make({*mma, *wgmma}, DType::kBf16, h100, "bayes", 3);
  };
  auto grouped = make();
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  (*grouped)->set_contexts_per_kernel(4);
  std::vector<Candidate> list;
  for (int64_t seq = 0; seq < 64; ++seq) {
    auto c = (*grouped)->Next(seq);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    list.push_back(*c);
  }
  int followers = 0;
  for (int64_t seq = 0; seq < 64; ++seq) {
    const Candidate& c = list[seq];
    const int64_t local = seq / 2;
    if (local % 4 == 0) continue;
    const Candidate& base = list[seq - 2 * (local % 4)];
    if (!(c.params == base.params)) continue;  // no other context was found
    ++followers;
    EXPECT_EQ(c.family, base.family);
    for (int64_t prev = seq - 2; prev >= seq - 2 * (local % 4); prev -= 2)
      EXPECT_FALSE(list[prev].ctx == c.ctx) << seq << " repeats a context";
    auto a = c.family->Generate(c.problem(), c.params, "sm_90");
    auto b = base.family->Generate(base.problem(), base.params, "sm_90");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->ptx, b->ptx) << seq;
  }
  EXPECT_GE(followers, 40) << "of 48: most kernels run in other contexts";

  // Restored at seq 32 (a group boundary): the same candidates.
  auto resumed = make();
  ASSERT_TRUE(resumed.ok());
  (*resumed)->set_contexts_per_kernel(4);
  auto replay = make();
  (*replay)->set_contexts_per_kernel(4);
  for (int64_t seq = 0; seq < 32; ++seq) ASSERT_TRUE((*replay)->Next(seq).ok());
  for (size_t i = 0; i < 2; ++i) (*resumed)->Restore(i, (*replay)->state(i));
  for (int64_t seq = 32; seq < 64; ++seq)
    EXPECT_EQ(*(*resumed)->Next(seq), list[seq]) << seq;
}

// ------------------------------------------------------------- retune --

GemmContext Gemm(int64_t m, DType dtype) {
  GemmContext g = TestGemm(m, 1024, 512);
  g.dtype = dtype;
  return g;
}

KernelConfig Mma(const std::string& params, int version) {
  const KernelFamily* mma = *FindFamily("gemm.mma");
  auto p = mma->Parse(params);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return KernelConfig{"gemm.mma", version, *p};
}

SampleRecord Row(const Context& ctx, const KernelConfig& kernel,
                 const DeviceFingerprint& device = TestDevice()) {
  SampleRecord s = TestSample(1, 0, device);
  s.context = ctx;
  s.kernel = kernel;
  return s;
}

using PlanRetuneTest = BothStoresTest;

TEST_P(PlanRetuneTest, PlansExactlyTheStaleRowsOnceInOrder) {
  const int current = (*FindFamily("gemm.mma"))->version();
  ASSERT_GE(current, 1);
  const int old = current - 1;
  const KernelConfig small = Mma("bm=64 bn=64", old);
  const KernelConfig big = Mma("bm=128 bn=128", old);
  // Valid parameters that no longer fit the H100's shared memory
  // (4 stages * (256 + 256) * 64 * 2 B = 256 KiB).
  const KernelConfig too_big = Mma("bm=256 bn=256 bk=64 st=4", old);
  ASSERT_TRUE((*FindFamily("gemm.mma"))->ValidateParams(too_big.params).ok());
  KernelConfig big_now = big;
  big_now.generator_version = current;
  KernelConfig ffma_old =
      KernelConfig::OfBlockShape(Op::kGemm, TestShape(64, 64));
  ffma_old.generator_version = 0;

  WriteBatch batch;
  batch.samples = {
      Row(Gemm(4096, DType::kBf16), big),      // planned, third
      Row(Gemm(2048, DType::kBf16), small),    // planned, first
      Row(Gemm(4096, DType::kBf16), small),    // planned, second
      Row(Gemm(2048, DType::kBf16), small),    // a duplicate: once
      Row(Gemm(8192, DType::kBf16), big_now),  // current: not planned
      Row(Gemm(1024, DType::kBf16), big),      // stale, and a current twin
      Row(Gemm(1024, DType::kBf16), big_now),
      Row(Gemm(2048, DType::kBf16), too_big),   // skipped: shared_memory
      Row(Gemm(2048, DType::kFp16), small),     // another precision
      Row(Gemm(2048, DType::kFp32), ffma_old),  // another family, fp32
      Row(Gemm(2048, DType::kBf16), big, TestDevice("NVIDIA A100")),
  };
  batch.samples[1].measurement.status = SampleStatus::kCompileError;  // too
  batch.samples[1].measurement.median_s = 0;
  ASSERT_TRUE(store_->Commit(batch).ok());

  CampaignSpec spec;
  spec.dtype = DType::kBf16;
  spec.retune_stale = true;
  const std::string device = TestDevice().name;
  auto plan = PlanRetune(*store_, spec, device, Profile("h100"));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->candidates.size(), 3u);
  const std::vector<std::pair<int64_t, KernelConfig>> expected = {
      {2048, small}, {4096, small}, {4096, big}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const Candidate& c = plan->candidates[i];
    EXPECT_EQ(c.family->name(), "gemm.mma") << i;
    EXPECT_EQ(ToString(c.ctx),
              ToString(Context(Gemm(expected[i].first, DType::kBf16))))
        << i;
    EXPECT_EQ(c.params, expected[i].second.params) << i;
  }
  EXPECT_EQ(plan->stale_samples, 6);  // the bf16 gemm.mma ones on the H100
  EXPECT_EQ(plan->duplicates, 1);
  EXPECT_EQ(plan->already_current, 1);
  EXPECT_EQ(plan->skipped, 1);
  EXPECT_EQ(plan->skipped_by_reason.at("gemm.mma shared_memory"), 1);
  EXPECT_EQ(plan->Summary(spec, device),
            "retune of gemm bf16 on " + device +
                ": 6 stale samples: 3 configurations to re-measure, 1 "
                "duplicate, 1 already re-measured, 1 skipped: today's "
                "generators refuse them on this device (gemm.mma "
                "shared_memory: 1)");

  // Once re-measured (current rows of the same configurations), nothing is
  // left: a resumed or repeated retune measures nothing twice.
  WriteBatch remeasured;
  for (const Candidate& c : plan->candidates) {
    remeasured.samples.push_back(
        Row(c.ctx, KernelConfig::Current(*c.family, c.params)));
  }
  ASSERT_TRUE(store_->Commit(remeasured).ok());
  auto again = PlanRetune(*store_, spec, device, Profile("h100"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->candidates.empty());
  EXPECT_EQ(again->already_current, 4);

  // fp32: the stale gemm.ffma row only; '' matches every device.
  spec.dtype = DType::kFp32;
  auto fp32 = PlanRetune(*store_, spec, "", Profile("h100"));
  ASSERT_TRUE(fp32.ok());
  ASSERT_EQ(fp32->candidates.size(), 1u);
  EXPECT_EQ(fp32->candidates[0].family->name(), "gemm.ffma");
  // Another op has no stale rows at all.
  spec.op = Op::kConv;
  auto conv = PlanRetune(*store_, spec, device, Profile("h100"));
  ASSERT_TRUE(conv.ok());
  EXPECT_EQ(conv->stale_samples, 0);
  EXPECT_EQ(
      conv->Summary(spec, device),
      "no stale samples of conv fp32 on " + device + ": nothing to re-measure");
}

INSTANTIATE_TEST_SUITE_P(Stores, PlanRetuneTest, AllStoreKinds(), StoreKindName);

}  // namespace
}  // namespace blocktune
