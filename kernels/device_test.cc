#include "kernels/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace blocktune {
namespace {

using ::testing::HasSubstr;

DeviceFingerprint H100() {
  DeviceFingerprint d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.memory_bytes = int64_t{85} << 30;
  d.sm_clock_mhz = 1980;
  d.memory_clock_mhz = 2619;
  d.driver_version = "13.0";
  d.cuda_version = "13.0";
  d.ptxas_version = "13.0.48";
  return d;
}

TEST(DeviceFingerprintTest, ValidatesAndPrints) {
  DeviceFingerprint d = H100();
  EXPECT_TRUE(Validate(d).ok());
  EXPECT_EQ(d.Arch(), "sm_90");
  EXPECT_THAT(ToString(d), HasSubstr("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs"));

  d.sm_count = 0;
  EXPECT_EQ(Validate(d).message(),
            "device.sm_count must be in [1, 4096], got 0");
  d = H100();
  d.name = "";
  EXPECT_THAT(Validate(d).message(), HasSubstr("device.name must have 1 to"));
  d = H100();
  d.ptxas_version = "13\n0";
  EXPECT_THAT(Validate(d).message(), HasSubstr("printable"));
}

TEST(DeviceFingerprintTest, EqualityCoversEveryField) {
  DeviceFingerprint a = H100(), b = H100();
  EXPECT_EQ(a, b);
  b.driver_version = "13.1";
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace blocktune
