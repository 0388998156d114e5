#include "tuner/measurement.h"

#include <cmath>

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<SampleStatus, 5> kSampleStatusNames{
    {{SampleStatus::kOk, "ok"},
     {SampleStatus::kCompileError, "compile_error"},
     {SampleStatus::kLaunchError, "launch_error"},
     {SampleStatus::kTimeout, "timeout"},
     {SampleStatus::kWrongResult, "wrong_result"}}};

Status CheckReal(std::string_view field, double value, double hi) {
  if (std::isfinite(value) && value >= 0 && value <= hi) return OkStatus();
  return InvalidArgument(std::string(field) + " must be a number in [0, " +
                         std::to_string(hi) + "], got " +
                         std::to_string(value));
}

}  // namespace

std::string_view ToString(SampleStatus status) {
  return EnumToString(kSampleStatusNames, status);
}

StatusOr<SampleStatus> SampleStatusFromString(std::string_view text,
                                              std::string_view field) {
  return EnumFromString(kSampleStatusNames, text, field);
}

Status Validate(const Measurement& m, std::string_view field) {
  BT_RETURN_IF_ERROR(CheckReal(JoinField(field, "median_s"), m.median_s, 3600));
  BT_RETURN_IF_ERROR(CheckReal(JoinField(field, "spread"), m.spread, 1e6));
  BT_RETURN_IF_ERROR(
      CheckReal(JoinField(field, "sm_clock_mhz"), m.sm_clock_mhz, 100000));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "repetitions"), m.repetitions,
                                0, int64_t{1} << 40));
  if (m.status == SampleStatus::kOk) {
    if (m.median_s <= 0) {
      return InvalidArgument(JoinField(field, "median_s") +
                             " must be > 0 for status ok");
    }
    if (m.repetitions < 1) {
      return InvalidArgument(JoinField(field, "repetitions") +
                             " must be >= 1 for status ok");
    }
  }
  if (m.error.size() > 65536) {
    return InvalidArgument(JoinField(field, "error") +
                           " must be at most 65536 bytes");
  }
  return OkStatus();
}

}  // namespace blocktune
