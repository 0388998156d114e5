#include "kernels/context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

ConvContext Conv3x3(int64_t n, int64_t hw, int64_t c, int64_t k) {
  ConvContext conv;
  conv.n = n;
  conv.h = conv.w = hw;
  conv.c = c;
  conv.k = k;
  conv.r = conv.s = 3;
  conv.pad_h = conv.pad_w = 1;
  return conv;
}

TEST(OperationTest, EnumsRoundTripAndRejectUnknown) {
  for (Op op : {Op::kGemm, Op::kConv})
    EXPECT_EQ(*OpFromString(ToString(op)), op);
  for (DType d : {DType::kFp32, DType::kFp16, DType::kBf16, DType::kFp64})
    EXPECT_EQ(*DTypeFromString(ToString(d)), d);
  for (Layout l : {Layout::kN, Layout::kT})
    EXPECT_EQ(*LayoutFromString(ToString(l)), l);
  EXPECT_EQ(*DTypeFromString("FP32"), DType::kFp32);
  auto bad = DTypeFromString("fp8");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("dtype must be one of fp32, tf32, bf16, fp16, fp64; got 'fp8'"));
}

TEST(GemmContextTest, ValidatesRangesNamingTheField) {
  EXPECT_TRUE(Validate(Gemm(4096, 16, 4096)).ok());
  EXPECT_TRUE(Validate(Gemm(1, 1, 1)).ok());
  Status zero = Validate(Gemm(0, 16, 16), "context.gemm");
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(zero.message(),
            "context.gemm.m must be in [1, 2147483647], got 0");
  EXPECT_THAT(Validate(Gemm(16, -3, 16)).message(), HasSubstr("gemm.n"));
  EXPECT_THAT(Validate(Gemm(16, 16, kMaxDim + 1)).message(),
              HasSubstr("gemm.k must be in [1, 2147483647]"));
}

TEST(GemmContextTest, RejectsProductsPastTheTensorLimit) {
  // Each dimension is in range, but A would hold 2^31 * 2^30 elements.
  Status s = Validate(Gemm(kMaxDim, 16, int64_t{1} << 30));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("elements of A (m*k) must be at most"));
  // C = m*n overflows int64 were it not checked.
  EXPECT_FALSE(Validate(Gemm(kMaxDim, kMaxDim, 1)).ok());
}

TEST(GemmContextTest, DerivedQuantities) {
  Context ctx = Gemm(4096, 16, 4096);
  EXPECT_DOUBLE_EQ(Flops(ctx), 2.0 * 4096 * 16 * 4096);
  EXPECT_DOUBLE_EQ(MinBytes(ctx), 4.0 * (4096 * 4096 + 4096 * 16 + 4096 * 16));
  EXPECT_EQ(OpOf(ctx), Op::kGemm);
  EXPECT_EQ(DTypeOf(ctx), DType::kFp32);
}

TEST(ConvContextTest, OutputShapeAndImplicitGemm) {
  ConvContext conv = Conv3x3(2, 56, 64, 128);
  ASSERT_TRUE(Validate(conv).ok());
  EXPECT_EQ(conv.P(), 56);
  EXPECT_EQ(conv.Q(), 56);
  GemmShape g = ImplicitGemm(conv);
  EXPECT_EQ(g.m, 2 * 56 * 56);
  EXPECT_EQ(g.n, 128);
  EXPECT_EQ(g.k, 64 * 9);
  EXPECT_DOUBLE_EQ(Flops(conv), 2.0 * g.m * g.n * g.k);
  EXPECT_DOUBLE_EQ(MinBytes(conv),
                   4.0 * (2 * 56 * 56 * 64 + 128 * 9 * 64 + 2 * 56 * 56 * 128));

  conv.stride_h = conv.stride_w = 2;
  conv.dilation_h = 2;
  conv.pad_h = 2;
  ASSERT_TRUE(Validate(conv).ok());
  EXPECT_EQ(conv.P(), (56 + 4 - 2 * 2 - 1) / 2 + 1);
  EXPECT_EQ(conv.Q(), (56 + 2 - 2 - 1) / 2 + 1);
}

TEST(ConvContextTest, RejectsBadWindows) {
  ConvContext conv = Conv3x3(1, 56, 64, 64);
  conv.stride_h = 0;
  EXPECT_EQ(Validate(conv).message(),
            "conv.stride_h must be in [1, 65535], got 0");
  conv = Conv3x3(1, 2, 64, 64);
  conv.pad_h = conv.pad_w = 0;  // a 3x3 filter does not fit a 2x2 image
  EXPECT_THAT(Validate(conv).message(),
              HasSubstr("filter height dilation_h*(r-1)+1 = 3 must be at most "
                        "h+2*pad_h = 2"));
  conv = Conv3x3(1, 56, 64, 64);
  conv.pad_w = -1;
  EXPECT_THAT(Validate(conv).message(), HasSubstr("conv.pad_w must be in [0,"));
  conv = Conv3x3(kMaxDim, kMaxDim, kMaxDim, 1);
  EXPECT_THAT(Validate(conv).message(), HasSubstr("elements of the input"));
}

TEST(ContextStringTest, RoundTripsAndValidates) {
  GemmContext g = Gemm(4096, 16, 4096);
  g.layout_b = Layout::kT;
  EXPECT_EQ(ToString(g), "gemm m=4096 n=16 k=4096 layout=NT dtype=fp32");
  auto parsed = ContextFromString(ToString(g));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(std::get<GemmContext>(*parsed), g);

  ConvContext conv = Conv3x3(1, 56, 64, 64);
  conv.stride_w = 2;
  auto parsed_conv = ContextFromString(ToString(conv));
  ASSERT_TRUE(parsed_conv.ok()) << parsed_conv.status().ToString();
  EXPECT_EQ(std::get<ConvContext>(*parsed_conv), conv);

  auto square = ContextFromString(
      "conv n=1 h=8 w=8 c=4 k=4 r=3 s=3 pad=1 stride=1 dilation=1 dtype=fp32");
  ASSERT_TRUE(square.ok());
  EXPECT_EQ(std::get<ConvContext>(*square).pad_w, 1);

  int64_t h = 0, w = 0;
  EXPECT_TRUE(ParseWindowPair("--pad", "2,1", &h, &w).ok());
  EXPECT_EQ(h, 2);
  EXPECT_EQ(w, 1);
  EXPECT_TRUE(ParseWindowPair("--pad", "3", &h, &w).ok());
  EXPECT_EQ(w, 3);
  EXPECT_THAT(ParseWindowPair("--pad", "3,", &h, &w).message(),
              HasSubstr("--pad must be an integer, or two"));
  EXPECT_FALSE(ContextFromString("").ok());
  EXPECT_FALSE(ContextFromString("gemm m=1 n=1 k=1 layout=NX dtype=fp32").ok());
  EXPECT_FALSE(ContextFromString("gemm m=1 n=1 layout=NN dtype=fp32").ok());
  EXPECT_FALSE(ContextFromString("gemm m=0 n=1 k=1 layout=NN dtype=fp32").ok());
  EXPECT_FALSE(
      ContextFromString("gemm m=1 n=1 k=1 k=2 layout=NN dtype=fp32").ok());
  EXPECT_FALSE(ContextFromString("gemm m=1x n=1 k=1 layout=NN dtype=fp32").ok());
  EXPECT_FALSE(ContextFromString("fft n=4").ok());
}

}  // namespace
}  // namespace blocktune
