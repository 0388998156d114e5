// The device fingerprint: everything a measurement's validity depends on.
// A sample, a model and a tuned answer are valid for one fingerprint; a new
// driver or ptxas makes a new device as far as the store is concerned.
#ifndef BLOCKTUNE_KERNELS_DEVICE_H_
#define BLOCKTUNE_KERNELS_DEVICE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "kernels/status.h"

namespace blocktune {

struct DeviceFingerprint {
  std::string name;           // "NVIDIA H100 80GB HBM3"
  int cc_major = 0;           // compute capability, 9 for sm_90
  int cc_minor = 0;
  int sm_count = 0;           // N_SM
  int64_t memory_bytes = 0;   // global memory
  int sm_clock_mhz = 0;       // maximum SM clock
  int memory_clock_mhz = 0;   // maximum memory clock
  std::string driver_version; // CUDA driver API version, "13.0"
  std::string cuda_version;   // toolkit the kernels were built with, "13.0"
  std::string ptxas_version;  // assembler that compiled the PTX, "13.0.48"

  // "sm_90"
  std::string Arch() const;

  auto Tie() const {
    return std::tie(name, cc_major, cc_minor, sm_count, memory_bytes,
                    sm_clock_mhz, memory_clock_mhz, driver_version,
                    cuda_version, ptxas_version);
  }
  friend bool operator==(const DeviceFingerprint& a,
                         const DeviceFingerprint& b) {
    return a.Tie() == b.Tie();
  }
  friend bool operator<(const DeviceFingerprint& a,
                        const DeviceFingerprint& b) {
    return a.Tie() < b.Tie();
  }
};

// INVALID_ARGUMENT naming "<field>.sm_count" etc. and the allowed range.
Status Validate(const DeviceFingerprint& device,
                std::string_view field = "device");

// One line for people: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.6 GiB,
// 1980/2619 MHz, driver 13.0, cuda 13.0, ptxas 13.0.48)".
std::string ToString(const DeviceFingerprint& device);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_DEVICE_H_
