#include "tuner/device_profile.h"

#include "kernels/cuda_driver.h"
#include "kernels/validate.h"

namespace blocktune {
namespace {

// S_IC, the bound on the unrolled reduction loop (thesis §4.2.1). The
// thesis uses 12 KiB for Volta to Ampere. For Hopper NVIDIA publishes no
// instruction-cache size, so it was measured (bench/results/h200/sic/): on
// an H200, gemm.ffma kernels of one thread tile with U doubling (loops of
// 4.8 to 40 KiB, fp32 4096^3 NN) stall for instructions (ncu
// no_instruction) 0.01-0.06 warps per issued instruction at every size,
// and the fastest of them (0.96x cuBLAS, 8x16 per thread, U = 8) has a
// 19 KiB loop that 12 KiB refused. The Hopper profiles take 40 KiB, the
// largest loop measured; what slows the longer loops down is their
// registers and staging, which other rules bound.
constexpr int kThesisSic = 12 * 1024;
constexpr int kHopperSic = 40 * 1024;
constexpr const char* kThesisSicSource =
    "thesis §4.2.1 (Volta-Ampere), 12 KiB";
constexpr const char* kHopperSicSource =
    "measured on an H200: no instruction-fetch stalls in loops up to 40 KiB "
    "(bench/results/h200/sic)";

DeviceProfile Make(const char* name, int major, int minor, int sms,
                   int optin_kib, int per_sm_kib, int threads_per_sm,
                   int sic_bytes, const char* sic_source) {
  DeviceProfile p;
  p.name = name;
  p.cc_major = major;
  p.cc_minor = minor;
  p.sm_count = sms;
  p.shared_per_block = 48 * 1024;
  p.shared_per_block_optin = optin_kib * 1024;
  p.shared_per_sm = per_sm_kib * 1024;
  p.registers_per_sm = 65536;
  p.max_registers_per_thread = 255;
  p.max_threads_per_block = 1024;
  p.max_threads_per_sm = threads_per_sm;
  p.warp_size = 32;
  p.instruction_cache_bytes = sic_bytes;
  p.s_ic_source = sic_source;
  return p;
}

}  // namespace

KernelLimits DeviceProfile::Limits() const {
  KernelLimits l;
  l.max_threads_per_block = max_threads_per_block;
  l.max_static_shared_bytes = shared_per_block;
  l.max_dynamic_shared_bytes = shared_per_block_optin;
  l.max_registers_per_thread = max_registers_per_thread;
  l.registers_per_sm = registers_per_sm;
  l.instruction_cache_bytes = instruction_cache_bytes;
  l.compute_capability = cc_major * 10 + cc_minor;
  l.sm_count = sm_count;
  return l;
}

const std::vector<DeviceProfile>& BuiltinProfiles() {
  static const std::vector<DeviceProfile> profiles = {
      // compute capability 9.0: 227 KiB opt-in of 228 KiB per SM
      Make("h100-sxm", 9, 0, 132, 227, 228, 2048, kHopperSic,
           kHopperSicSource),
      Make("h200", 9, 0, 132, 227, 228, 2048, kHopperSic, kHopperSicSource),
      // 8.0: 163 KiB opt-in of 164 KiB per SM
      Make("a100", 8, 0, 108, 163, 164, 2048, kThesisSic, kThesisSicSource),
      // 7.0: 96 KiB opt-in and per SM
      Make("v100", 7, 0, 80, 96, 96, 2048, kThesisSic, kThesisSicSource),
  };
  return profiles;
}

StatusOr<DeviceProfile> ProfileByName(std::string_view name) {
  std::string known;
  for (const DeviceProfile& p : BuiltinProfiles()) {
    const std::string_view full = p.name;
    const std::string_view family = full.substr(0, full.find('-'));
    if (EqualsIgnoreCase(name, full) || EqualsIgnoreCase(name, family))
      return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  return NotFound("device profile '" + std::string(name) +
                  "' is not built in; known: " + known +
                  " (or 'gpu' to read GPU 0)");
}

StatusOr<DeviceProfile> ProfileFromDevice(int ordinal) {
  BT_ASSIGN_OR_RETURN(cuda::Driver * driver, cuda::Driver::Get());
  BT_ASSIGN_OR_RETURN(cuda::DeviceLimits l, driver->Limits(ordinal));
  BT_ASSIGN_OR_RETURN(DeviceFingerprint fp, driver->Fingerprint(ordinal));
  DeviceProfile p;
  p.name = fp.name;
  p.cc_major = l.cc_major;
  p.cc_minor = l.cc_minor;
  p.sm_count = l.sm_count;
  p.shared_per_block = l.max_shared_per_block;
  p.shared_per_block_optin = l.max_shared_per_block_optin;
  p.shared_per_sm = l.max_shared_per_sm;
  p.registers_per_sm = l.max_registers_per_sm;
  p.max_threads_per_block = l.max_threads_per_block;
  p.max_threads_per_sm = l.max_threads_per_sm;
  p.warp_size = l.warp_size;
  p.instruction_cache_bytes = kThesisSic;
  p.s_ic_source = kThesisSicSource;
  for (const DeviceProfile& b : BuiltinProfiles()) {
    if (b.cc_major == p.cc_major && b.cc_minor == p.cc_minor) {
      p.instruction_cache_bytes = b.instruction_cache_bytes;
      p.s_ic_source = b.s_ic_source;
      break;
    }
  }
  return p;
}

std::string Describe(const DeviceProfile& p) {
  return p.name + ": sm_" + std::to_string(p.cc_major) +
         std::to_string(p.cc_minor) + ", " + std::to_string(p.sm_count) +
         " SMs, " + std::to_string(p.shared_per_block / 1024) +
         " KiB shared per block (" +
         std::to_string(p.shared_per_block_optin / 1024) + " KiB opt-in, " +
         std::to_string(p.shared_per_sm / 1024) + " KiB per SM), " +
         std::to_string(p.registers_per_sm) + " registers per SM, " +
         std::to_string(p.max_threads_per_block) + " threads per block, " +
         "warp " + std::to_string(p.warp_size) + ", S_IC " +
         std::to_string(p.instruction_cache_bytes) + " B (" + p.s_ic_source +
         ")";
}

}  // namespace blocktune
