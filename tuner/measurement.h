// The outcome of benchmarking one (x_B, x_C) pair (DESIGN.md, "Measuring a
// kernel"). A failure is a recorded outcome with its reason, never an error
// and never a fast sample (CUTLASS's Disposition apart from Status).
#ifndef BLOCKTUNE_TUNER_MEASUREMENT_H_
#define BLOCKTUNE_TUNER_MEASUREMENT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/status.h"

namespace blocktune {

enum class SampleStatus {
  kOk,
  kCompileError,  // ptxas or the JIT rejected the generated PTX
  kLaunchError,   // the driver refused the launch, or the kernel faulted
  kTimeout,       // the watchdog killed the worker
  kWrongResult,   // the output did not match the reference
};

std::string_view ToString(SampleStatus status);
StatusOr<SampleStatus> SampleStatusFromString(std::string_view text,
                                              std::string_view field = "status");

struct Measurement {
  SampleStatus status = SampleStatus::kOk;
  double median_s = 0;      // median time of one launch (kOk only)
  double spread = 0;        // (p90 - p10) / median over the repetitions
  int64_t repetitions = 0;  // timed launches behind the median
  double sm_clock_mhz = 0;  // SM clock read next to the timing, 0 if unknown
  std::string error;        // driver message or compile log for failures
};

// A kOk measurement needs a positive finite time and at least one
// repetition; every measurement needs finite, non-negative numbers.
Status Validate(const Measurement& m, std::string_view field = "measurement");

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_MEASUREMENT_H_
