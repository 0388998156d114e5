// PTX to cubin on CPU threads, through NVIDIA's nvJitLink library, loaded
// with dlopen like libcuda.
//
// The driver's own JIT (cuModuleLoadData on PTX) compiles one module at a
// time under its lock; a campaign that benchmarks ~100 kernels a second
// needs compiles to run on every core, overlapped with the GPU's work.
// nvJitLink handles are independent, so Compile may run on any number of
// threads at once. Where libnvJitLink is absent, Get() answers UNAVAILABLE
// and callers fall back to loading PTX (slower, still correct).
#ifndef BLOCKTUNE_KERNELS_PTX_COMPILER_H_
#define BLOCKTUNE_KERNELS_PTX_COMPILER_H_

#include <memory>
#include <string>

#include "kernels/status.h"

namespace blocktune {

class PtxCompiler {
 public:
  // The process's compiler, loaded once. The library is libnvJitLink.so.13
  // (then .so.12), from the loader's path or /usr/local/cuda/lib64, unless
  // BLOCKTUNE_NVJITLINK names a file.
  static StatusOr<const PtxCompiler*> Get();

  // A cubin for `arch` ("sm_90"). INTERNAL with nvJitLink's error log when
  // the PTX does not compile.
  StatusOr<std::string> Compile(const std::string& ptx,
                                const std::string& arch) const;
  // "nvJitLink 13.0", for a device fingerprint's ptxas_version.
  const std::string& version() const { return version_; }

  struct Api;

 private:
  PtxCompiler() = default;
  std::unique_ptr<Api> api_;
  std::string version_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_PTX_COMPILER_H_
