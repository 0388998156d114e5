#include "proto/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace blocktune {
namespace {

using ::testing::HasSubstr;

TEST(ConvertTest, ContextRoundTrips) {
  ConvContext conv;
  conv.n = 2;
  conv.h = conv.w = 28;
  conv.c = 32;
  conv.k = 48;
  conv.r = conv.s = 3;
  conv.pad_h = 1;
  conv.stride_w = 2;
  v1::Context p;
  ToProto(Context(conv), &p);
  auto back = FromProto(p, "context");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(std::get<ConvContext>(*back), conv);

  GemmContext g;
  g.m = 7;
  g.n = 9;
  g.k = 11;
  g.layout_a = Layout::kT;
  p.Clear();
  ToProto(Context(g), &p);
  back = FromProto(p, "context");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<GemmContext>(*back), g);
}

TEST(ConvertTest, ErrorsNameTheFieldPath) {
  v1::Context p;
  EXPECT_THAT(FromProto(p, "queries[3].context").status().message(),
              HasSubstr("queries[3].context is required"));
  p.mutable_gemm()->set_m(16);
  p.mutable_gemm()->set_n(16);
  p.mutable_gemm()->set_k(16);
  p.mutable_gemm()->set_layout_a(v1::LAYOUT_N);
  p.mutable_gemm()->set_layout_b(static_cast<v1::Layout>(7));
  p.mutable_gemm()->set_dtype(v1::DTYPE_FP32);
  EXPECT_EQ(FromProto(p, "context").status().message(),
            "context.gemm.layout_b must be one of N, T; got 7");
  p.mutable_gemm()->set_layout_b(v1::LAYOUT_T);
  p.mutable_gemm()->set_dtype(static_cast<v1::DType>(9));
  EXPECT_THAT(FromProto(p, "context").status().message(),
              HasSubstr("context.gemm.dtype must be one of fp32, tf32, fp16, "
                        "bf16, fp64; got 9"));
  // A client older than precisions sends none: fp32.
  p.mutable_gemm()->set_dtype(v1::DTYPE_UNSPECIFIED);
  auto old_client = FromProto(p, "context");
  ASSERT_TRUE(old_client.ok()) << old_client.status().ToString();
  EXPECT_EQ(DTypeOf(*old_client), DType::kFp32);
  p.mutable_gemm()->set_dtype(v1::DTYPE_TF32);
  auto tf32 = FromProto(p, "context");
  ASSERT_TRUE(tf32.ok()) << tf32.status().ToString();
  EXPECT_EQ(DTypeOf(*tf32), DType::kTf32);
  p.mutable_gemm()->set_dtype(v1::DTYPE_FP32);
  p.mutable_gemm()->set_k(-5);
  EXPECT_EQ(FromProto(p, "context").status().message(),
            "context.gemm.k must be in [1, 2147483647], got -5");
}

TEST(ConvertTest, CampaignSpecAndDevice) {
  v1::CampaignSpec p;
  p.set_op(v1::OP_CONV);
  p.set_dtype(v1::DTYPE_FP32);
  p.set_minutes(20);
  auto spec = FromProto(p, "spec");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->op, Op::kConv);
  p.set_minutes(0);
  EXPECT_THAT(FromProto(p, "spec").status().message(),
              HasSubstr("a campaign needs a budget"));

  v1::DeviceFingerprint d;
  EXPECT_THAT(FromProto(d, "device").status().message(),
              HasSubstr("device.name"));
}

}  // namespace
}  // namespace blocktune
