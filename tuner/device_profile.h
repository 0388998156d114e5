// Device profiles: what the hardware rules need to know of a GPU. Read off
// the GPU when there is one; otherwise one of the built-in profiles, so that
// sampling and queries work on a machine with no GPU.
#ifndef BLOCKTUNE_TUNER_DEVICE_PROFILE_H_
#define BLOCKTUNE_TUNER_DEVICE_PROFILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "kernels/gemm_ptx.h"
#include "kernels/status.h"

namespace blocktune {

struct DeviceProfile {
  std::string name;  // "h100-sxm", or the GPU's name when read off one
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;                  // N_SM
  int shared_per_block = 0;          // bytes, static (no opt-in)
  int shared_per_block_optin = 0;    // bytes, with opt-in
  int shared_per_sm = 0;             // bytes
  int registers_per_sm = 0;          // 32-bit registers
  int max_registers_per_thread = 255;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int warp_size = 32;
  int instruction_cache_bytes = 0;   // S_IC of thesis §4.2.1
  std::string s_ic_source;           // where the S_IC figure comes from

  // The view CanImplement takes.
  KernelLimits Limits() const;
};

// H100 SXM, H200, A100 SXM, V100 SXM2, from NVIDIA's tuning guides and
// architecture whitepapers (limits per compute capability).
const std::vector<DeviceProfile>& BuiltinProfiles();
// A built-in profile by name: "h100" or "h100-sxm", "h200", "a100", "v100"
// (case-insensitive). NOT_FOUND lists the names.
StatusOr<DeviceProfile> ProfileByName(std::string_view name);
// The profile of GPU `ordinal`, read with the driver; S_IC comes from the
// built-in profile of the same compute capability (it cannot be queried).
// UNAVAILABLE "no GPU: ..." where there is no driver or device.
StatusOr<DeviceProfile> ProfileFromDevice(int ordinal);
// "h100-sxm: 132 SMs, 48 KiB shared per block (228 KiB opt-in), ..."
std::string Describe(const DeviceProfile& profile);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_DEVICE_PROFILE_H_
