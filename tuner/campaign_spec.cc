#include "tuner/campaign_spec.h"

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<CampaignState, 5> kCampaignStateNames{
    {{CampaignState::kQueued, "queued"},
     {CampaignState::kRunning, "running"},
     {CampaignState::kDone, "done"},
     {CampaignState::kCancelled, "cancelled"},
     {CampaignState::kFailed, "failed"}}};

}  // namespace

Status Validate(const CampaignSpec& spec, std::string_view field) {
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "gpu"), spec.gpu, 0, kMaxGpuIndex));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "minutes"), spec.minutes, 0,
                                kMaxCampaignMinutes));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "max_samples"),
                                spec.max_samples, 0, kMaxCampaignSamples));
  if (spec.minutes == 0 && spec.max_samples == 0) {
    return InvalidArgument(
        std::string(field) + ": a campaign needs a budget: " +
        JoinField(field, "minutes") + " in [1, " +
        std::to_string(kMaxCampaignMinutes) + "] or " +
        JoinField(field, "max_samples") + " in [1, " +
        std::to_string(kMaxCampaignSamples) + "]");
  }
  return CheckText(JoinField(field, "label"), spec.label, 0, 128);
}

std::string_view ToString(CampaignState state) {
  return EnumToString(kCampaignStateNames, state);
}

StatusOr<CampaignState> CampaignStateFromString(std::string_view text,
                                                std::string_view field) {
  return EnumFromString(kCampaignStateNames, text, field);
}

bool IsTerminal(CampaignState state) {
  return state == CampaignState::kDone || state == CampaignState::kCancelled ||
         state == CampaignState::kFailed;
}

}  // namespace blocktune
