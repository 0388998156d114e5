#include "tuner/campaign_spec.h"

#include <cstdio>

#include "kernels/family.h"
#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<CampaignState, 5> kCampaignStateNames{
    {{CampaignState::kQueued, "queued"},
     {CampaignState::kRunning, "running"},
     {CampaignState::kDone, "done"},
     {CampaignState::kCancelled, "cancelled"},
     {CampaignState::kFailed, "failed"}}};

// spec.families: registered families of the op that implement the dtype,
// each once. Which of them the campaign's GPU can run is the scheduler's
// check (it knows the GPU).
Status ValidateFamilies(const CampaignSpec& spec, std::string_view field) {
  std::string allowed;
  for (const KernelFamily* f : FamiliesFor(spec.op, spec.dtype))
    allowed += (allowed.empty() ? "" : ", ") + std::string(f->name());
  if (allowed.empty()) allowed = "none in this build";
  const std::string what = "the " + std::string(ToString(spec.op)) +
                           " families that implement " +
                           std::string(ToString(spec.dtype)) + ": " + allowed;
  for (size_t i = 0; i < spec.families.size(); ++i) {
    const std::string name =
        JoinField(field, "families[" + std::to_string(i) + "]");
    auto family = FindFamily(spec.families[i]);
    if (!family.ok()) {
      return InvalidArgument(name + " must be one of " + what + "; got " +
                             Quoted(spec.families[i]) +
                             ", which is no registered family");
    }
    const KernelFamily& f = **family;
    if (f.op() != spec.op || !f.Implements(spec.dtype)) {
      return InvalidArgument(
          name + " must be one of " + what + "; got " + Quoted(f.name()) +
          (f.op() != spec.op
               ? ", a " + std::string(ToString(f.op())) + " family"
               : ", which does not implement " +
                     std::string(ToString(spec.dtype))));
    }
    for (size_t j = 0; j < i; ++j) {
      if (EqualsIgnoreCase(spec.families[j], spec.families[i])) {
        return InvalidArgument(name + " repeats family " +
                               Quoted(spec.families[i]));
      }
    }
  }
  return OkStatus();
}

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// spec.min_flops and spec.max_flops: finite, max_flops 0 (the default) or
// in [1, 2^50], min_flops below the effective maximum; a retune_stale
// campaign draws nothing, so it takes neither.
Status ValidateWork(const CampaignSpec& spec, std::string_view field) {
  const std::string max_name = JoinField(field, "max_flops");
  const std::string min_name = JoinField(field, "min_flops");
  if (!(spec.max_flops == 0 ||
        (spec.max_flops >= 1 && spec.max_flops <= kMaxCampaignFlops))) {
    return InvalidArgument(max_name + " must be 0 (the default, 2^36 = " +
                           FormatDouble(kDefaultMaxFlops) +
                           ") or in [1, 2^50 = " +
                           FormatDouble(kMaxCampaignFlops) + "], got " +
                           FormatDouble(spec.max_flops));
  }
  const double max = WorkOf(spec).max_flops;
  if (!(spec.min_flops >= 0 && spec.min_flops < max)) {
    return InvalidArgument(min_name + " must be in [0, " + max_name + " = " +
                           FormatDouble(max) + "), got " +
                           FormatDouble(spec.min_flops) +
                           " (no context could be drawn)");
  }
  if (spec.retune_stale && (spec.min_flops != 0 || spec.max_flops != 0)) {
    return InvalidArgument(
        min_name + " and " + max_name +
        " bound the contexts a campaign draws; a retune_stale campaign "
        "re-measures stored ones: leave both 0");
  }
  return OkStatus();
}

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
  if (spec.sampler != "bayes" && spec.sampler != "uniform" &&
      spec.sampler != "guided") {
    return InvalidArgument(JoinField(field, "sampler") +
                           " must be bayes, uniform or guided, got " +
                           Quoted(spec.sampler));
  }
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "minutes"), spec.minutes, 0,
                                kMaxCampaignMinutes));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "max_samples"),
                                spec.max_samples, 0, kMaxCampaignSamples));
  // A retune re-measures a finite list, so it may run to its end.
  if (spec.minutes == 0 && spec.max_samples == 0 && !spec.retune_stale) {
    return InvalidArgument(
        std::string(field) + ": a campaign needs a budget: " +
        JoinField(field, "minutes") + " in [1, " +
        std::to_string(kMaxCampaignMinutes) + "] or " +
        JoinField(field, "max_samples") + " in [1, " +
        std::to_string(kMaxCampaignSamples) +
        "] (only a retune_stale campaign may have neither: it re-measures "
        "every stale sample)");
  }
  if (IsGuided(spec) && spec.retune_stale) {
    return InvalidArgument(
        JoinField(field, "sampler") +
        " guided and retune_stale exclude each other: a retune re-measures "
        "stale samples, a guided campaign the models' answers");
  }
  if (IsGuided(spec) && spec.max_samples == 0) {
    return InvalidArgument(
        JoinField(field, "max_samples") +
        " must be in [1, " + std::to_string(kMaxCampaignSamples) +
        "] for a guided campaign: it plans that many of the models' answers "
        "at its start");
  }
  BT_RETURN_IF_ERROR(ValidateFamilies(spec, field));
  BT_RETURN_IF_ERROR(ValidateWork(spec, field));
  return CheckText(JoinField(field, "label"), spec.label, 0, 128);
}

WorkBounds WorkOf(const CampaignSpec& spec) {
  WorkBounds w;
  w.min_flops = spec.min_flops;
  if (spec.max_flops > 0) w.max_flops = spec.max_flops;
  return w;
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
