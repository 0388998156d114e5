// Test-only: runs NVIDIA's ptxas over generated PTX and reads its -v report
// (registers and spills per function). The one copy of how the ptxas
// checks (family_ptxas_test) invoke and read ptxas. Not part of
// blocktune_kernels: production code assembles through the driver
// (cuda_driver.h), nvJitLink, or ptxas for kernels that set their own
// registers (ptx_compiler.h).
#ifndef BLOCKTUNE_KERNELS_PTXAS_HARNESS_H_
#define BLOCKTUNE_KERNELS_PTXAS_HARNESS_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kernels/ptx_compiler.h"

namespace blocktune {

// FindPtxas (kernels/ptx_compiler.h): "" when there is none (callers skip
// with a message).

// What ptxas -v says of one function.
struct PtxasFunction {
  std::string name;
  int registers = -1;  // "Used N registers"
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;

  int spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

struct PtxasReport {
  bool exited_ok = false;
  std::vector<PtxasFunction> functions;  // in ptxas' order
  std::string log;                       // ptxas' stdout and stderr

  // The function named `name`; null when ptxas did not report it.
  const PtxasFunction* Find(const std::string& name) const;
  // ptxas succeeded and reported on every one of `entries`.
  bool ok(const std::vector<std::string>& entries) const;
  int max_registers() const;
  int spill_bytes() const;  // over every function
};

// Writes `ptx` to `<scratch>.ptx` and assembles it with
// `ptxas -arch=<arch> -v -o <scratch>.cubin`. `scratch` is a path prefix
// that this call alone uses (one per worker thread). Thread-safe.
PtxasReport RunPtxas(const std::string& ptxas, const std::string& ptx,
                     const std::string& arch, const std::string& scratch);

// Calls fn(i, worker) for every i in [0, n) from `threads` threads (worker in
// [0, threads)), each index once; returns when all are done.
void ParallelFor(size_t n, int threads,
                 const std::function<void(size_t i, int worker)>& fn);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_PTXAS_HARNESS_H_
