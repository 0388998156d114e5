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
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "gpus size"),
                                static_cast<int64_t>(spec.gpus.size()), 0,
                                kMaxGpuIndex + 1));
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    const std::string name =
        JoinField(field, "gpus[" + std::to_string(i) + "]");
    BT_RETURN_IF_ERROR(CheckRange(name, spec.gpus[i], 0, kMaxGpuIndex));
    for (size_t j = 0; j < i; ++j) {
      if (spec.gpus[j] == spec.gpus[i]) {
        return InvalidArgument(name + " repeats GPU " +
                               std::to_string(spec.gpus[i]));
      }
    }
  }
  if (spec.sampler != "bayes" && spec.sampler != "uniform") {
    return InvalidArgument(JoinField(field, "sampler") +
                           " must be bayes or uniform, got " +
                           Quoted(spec.sampler));
  }
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
