#include "models/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "models/test_configs.h"

namespace blocktune {
namespace {

using testing::RandomBlockShape;
using testing::RandomContext;

TEST(LogFeaturesTest, GemmFeaturesAreLog2OfEveryComponent) {
  GemmContext g;
  g.m = 4096;
  g.n = 16;
  g.k = 1024;
  g.layout_b = Layout::kT;
  BlockShape xb{128, 16, 8, 2, 8, 4};
  std::vector<float> f = LogFeatures(g, xb);
  ASSERT_EQ(f.size(), FeatureNames(Op::kGemm).size());
  std::vector<float> want = {7, 4, 3, 1, 3, 2, 0, 12, 4, 10, 0, 1};  // ST = 1: 0
  EXPECT_EQ(f, want);
}

TEST(LogFeaturesTest, ConvUsesOutputSizeAndPadding) {
  ConvContext c;
  c.n = 2;
  c.h = c.w = 56;
  c.c = 64;
  c.k = 128;
  c.r = c.s = 3;
  c.pad_h = c.pad_w = 1;
  c.stride_h = c.stride_w = 2;
  std::vector<float> f = LogFeatures(c, BlockShape{64, 64, 4, 4, 8, 1});
  ASSERT_EQ(f.size(), FeatureNames(Op::kConv).size());
  EXPECT_FLOAT_EQ(f[8], std::log2(28.f));  // P
  EXPECT_FLOAT_EQ(f[14], 1.f);             // stride_h
  EXPECT_FLOAT_EQ(f[18], 1.f);             // log2(1 + pad_h)
}

// The features the shipped models (models/pretrained) were trained on, as
// models/features.cc computed them before they came from the kernel family:
// a frozen copy, so that the family's features can be held to them.
std::vector<float> ShippedLogFeatures(const Context& ctx, const BlockShape& xb) {
  auto lg = [](int64_t v) { return static_cast<float>(std::log2(double(v))); };
  std::vector<float> f = {lg(xb.ml), lg(xb.nl), lg(xb.ms),
                          lg(xb.ns), lg(xb.u),  lg(xb.kg), lg(xb.st)};
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    f.insert(f.end(), {lg(g->m), lg(g->n), lg(g->k),
                       g->layout_a == Layout::kT ? 1.f : 0.f,
                       g->layout_b == Layout::kT ? 1.f : 0.f});
    return f;
  }
  const auto& c = std::get<ConvContext>(ctx);
  f.insert(f.end(), {lg(c.n), lg(c.P()), lg(c.Q()), lg(c.c), lg(c.k), lg(c.r),
                     lg(c.s), lg(c.stride_h), lg(c.stride_w), lg(c.dilation_h),
                     lg(c.dilation_w), lg(1 + c.pad_h), lg(1 + c.pad_w)});
  return f;
}

const std::vector<std::string> kShippedGemmNames = {
    "log2_ml", "log2_nl", "log2_ms", "log2_ns", "log2_u", "log2_kg", "log2_st",
    "log2_m",  "log2_n",  "log2_k",  "a_transposed", "b_transposed"};
const std::vector<std::string> kShippedConvNames = {
    "log2_ml", "log2_nl", "log2_ms", "log2_ns", "log2_u", "log2_kg", "log2_st",
    "log2_n", "log2_p", "log2_q", "log2_c", "log2_k", "log2_r", "log2_s",
    "log2_stride_h", "log2_stride_w", "log2_dilation_h", "log2_dilation_w",
    "log2_1p_pad_h", "log2_1p_pad_w"};

// gemm.ffma and conv.ffma compute, bit for bit, the features the shipped
// models were trained on, under the same names; LogFeatures is theirs.
TEST(LogFeaturesTest, FamilyFeaturesAreTheShippedModelsFeatures) {
  EXPECT_EQ(BlockShapeFamily(Op::kGemm).FeatureNames(), kShippedGemmNames);
  EXPECT_EQ(BlockShapeFamily(Op::kConv).FeatureNames(), kShippedConvNames);
  EXPECT_EQ(FeatureNames(Op::kGemm), kShippedGemmNames);
  EXPECT_EQ(FeatureNames(Op::kConv), kShippedConvNames);
  std::mt19937_64 rng(2026);
  for (int i = 0; i < 100000; ++i) {
    const Context ctx = RandomContext(rng);
    const BlockShape xb = RandomBlockShape(rng);
    const std::vector<float> want = ShippedLogFeatures(ctx, xb);
    std::vector<float> family;
    BlockShapeFamily(OpOf(ctx)).Features(ctx, ToParams(xb), &family);
    ASSERT_EQ(family.size(), want.size());
    ASSERT_EQ(std::memcmp(family.data(), want.data(), want.size() * sizeof(float)),
              0)
        << ToString(ctx) << " " << ToString(xb);
    const std::vector<float> log_features = LogFeatures(ctx, xb);
    ASSERT_EQ(std::memcmp(log_features.data(), want.data(),
                          want.size() * sizeof(float)),
              0)
        << ToString(ctx) << " " << ToString(xb);
  }
}

}  // namespace
}  // namespace blocktune
