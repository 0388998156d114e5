#include "kernels/device.h"

#include <cstdio>

#include "kernels/validate.h"

namespace blocktune {

std::string DeviceFingerprint::Arch() const {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

Status Validate(const DeviceFingerprint& d, std::string_view field) {
  BT_RETURN_IF_ERROR(CheckText(JoinField(field, "name"), d.name, 1, 256));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "cc_major"), d.cc_major, 1, 99));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "cc_minor"), d.cc_minor, 0, 9));
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "sm_count"), d.sm_count, 1, 4096));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "memory_bytes"),
                                d.memory_bytes, 1, int64_t{1} << 50));
  BT_RETURN_IF_ERROR(
      CheckRange(JoinField(field, "sm_clock_mhz"), d.sm_clock_mhz, 1, 100000));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "memory_clock_mhz"),
                                d.memory_clock_mhz, 1, 100000));
  BT_RETURN_IF_ERROR(
      CheckText(JoinField(field, "driver_version"), d.driver_version, 1, 64));
  BT_RETURN_IF_ERROR(
      CheckText(JoinField(field, "cuda_version"), d.cuda_version, 1, 64));
  BT_RETURN_IF_ERROR(
      CheckText(JoinField(field, "ptxas_version"), d.ptxas_version, 1, 64));
  return OkStatus();
}

std::string ToString(const DeviceFingerprint& d) {
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB",
                static_cast<double>(d.memory_bytes) / (1 << 30));
  return d.name + " (" + d.Arch() + ", " + std::to_string(d.sm_count) +
         " SMs, " + memory + ", " + std::to_string(d.sm_clock_mhz) + "/" +
         std::to_string(d.memory_clock_mhz) + " MHz, driver " +
         d.driver_version + ", cuda " + d.cuda_version + ", ptxas " +
         d.ptxas_version + ")";
}

}  // namespace blocktune
