// What a device offers a kernel: the numbers every family's hardware rules
// (CanImplement, and the sampler through them) decide against. Filled from
// a device profile (tuner/device_profile.h) or read off the GPU.
#ifndef BLOCKTUNE_KERNELS_LIMITS_H_
#define BLOCKTUNE_KERNELS_LIMITS_H_

namespace blocktune {

struct KernelLimits {
  int max_threads_per_block = 1024;
  int max_static_shared_bytes = 48 * 1024;
  // Dynamic shared memory per block with the opt-in (227 KiB on sm_90,
  // 163 KiB on sm_80).
  int max_dynamic_shared_bytes = 227 * 1024;
  int max_registers_per_thread = 255;
  int registers_per_sm = 65536;
  // S_IC of thesis §4.2.1: the bound on the unrolled reduction loop,
  // 16 * (M_S*U + N_S*U + M_S*N_S*U) <= S_IC. 12 KiB in the thesis for
  // Volta to Ampere; a property of the device profile (issue 4). The
  // default is the Hopper profiles' 40 KiB, measured on an H200
  // (tuner/device_profile.cc).
  int instruction_cache_bytes = 40 * 1024;
  // major * 10 + minor; families need a minimum (mma.sync bf16: 80).
  int compute_capability = 90;
  // Streaming multiprocessors; 0: unknown, and the rules that need it
  // (gemm.wgmma_ps's and conv.wgmma_ps's several_waves) pass.
  int sm_count = 0;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_LIMITS_H_
