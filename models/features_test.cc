#include "models/features.h"

#include <gtest/gtest.h>

#include <cmath>

namespace blocktune {
namespace {

TEST(LogFeaturesTest, GemmFeaturesAreLog2OfEveryComponent) {
  GemmContext g;
  g.m = 4096;
  g.n = 16;
  g.k = 1024;
  g.layout_b = Layout::kT;
  BlockShape xb{128, 16, 8, 2, 8, 4};
  std::vector<float> f = LogFeatures(g, xb);
  ASSERT_EQ(f.size(), FeatureNames(Op::kGemm).size());
  std::vector<float> want = {7, 4, 3, 1, 3, 2, 12, 4, 10, 0, 1};
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
  EXPECT_FLOAT_EQ(f[7], std::log2(28.f));  // P
  EXPECT_FLOAT_EQ(f[13], 1.f);             // stride_h
  EXPECT_FLOAT_EQ(f[17], 1.f);             // log2(1 + pad_h)
}

}  // namespace
}  // namespace blocktune
