// A model that cannot answer queries is refused when it loads (non-finite
// numbers) or by BlockSearch::Probe (implausible predictions), and the
// search drops shapes whose prediction is not plausible rather than rank
// NaN.
#include "models/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/surrogate.pb.h"

namespace blocktune {
namespace {

constexpr double kLnTeraflop = 27.631;  // ln(1e12)

// The stored form of a one-layer GEMM model whose weights are all zero, so
// that it predicts exactly `target_mean` (ln flop/s) for every input.
struct StoredModel {
  models::Weights weights;
  models::Normalization normalization;

  StoredModel() {
    auto created = Surrogate::Create(Op::kGemm, {8}, 1);
    EXPECT_TRUE(created.ok());
    EXPECT_TRUE(weights.ParseFromString(created->SerializeWeights()));
    EXPECT_TRUE(
        normalization.ParseFromString(created->SerializeNormalization()));
    for (models::Layer& layer : *weights.mutable_layers()) {
      for (float& w : *layer.mutable_weight()) w = 0;
      for (float& b : *layer.mutable_bias()) b = 0;
    }
    normalization.set_target_mean(kLnTeraflop);
    const std::vector<std::vector<int64_t>> values = {
        {32, 64, 128}, {32, 64, 128}, {4, 8}, {4, 8}, {8}, {1}, {1}};
    for (int p = 0; p < static_cast<int>(values.size()); ++p) {
      auto* v = normalization.mutable_search_values(p)->mutable_values();
      v->Clear();
      v->Add(values[p].begin(), values[p].end());
    }
  }

  StatusOr<Surrogate> Load() const {
    return Surrogate::Load(Op::kGemm, "8", weights.SerializeAsString(),
                           normalization.SerializeAsString());
  }
};

BlockSearch Search(const Surrogate& model) {
  return BlockSearch(model, ProfileByName("h100").value());
}

GemmContext Gemm(int64_t m, int64_t n, int64_t k) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  return g;
}

TEST(ModelValidationTest, PlausibleModelPassesTheProbe) {
  StoredModel stored;
  auto model = stored.Load();
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_TRUE(Search(*model).Probe().ok());
  SearchStats stats;
  auto top = Search(*model).Top(Gemm(1024, 1024, 1024), 3, &stats);
  EXPECT_EQ(top.size(), 3u);
  EXPECT_EQ(stats.implausible, 0);
}

TEST(ModelValidationTest, NonFiniteNumbersDoNotLoad) {
  {
    StoredModel stored;
    stored.weights.mutable_layers(1)->set_bias(0, std::nanf(""));
    auto model = stored.Load();
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("layer 1 bias[0] is nan"),
              std::string::npos)
        << model.status().message();
  }
  {
    StoredModel stored;
    stored.weights.mutable_layers(0)->set_weight(3, INFINITY);
    auto model = stored.Load();
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("layer 0 weight[3] is inf"),
              std::string::npos)
        << model.status().message();
  }
  {
    StoredModel stored;
    stored.normalization.set_stddev(2, std::nanf(""));
    EXPECT_FALSE(stored.Load().ok());
  }
  {
    StoredModel stored;
    stored.normalization.set_target_std(INFINITY);
    auto model = stored.Load();
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("finite"), std::string::npos);
  }
}

TEST(ModelValidationTest, ImplausiblePredictionsFailTheProbeAndLeaveTheSearch) {
  // Finite numbers whose product overflows: the prediction is inf - inf.
  StoredModel stored;
  for (float& w : *stored.weights.mutable_layers(0)->mutable_weight())
    w = 1e30f;
  auto* last = stored.weights.mutable_layers(1);
  for (int i = 0; i < last->weight_size(); ++i) {
    last->set_weight(i, i % 2 ? 1e30f : -1e30f);
  }
  auto model = stored.Load();
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Status probe = Search(*model).Probe();
  EXPECT_EQ(probe.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(probe.message().find("gemm m=512"), std::string::npos)
      << probe.message();

  SearchStats stats;
  EXPECT_TRUE(Search(*model).Top(Gemm(1024, 1024, 1024), 3, &stats).empty());
  EXPECT_GT(stats.implausible, 0);
  EXPECT_EQ(stats.implausible, stats.candidates);

  // Faster than any GPU: e^30 times a teraflop.
  StoredModel fast;
  fast.normalization.set_target_mean(kLnTeraflop + 30);
  model = fast.Load();
  ASSERT_TRUE(model.ok());
  probe = Search(*model).Probe();
  EXPECT_NE(probe.message().find("flop/s"), std::string::npos)
      << probe.message();
}

// The x_B values of the shipped H100 models (models/pretrained): every power
// of two the training domains allowed.
SearchValues ShippedSearchValues() {
  auto pow2 = [](int64_t hi) {
    std::vector<int64_t> v;
    for (int64_t x = 1; x <= hi; x *= 2) v.push_back(x);
    return v;
  };
  // ST = 1 alone: version 1's range, which ST = 1 keeps.
  return {pow2(1024), pow2(1024), pow2(32), pow2(32), pow2(128), pow2(4096), {1}};
}

// The fp32 context of ToString's text without its dtype.
Context Fp32(const std::string& text) {
  StatusOr<Context> ctx = ContextFromString(text + " dtype=fp32");
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
  return ctx.ok() ? *ctx : Context{};
}

// FNV-1a over the block shapes, in order.
uint64_t Hash(const std::vector<BlockShape>& shapes) {
  uint64_t h = 1469598103934665603ull;
  for (const BlockShape& xb : shapes) {
    for (int64_t v : {xb.ml, xb.nl, xb.ms, xb.ns, xb.u, xb.kg}) {
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    }
  }
  return h;
}

// The range, shape by shape and in order, for the shipped models' values on
// a spread of contexts (tiny K where splits leave programs idle, operands
// beyond 1 GiB where no split fits, a grid too wide for N, convolutions
// whose register estimate differs from the GEMM's), pinned from the search
// before it enumerated families' parameters generically.
// An ensemble ranks by its mean charged kEnsembleRisk of its members'
// spread: a member that sees M_L = 128 as 2^c faster than its twin (which
// predicts 1 Tflop/s everywhere) moves the mean toward M_L = 128 and the
// spread by as much, so at risk 1 the two cancel (every configuration is
// ranked at the flat member's time), at 0 the mean's favourite wins, at 2
// the agreed one.
TEST(EnsembleRankingTest, MembersDisagreementCountsAgainstAConfiguration) {
  StoredModel flat;
  StoredModel keen;  // output = target_mean + relu((log2 M_L - 4) / 1)
  keen.normalization.set_target_std(1.0);
  for (int f = 0; f < keen.normalization.mean_size(); ++f) {
    keen.normalization.set_mean(f, f == 0 ? 4.f : 0.f);
    keen.normalization.set_stddev(f, 1.f);
  }
  // Layer 0 is inputs x 8 (weight[o * inputs + i]); unit 0 reads feature 0.
  keen.weights.mutable_layers(0)->set_weight(0, 1.f);
  keen.weights.mutable_layers(1)->set_weight(0, 1.f);
  auto a = flat.Load();
  auto b = keen.Load();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto ensemble = Surrogate::Ensemble({*a, *b});
  ASSERT_TRUE(ensemble.ok()) << ensemble.status().ToString();
  // PredictSpread: the mean Predict gives, and half the gap as the spread.
  std::vector<float> x;
  const GemmContext g = Gemm(4096, 4096, 4096);
  const Problem problem(g);
  const KernelFamily& f = ensemble->family();
  auto wide = f.Parse("ML=128 NL=128 MS=8 NS=8 U=8 KG=1");
  ASSERT_TRUE(wide.ok());
  ensemble->Features(problem, *wide, &x);
  float mean = 0, spread = 0, plain = 0;
  ensemble->PredictSpread(x.data(), 1, &mean, &spread);
  ensemble->Predict(x.data(), 1, &plain);
  EXPECT_NEAR(mean, plain, 1e-5);
  EXPECT_NEAR(mean, kLnTeraflop + 1.5, 1e-4);  // (0 + (7 - 4)) / 2
  EXPECT_NEAR(spread, 1.5, 1e-4);

  BlockSearch search = Search(*ensemble);
  EXPECT_EQ(search.risk(), kEnsembleRisk);
  auto top = search.Top(g, 3);
  ASSERT_EQ(top.size(), 3u);
  for (const ScoredConfig& c : top) {
    EXPECT_GE(c.ranked_s, c.predicted_s * (1 - 1e-9));
    EXPECT_NEAR(c.ranked_s, Flops(g) / std::exp(kLnTeraflop), c.ranked_s * 1e-4);
  }
  search.set_risk(0);
  top = search.Top(g, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].params[0], 128);
  EXPECT_DOUBLE_EQ(top[0].ranked_s, top[0].predicted_s);
  search.set_risk(2);
  top = search.Top(g, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].params[0], 32);
  EXPECT_LT(top[0].predicted_s, top[0].ranked_s * (1 + 1e-9));
  // A single network ranks by its prediction.
  BlockSearch single = Search(*b);
  top = single.Top(g, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].params[0], 128);
  EXPECT_DOUBLE_EQ(RankedSeconds(top[0]), top[0].predicted_s);
}

// Recorded again 2026-12-02, when the ffma register estimate began counting
// staged loads at the generator's vector widths for the context (so
// m=n=k=1 and 16384^3 no longer share a range) and the Hopper profiles'
// S_IC became 40 KiB (kernels/gemm_ptx.cc, tuner/device_profile.cc).
TEST(SearchRangeTest, ShippedRangesAreUnchanged) {
  struct Pinned {
    const char* ctx;
    size_t count;
    uint64_t hash;
  };
  const Pinned pinned[] = {
      {"gemm m=1024 n=1024 k=1024 layout=NN", 44113, 6106188182348236921ull},
      {"gemm m=1 n=1 k=1 layout=NN", 4373, 956812181444864343ull},
      {"gemm m=4096 n=16 k=7 layout=NN", 8564, 6928961233011419074ull},
      {"gemm m=4096 n=16 k=4096 layout=TN", 62946, 3489885098172907086ull},
      {"gemm m=64 n=64 k=131072 layout=NN", 75335, 8487055143977934019ull},
      {"gemm m=16384 n=16384 k=16384 layout=NN", 5969, 3361755465262727087ull},
      {"gemm m=8 n=40000000 k=8 layout=NN", 125, 5652829923619086304ull},
      {"conv n=8 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1", 31964,
       11728053232673301405ull},
      {"conv n=32 h=14 w=14 c=256 k=256 r=1 s=1 pad=0 stride=1 dilation=1",
       29645, 17293491224956788832ull},
      {"conv n=1 h=224 w=224 c=3 k=64 r=7 s=7 pad=3 stride=2 dilation=1", 23852,
       3226393347110796822ull},
  };
  const DeviceProfile h100 = ProfileByName("h100-sxm").value();
  const SearchRange gemm(BlockShapeFamily(Op::kGemm), ShippedSearchValues(), h100);
  const SearchRange conv(BlockShapeFamily(Op::kConv), ShippedSearchValues(), h100);
  for (const Pinned& p : pinned) {
    const Context ctx = Fp32(p.ctx);
    const SearchRange& range = OpOf(ctx) == Op::kGemm ? gemm : conv;
    std::vector<BlockShape> shapes;
    for (const Params& c : range.Candidates(ctx)) shapes.push_back(ToBlockShape(c));
    EXPECT_EQ(shapes.size(), p.count) << p.ctx;
    EXPECT_EQ(Hash(shapes), p.hash) << p.ctx;
  }
}

// The search applies the rules that KernelFamily::RuleUsesProblem says do
// not look at the problem once per configuration: they must hold or fail
// alike on every problem.
TEST(SearchRangeTest, RulesAppliedOnceIgnoreTheProblem) {
  const KernelLimits limits = ProfileByName("h100-sxm").value().Limits();
  const SearchValues values = ShippedSearchValues();
  std::vector<Context> problems;
  for (const char* text :
       {"gemm m=1 n=1 k=1 layout=NN", "gemm m=4096 n=16 k=7 layout=TT",
        "gemm m=8 n=40000000 k=8 layout=NN",
        "conv n=8 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
        "conv n=1 h=224 w=224 c=3 k=64 r=7 s=7 pad=3 stride=2 dilation=1"}) {
    problems.push_back(Fp32(text));
  }
  int checked = 0;
  for (Op op : {Op::kGemm, Op::kConv}) {
    const KernelFamily& family = BlockShapeFamily(op);
    for (int rule = 0; rule < static_cast<int>(family.rules().size()); ++rule) {
      if (family.RuleUsesProblem(rule)) continue;
      for (int64_t ml : values[0])
        for (int64_t ms : values[2])
          for (int64_t u : values[4]) {
            const BlockShape xb{ml, ml, ms, ms, u, 1};
            if (!Validate(xb).ok()) continue;
            const Params p = ToParams(xb);
            const bool once = family.Passes(rule, Problem(), p, limits);
            for (const Context& ctx : problems) {
              if (OpOf(ctx) != op) continue;
              EXPECT_EQ(family.Passes(rule, ctx, p, limits), once)
                  << family.rules()[rule] << " " << ToString(xb) << " "
                  << ToString(ctx);
              ++checked;
            }
          }
    }
  }
  EXPECT_GT(checked, 1000);
}

// ffma's ST refines (ParamSpec::refines): the bases are the configurations
// at ST = 1 (and those whose ST = 1 twin a rule refuses), the variants of a
// base differ from it in ST alone, and bases and variants together are the
// whole range, context by context.
TEST(SearchRangeTest, RefinementSplitsTheRangeIntoBasesAndVariants) {
  SearchValues values = ShippedSearchValues();
  values[6] = {1, 2, 4};
  const DeviceProfile h100 = ProfileByName("h100-sxm").value();
  for (const char* text :
       {"gemm m=1024 n=1024 k=1024 layout=NN", "gemm m=4096 n=16 k=4096 layout=TN",
        "gemm m=64 n=64 k=131072 layout=NN",
        "conv n=8 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1"}) {
    const Context ctx = Fp32(text);
    const SearchRange range(BlockShapeFamily(OpOf(ctx)), values, h100);
    ASSERT_TRUE(range.refines());
    const std::vector<int32_t> all = range.CandidateIndices(ctx);
    const std::vector<int32_t> bases = range.CandidateIndices(ctx, nullptr, true);
    std::vector<int32_t> variants;
    range.AppendVariants(ctx, bases, &variants);
    int64_t orphans = 0;
    for (int32_t b : bases) orphans += range.grid(b)[6] != 1;
    for (int32_t v : variants) {
      EXPECT_NE(range.grid(v)[6], 1) << text;
    }
    std::vector<int32_t> both = bases;
    both.insert(both.end(), variants.begin(), variants.end());
    std::sort(both.begin(), both.end());
    EXPECT_EQ(both, all) << text;
    // ST = 2 and 4 roughly double the range; few configurations lack a twin.
    EXPECT_GT(variants.size(), bases.size()) << text;
    EXPECT_LT(orphans * 20, static_cast<int64_t>(bases.size())) << text;
    // A variant is its base with another ST.
    std::vector<int32_t> one;
    for (int32_t b : bases) {
      one.assign(1, b);
      std::vector<int32_t> of;
      range.AppendVariants(ctx, one, &of);
      for (int32_t v : of) {
        Params p = range.grid(v);
        p[6] = range.grid(b)[6];
        ASSERT_EQ(p, range.grid(b)) << text;
      }
    }
  }
  // One ST value: nothing to refine.
  EXPECT_FALSE(SearchRange(BlockShapeFamily(Op::kGemm), ShippedSearchValues(), h100)
                   .refines());
}

// A model that only cares for ST (faster the deeper): the shortlist search
// answers with the deepest ST, as the exhaustive one does. (This range is
// smaller than the shortlist, so both score all of it.)
TEST(SearchRangeTest, ShortlistFindsTheRefinementTheModelPrefers) {
  StoredModel stored;
  auto* st = stored.normalization.mutable_search_values(6)->mutable_values();
  st->Clear();
  for (int64_t v : {1, 2, 4}) st->Add(v);
  models::Layer* first = stored.weights.mutable_layers(0);
  const int inputs = first->weight_size() / first->bias_size();
  first->set_weight(6, 1);  // hidden unit 0 reads feature 6, log2(ST)
  stored.weights.mutable_layers(1)->set_weight(0, 1);
  auto model = stored.Load();
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_GT(inputs, 6);
  const BlockSearch search(*model, ProfileByName("h100").value());
  for (const GemmContext& g :
       {Gemm(1024, 1024, 1024), Gemm(4096, 16, 4096), Gemm(64, 64, 65536)}) {
    SearchStats shortlist, exhaustive;
    auto a = search.Top(g, 10, &shortlist, Refinement::kShortlist);
    auto b = search.Top(g, 10, &exhaustive, Refinement::kExhaustive);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(a[0].params[6], 4);
    EXPECT_EQ(b[0].params[6], 4);
    EXPECT_DOUBLE_EQ(a[0].predicted_s, b[0].predicted_s);
    EXPECT_EQ(shortlist.candidates, exhaustive.candidates);
  }
}

TEST(ModelValidationTest, TrainingSizeIsBounded) {
  EXPECT_TRUE(CheckTrainingSize(BlockShapeFamily(Op::kGemm), kDefaultHidden, 16).ok());
  EXPECT_TRUE(CheckTrainingSize(BlockShapeFamily(Op::kGemm), {4096, 4096, 4096, 4096}, 1).ok());
  Status big = CheckTrainingSize(BlockShapeFamily(Op::kGemm), {4096, 4096, 4096, 4096}, 16);
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find(std::to_string(kMaxTrainingParameters)),
            std::string::npos)
      << big.message();
}

}  // namespace
}  // namespace blocktune
