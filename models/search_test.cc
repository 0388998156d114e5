// A model that cannot answer queries is refused when it loads (non-finite
// numbers) or by BlockSearch::Probe (implausible predictions), and the
// search drops shapes whose prediction is not plausible rather than rank
// NaN.
#include "models/search.h"

#include <gtest/gtest.h>

#include <cmath>

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
        {32, 64, 128}, {32, 64, 128}, {4, 8}, {4, 8}, {8}, {1}};
    for (int p = 0; p < kBlockParameters; ++p) {
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

TEST(ModelValidationTest, TrainingSizeIsBounded) {
  EXPECT_TRUE(CheckTrainingSize(Op::kGemm, kDefaultHidden, 16).ok());
  EXPECT_TRUE(CheckTrainingSize(Op::kGemm, {4096, 4096, 4096, 4096}, 1).ok());
  Status big = CheckTrainingSize(Op::kGemm, {4096, 4096, 4096, 4096}, 16);
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find(std::to_string(kMaxTrainingParameters)),
            std::string::npos)
      << big.message();
}

}  // namespace
}  // namespace blocktune
