#include "kernels/block_shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/gemm_ptx.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;

BlockShape Shape(int64_t ml, int64_t nl, int64_t ms, int64_t ns, int64_t u,
                 int64_t kg) {
  BlockShape xb;
  xb.ml = ml;
  xb.nl = nl;
  xb.ms = ms;
  xb.ns = ns;
  xb.u = u;
  xb.kg = kg;
  return xb;
}

TEST(BlockShapeTest, ThreadsAndValidation) {
  BlockShape xb = Shape(128, 64, 8, 4, 8, 1);
  EXPECT_TRUE(Validate(xb).ok());
  EXPECT_EQ(xb.ThreadsPerProgram(), 16 * 16);

  EXPECT_EQ(Validate(Shape(0, 64, 1, 1, 8, 1)).message(),
            "block_shape.ml must be in [1, 1024], got 0");
  EXPECT_THAT(Validate(Shape(64, 64, 128, 4, 8, 1)).message(),
              HasSubstr("block_shape.ms must be in [1, 64], got 128"));
  EXPECT_THAT(Validate(Shape(64, 64, 3, 4, 8, 1)).message(),
              HasSubstr("must be a multiple of block_shape.ms (3)"));
  EXPECT_THAT(Validate(Shape(1024, 1024, 1, 1, 8, 1)).message(),
              HasSubstr("threads per program"));
  EXPECT_THAT(Validate(Shape(64, 64, 4, 4, 0, 1)).message(),
              HasSubstr("block_shape.u must be in [1, 256]"));
  EXPECT_THAT(Validate(Shape(64, 64, 4, 4, 8, -1), "x_B").message(),
              HasSubstr("x_B.kg must be in [1, 65535], got -1"));
}

TEST(BlockShapeTest, ProgramsInGridRoundsUpAndCountsSplits) {
  GemmContext g;
  g.m = 4096;
  g.n = 16;
  g.k = 4096;
  EXPECT_EQ(ProgramsInGrid(g, Shape(64, 16, 4, 4, 8, 1)), 64);
  EXPECT_EQ(ProgramsInGrid(g, Shape(100, 32, 4, 4, 8, 4)), 41 * 1 * 4);
  ConvContext conv;
  conv.n = 1;
  conv.h = conv.w = 56;
  conv.c = conv.k = 64;
  conv.r = conv.s = 3;
  conv.pad_h = conv.pad_w = 1;
  EXPECT_EQ(ProgramsInGrid(conv, Shape(64, 64, 4, 4, 8, 2)), 49 * 1 * 2);
}

TEST(BlockShapeTest, StringRoundTrip) {
  BlockShape xb = Shape(64, 32, 4, 2, 8, 4);
  EXPECT_EQ(ToString(xb), "ML=64 NL=32 MS=4 NS=2 U=8 KG=4");
  auto parsed = BlockShapeFromString(ToString(xb));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, xb);
  EXPECT_FALSE(BlockShapeFromString("ML=64 NL=32 MS=4 NS=2 U=8").ok());
  EXPECT_FALSE(BlockShapeFromString("ML=64 NL=32 MS=4 NS=2 U=8 KG=x").ok());
  EXPECT_FALSE(BlockShapeFromString("ML=64 ML=32 MS=4 NS=2 U=8 KG=1").ok());
  EXPECT_FALSE(BlockShapeFromString("ML=64 NL=32 MS=5 NS=2 U=8 KG=1").ok());
}

TEST(BlockShapeTest, StagesParseValidateAndDefaultToOne) {
  // ST= is optional (absent: 1, the register-staged kernel of version 1)
  // and printed only where it is not 1, so version-1 text reads the same.
  auto one = BlockShapeFromString("ML=64 NL=32 MS=4 NS=2 U=8 KG=4");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->st, 1);
  auto three = BlockShapeFromString("ML=64 NL=32 MS=4 NS=2 U=8 KG=4 st=3");
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->st, 3);
  EXPECT_EQ(ToString(*three), "ML=64 NL=32 MS=4 NS=2 U=8 KG=4 ST=3");
  EXPECT_FALSE(*three == *one);
  BlockShape bad = *three;
  bad.st = 9;
  EXPECT_EQ(Validate(bad).message(), "block_shape.st must be in [1, 8], got 9");
  // The family's parameters carry ST seventh; six values mean ST = 1.
  EXPECT_EQ(ToParams(*three).size, 7);
  EXPECT_EQ(ToBlockShape(ToParams(*three)), *three);
  Params six = ToParams(*three);
  six.size = 6;
  EXPECT_EQ(ToBlockShape(six).st, 1);
}

TEST(BlockShapeTest, StagesEmitACpAsyncPipelineOnSm80AndLater) {
  GemmContext g;
  g.m = 100;
  g.n = 72;
  g.k = 300;
  BlockShape xb = Shape(64, 64, 4, 4, 8, 1);
  auto reg = GenerateGemm(g, xb, "sm_90");
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->ptx.find("cp.async"), std::string::npos);
  xb.st = 3;
  auto async = GenerateGemm(g, xb, "sm_90");
  ASSERT_TRUE(async.ok()) << async.status().ToString();
  EXPECT_THAT(async->ptx, HasSubstr("cp.async.commit_group;"));
  EXPECT_THAT(async->ptx, HasSubstr("cp.async.wait_group 1;"));
  EXPECT_THAT(async->ptx, HasSubstr("cp.async.wait_all;"));
  // Three buffers of U rows of (M_L + pad) floats, where ST = 1 has two.
  EXPECT_EQ(GemmSharedBytes(xb) * 2, GemmSharedBytes(Shape(64, 64, 4, 4, 8, 1)) * 3);
  // Layout T puts A's vectors whole into shared rows: 16-byte copies;
  // layout N transposes them: 4-byte copies.
  g.layout_a = Layout::kT;
  g.m = 128;
  auto whole = GenerateGemm(g, xb, "sm_90");
  ASSERT_TRUE(whole.ok());
  EXPECT_THAT(whole->ptx, HasSubstr("cp.async.cg.shared.global"));
  EXPECT_THAT(async->ptx, HasSubstr("cp.async.ca.shared.global"));

  // cp.async needs sm_80: the generator and the async_copy rule say so.
  auto old = GenerateGemm(g, xb, "sm_75");
  EXPECT_EQ(old.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(old.status().message(), HasSubstr("sm_80 or later"));
  KernelLimits volta;
  volta.compute_capability = 70;
  EXPECT_EQ(FirstFailingHardwareRule(g, xb, volta), HardwareRule::kAsyncCopy);
  EXPECT_THAT(CanImplement(g, xb, volta).message(),
              HasSubstr("compute capability >= 8.0; this device has 7.0"));
  xb.st = 1;
  EXPECT_TRUE(CanImplement(g, xb, volta).ok());
}

}  // namespace
}  // namespace blocktune

namespace blocktune {
namespace {

TEST(StatusTest, CodesRoundTripAndAnnotate) {
  for (int c = 0; c <= 16; ++c) {
    auto code = static_cast<StatusCode>(c);
    EXPECT_EQ(StatusCodeFromString(ToString(code)), code);
  }
  EXPECT_EQ(StatusCodeFromString("NOPE"), std::nullopt);
  Status s = InvalidArgument("m must be in [1, 8]").Annotate("queries[2]");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: queries[2]: m must be in [1, 8]");
  StatusOr<int> bad = NotFound("x");
  EXPECT_FALSE(bad.ok());
  StatusOr<int> good = 3;
  EXPECT_EQ(*good, 3);
}

}  // namespace
}  // namespace blocktune
