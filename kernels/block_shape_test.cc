#include "kernels/block_shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
