// The fallback's rules (FitsContext, DefaultBlockShape) against the rules
// they were written as before they came from the kernel family: a split
// leaves every program a reduction step, the hardware rules hold, and the
// default is the first fitting of six moderate block shapes.
#include "server/fallback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "models/test_configs.h"
#include "tuner/device_profile.h"

namespace blocktune {
namespace {

using testing::RandomBlockShape;
using testing::RandomContext;

bool ReferenceFits(const Context& ctx, const BlockShape& xb,
                   const KernelLimits& limits) {
  if (xb.kg > 1 && xb.kg * xb.u > ImplicitGemm(ctx).k) return false;
  return FirstFailingHardwareRule(ctx, xb, limits) == HardwareRule::kNone;
}

StatusOr<BlockShape> ReferenceDefault(const Context& ctx,
                                      const KernelLimits& limits) {
  static constexpr BlockShape kDefaults[] = {
      {64, 64, 4, 4, 8, 1},  {32, 64, 2, 4, 8, 1}, {32, 32, 2, 2, 8, 1},
      {128, 32, 4, 2, 8, 1}, {16, 16, 1, 1, 4, 1}, {256, 16, 4, 1, 4, 1},
  };
  for (const BlockShape& xb : kDefaults)
    if (ReferenceFits(ctx, xb, limits)) return xb;
  return FailedPrecondition("none fits");
}

TEST(FallbackTest, FitsAndDefaultFollowTheirRules) {
  std::mt19937_64 rng(17);
  int fits = 0, defaults = 0;
  // The devices, and two with little shared memory, where the first
  // defaults do not fit.
  std::vector<std::pair<std::string, KernelLimits>> devices;
  for (const char* device : {"h100-sxm", "a100", "v100"})
    devices.emplace_back(device, ProfileByName(device).value().Limits());
  for (int64_t bytes : {5000, 2000}) {
    KernelLimits small = devices.front().second;
    small.max_static_shared_bytes = bytes;
    devices.emplace_back(std::to_string(bytes) + " B of shared memory", small);
  }
  for (const auto& [device, limits] : devices) {
    for (int i = 0; i < 4000; ++i) {
      const Context ctx = RandomContext(rng);
      const BlockShape xb = RandomBlockShape(rng, /*pow2=*/true);
      const bool want = ReferenceFits(ctx, xb, limits);
      EXPECT_EQ(FitsContext(ctx, xb, limits), want)
          << ToString(ctx) << " " << ToString(xb) << " on " << device;
      fits += want;
      const StatusOr<BlockShape> got = DefaultBlockShape(ctx, limits);
      const StatusOr<BlockShape> expected = ReferenceDefault(ctx, limits);
      ASSERT_EQ(got.ok(), expected.ok()) << ToString(ctx) << " on " << device;
      if (got.ok()) {
        EXPECT_EQ(*got, *expected) << ToString(ctx) << " on " << device;
        defaults += !(*got == BlockShape{64, 64, 4, 4, 8, 1});
      }
    }
  }
  // Both outcomes occur, and defaults other than the first.
  EXPECT_GT(fits, 100);
  EXPECT_LT(fits, 19900);
  EXPECT_GT(defaults, 1000);
  std::printf("fits %d of 20000; %d defaults other than the first\n", fits,
              defaults);
}

TEST(FallbackTest, NoDefaultIsFailedPrecondition) {
  GemmContext g;
  g.m = 1;
  g.n = kMaxDim;  // ceil(N / N_L) > 65535 for every default
  g.k = 1;
  const StatusOr<BlockShape> xb =
      DefaultBlockShape(g, ProfileByName("h100-sxm").value().Limits());
  ASSERT_FALSE(xb.ok());
  EXPECT_EQ(xb.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(xb.status().message().find("grid"), std::string::npos)
      << xb.status().message();
}

// Issue 19: the nearest context is of the same precision. Before, an fp32
// answer of the very same shape was "nearest" (distance 0) for a bf16 query.
TEST(FallbackTest, NearestNeverCrossesPrecisions) {
  GemmContext fp32{4096, 16, 4096, Layout::kN, Layout::kT, DType::kFp32};
  GemmContext bf16 = fp32;
  bf16.dtype = DType::kBf16;
  EXPECT_EQ(ContextDistance(fp32, fp32), 0);
  EXPECT_TRUE(std::isinf(ContextDistance(fp32, bf16)));

  const KernelLimits limits = ProfileByName("h100").value().Limits();
  TunedRecord stored;
  stored.device.name = "NVIDIA H100 80GB HBM3";
  stored.context = fp32;
  stored.kernel = KernelConfig::OfBlockShape(Op::kGemm, {64, 16, 4, 1, 8, 1});
  stored.measured_s = 1e-4;
  auto limits_of = [&](const DeviceFingerprint&) { return limits; };
  EXPECT_FALSE(NearestTuned({stored}, bf16, limits_of).has_value());
  EXPECT_TRUE(NearestTuned({stored}, fp32, limits_of).has_value());

  // A bf16 answer of gemm.mma is nearest for a bf16 query, and only when
  // its family is asked for (or any).
  const KernelFamily& mma = **FindFamily("gemm.mma");
  GemmContext near = bf16;
  near.m = 8192;
  TunedRecord mma_answer = stored;
  mma_answer.context = near;
  mma_answer.kernel = KernelConfig::Current(mma, *mma.Default(Problem(near), limits));
  auto found = NearestTuned({stored, mma_answer}, bf16, limits_of);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->kernel.family, "gemm.mma");
  EXPECT_FALSE(NearestTuned({stored, mma_answer}, bf16, limits_of, "gemm.ffma"));

  // The default of a precision is its family's.
  auto fallback = DefaultKernel(bf16, limits);
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_EQ(fallback->family, "gemm.mma");
  GemmContext fp64 = fp32;
  fp64.dtype = DType::kFp64;
  EXPECT_FALSE(DefaultKernel(fp64, limits).ok());
}

}  // namespace
}  // namespace blocktune
