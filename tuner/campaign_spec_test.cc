#include "tuner/campaign_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tuner/measurement.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;

TEST(CampaignSpecTest, NeedsABudgetAndBoundedFields) {
  CampaignSpec spec;
  spec.minutes = 20;
  EXPECT_TRUE(Validate(spec).ok());
  spec.minutes = 0;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("a campaign needs a budget"));
  spec.max_samples = 1000;
  EXPECT_TRUE(Validate(spec).ok());
  spec.gpu = 64;
  EXPECT_EQ(Validate(spec).message(), "spec.gpu must be in [0, 63], got 64");
  spec.gpu = 0;
  spec.minutes = -1;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("spec.minutes must be in"));
}

TEST(CampaignSpecTest, StatesRoundTrip) {
  for (auto s : {CampaignState::kQueued, CampaignState::kRunning,
                 CampaignState::kDone, CampaignState::kCancelled,
                 CampaignState::kFailed}) {
    EXPECT_EQ(*CampaignStateFromString(ToString(s)), s);
  }
  EXPECT_FALSE(IsTerminal(CampaignState::kRunning));
  EXPECT_TRUE(IsTerminal(CampaignState::kCancelled));
}

TEST(MeasurementTest, OkNeedsATimeFailuresNeedNone) {
  Measurement m;
  EXPECT_THAT(Validate(m).message(), HasSubstr("median_s must be > 0"));
  m.median_s = 1e-4;
  m.repetitions = 50;
  EXPECT_TRUE(Validate(m).ok());
  m.median_s = std::nan("");
  EXPECT_THAT(Validate(m).message(), HasSubstr("median_s must be a number"));
  Measurement failed;
  failed.status = SampleStatus::kWrongResult;
  EXPECT_TRUE(Validate(failed).ok());
  EXPECT_EQ(*SampleStatusFromString("wrong_result"), SampleStatus::kWrongResult);
}

}  // namespace
}  // namespace blocktune
