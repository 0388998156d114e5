#include "tuner/campaign_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

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
  spec.gpus = {64};
  EXPECT_EQ(Validate(spec).message(), "spec.gpus[0] must be in [0, 63], got 64");
  spec.gpus = {1, 1};
  EXPECT_EQ(Validate(spec).message(), "spec.gpus[1] repeats GPU 1");
  spec.gpus = {0, 1};
  spec.sampler = "random";
  EXPECT_EQ(Validate(spec).message(),
            "spec.sampler must be bayes, uniform or guided, got 'random'");
  spec.sampler = "uniform";
  spec.minutes = -1;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("spec.minutes must be in"));
}

TEST(CampaignSpecTest, WorkBoundsNameTheFieldAndTheRange) {
  CampaignSpec spec;
  spec.max_samples = 10;
  EXPECT_EQ(WorkOf(spec).min_flops, 0);
  EXPECT_EQ(WorkOf(spec).max_flops, kDefaultMaxFlops);
  spec.min_flops = 0x1p36;  // at the default cap: nothing could be drawn
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("spec.min_flops must be in [0, spec.max_flops = "
                        "6.87195e+10), got 6.87195e+10"));
  spec.max_flops = 0x1p40;
  EXPECT_TRUE(Validate(spec).ok());
  EXPECT_EQ(WorkOf(spec).min_flops, 0x1p36);
  EXPECT_EQ(WorkOf(spec).max_flops, 0x1p40);
  spec.max_flops = 0x1p51;
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("spec.max_flops must be 0 (the default"));
  spec.max_flops = -1;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("spec.max_flops must be"));
  spec.max_flops = 0x1p40;
  spec.min_flops = -5;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("spec.min_flops must be"));
  spec.min_flops = std::nan("");
  EXPECT_THAT(Validate(spec).message(), HasSubstr("spec.min_flops must be"));
  spec.min_flops = 0;
  spec.retune_stale = true;
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("a retune_stale campaign re-measures stored ones"));
}

TEST(CampaignSpecTest, FamiliesMustImplementTheOpAndDtype) {
  CampaignSpec spec;
  spec.max_samples = 10;
  spec.dtype = DType::kBf16;
  spec.families = {"gemm.mma"};
  EXPECT_TRUE(Validate(spec).ok());
  spec.families = {"GEMM.MMA"};  // names are case-insensitive
  EXPECT_TRUE(Validate(spec).ok());
  // An fp32 family for a bf16 campaign: the old "bf16 label on an fp32
  // measurement" defect, refused naming the field and the allowed ones.
  spec.families = {"gemm.mma", "gemm.ffma"};
  EXPECT_EQ(Validate(spec).message(),
            "spec.families[1] must be one of the gemm families that implement "
            "bf16: gemm.mma, gemm.wgmma, gemm.mma_pk, gemm.wgmma_pk, gemm.wgmma_ps, gemm.wgmma_ts, gemm.wgmma_sc; "
            "got "
            "'gemm.ffma', which "
            "does not implement bf16");
  spec.families = {"conv.ffma"};
  spec.dtype = DType::kFp32;
  EXPECT_EQ(Validate(spec).message(),
            "spec.families[0] must be one of the gemm families that implement "
            "fp32: gemm.ffma, gemm.gemv, gemm.ffma_k, gemm.ffma_kpk; got 'conv.ffma', a conv family");
  spec.families = {"gemm.nope"};
  EXPECT_THAT(Validate(spec).message(),
              HasSubstr("spec.families[0] must be one of the gemm families "
                        "that implement fp32: gemm.ffma, gemm.gemv, gemm.ffma_k, gemm.ffma_kpk; got "
                        "'gemm.nope', "
                        "which is no registered family"));
  spec.families = {"gemm.ffma", "Gemm.Ffma"};
  EXPECT_EQ(Validate(spec).message(),
            "spec.families[1] repeats family 'Gemm.Ffma'");
  spec.families = {"gemm.ffma"};
  EXPECT_TRUE(Validate(spec).ok());
}

TEST(CampaignSpecTest, ARetuneMayRunWithoutABudget) {
  CampaignSpec spec;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("a campaign needs a budget"));
  spec.retune_stale = true;
  EXPECT_TRUE(Validate(spec).ok());
  spec.max_samples = -1;
  EXPECT_THAT(Validate(spec).message(), HasSubstr("spec.max_samples"));
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
