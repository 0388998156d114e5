// PTX to cubin on CPU threads, through NVIDIA's nvJitLink library, loaded
// with dlopen like libcuda.
//
// The driver's own JIT (cuModuleLoadData on PTX) compiles one module at a
// time under its lock; a campaign that benchmarks ~100 kernels a second
// needs compiles to run on every core, overlapped with the GPU's work.
// nvJitLink handles are independent, so Compile may run on any number of
// threads at once. Where libnvJitLink is absent, Get() answers UNAVAILABLE
// and callers fall back to loading PTX (slower, still correct).
//
// Kernels that set their own register count. nvJitLink assembles PTX as a
// separately compiled unit (ptxas --compile-only, which no option turns
// off), and there ptxas ignores setmaxnreg ("(C7504) 'setmaxnreg' ignored
// to maintain compatibility across compilation units"): a Hopper kernel
// with two consumer warpgroups then keeps the entry's 168 registers, spills
// and serializes its wgmma ("(C7512)"). On an H100, gemm.wgmma_rs 128x256
// at 4096^3 tf32 NN ran 422 us compiled that way against 350 us from the
// driver's JIT, which compiles the whole program. So Compile gives PTX
// that holds setmaxnreg to the toolkit's ptxas (FindPtxas), which assembles
// a whole program; with no ptxas it tries nvJitLink, and where nvJitLink's
// log says it dropped setmaxnreg, returns the PTX itself for the driver's
// JIT to compile at load.
#ifndef BLOCKTUNE_KERNELS_PTX_COMPILER_H_
#define BLOCKTUNE_KERNELS_PTX_COMPILER_H_

#include <memory>
#include <string>

#include "kernels/status.h"

namespace blocktune {

// $BLOCKTUNE_PTXAS, else /usr/local/cuda/bin/ptxas or /usr/bin/ptxas when
// executable; "" when there is none.
std::string FindPtxas();

// A whole-program cubin of `ptx` for `arch` from the ptxas at `ptxas`
// (-O3), through files in a temporary folder; *log gets ptxas' output.
// INTERNAL with that output when ptxas fails.
StatusOr<std::string> AssembleWholeProgram(const std::string& ptxas,
                                           const std::string& ptx,
                                           const std::string& arch,
                                           std::string* log);

class PtxCompiler {
 public:
  // The process's compiler, loaded once. The library is libnvJitLink.so.13
  // (then .so.12), from the loader's path or /usr/local/cuda/lib64, unless
  // BLOCKTUNE_NVJITLINK names a file.
  static StatusOr<const PtxCompiler*> Get();

  // How Compile made its image.
  struct Report {
    // "nvJitLink"; "ptxas" (PTX that holds setmaxnreg, as a whole
    // program); "driver JIT" (the image is the PTX itself: there is no
    // ptxas and nvJitLink dropped setmaxnreg).
    std::string path;
    std::string info_log;   // nvJitLink's
    std::string ptxas_log;  // ptxas' output, where it ran
  };
  // An image for `arch` ("sm_90") that cuModuleLoadData takes: a cubin, or
  // the PTX text (see above). INTERNAL with the compiler's log when the PTX
  // does not compile.
  StatusOr<std::string> Compile(const std::string& ptx, const std::string& arch,
                                Report* report = nullptr) const;
  // "nvJitLink 13.0; setmaxnreg: ptxas" (or "...: driver JIT"), for a
  // device fingerprint's ptxas_version.
  const std::string& version() const { return version_; }

  struct Api;

 private:
  PtxCompiler() = default;
  std::unique_ptr<Api> api_;
  std::string version_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_PTX_COMPILER_H_
