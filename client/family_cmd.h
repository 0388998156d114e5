// The CLI's commands over the kernel families built into this binary
// (kernels/family.h), answered here with no daemon:
//   blocktune families [--json]
//   blocktune kernel gemm|conv ... --family NAME [--params "k=v ..."]
//       [--device PROFILE] [--arch sm_XY] [-o FILE]
#ifndef BLOCKTUNE_CLIENT_FAMILY_CMD_H_
#define BLOCKTUNE_CLIENT_FAMILY_CMD_H_

#include <string>

#include "kernels/context.h"
#include "kernels/status.h"

namespace blocktune {

// Every family: name, op, precisions, generator version, summary, minimum
// compute capability, parameters with their domains and meanings, and the
// hardware rules. Returns the exit code.
int RunFamilies(bool json);

// The precisions a kernel can be generated in here: fp32, tf32, bf16,
// fp16. INVALID_ARGUMENT naming `flag` and listing them otherwise.
Status CheckLocalDType(const std::string& flag, const std::string& dtype);

struct LocalKernelFlags {
  std::string family;  // required
  std::string params;  // "": the family's default for the context
  std::string device;  // a built-in profile (h100, h200, a100, v100); "": h100
  std::string arch;    // "": the profile's, sm_<major><minor>
  std::string out;     // the PTX goes here; "" or "-": stdout
  // Leading dimensions of A, B, C in elements (GEMM only); 0: tight.
  int64_t lda = 0, ldb = 0, ldc = 0;
};

// Generates the kernel of `flags.family` for `ctx` on the profile's limits
// and writes the PTX; prints the family, version, parameters, entry, launch
// geometry, dynamic shared memory and workspace (to stdout with -o, else to
// stderr, the PTX taking stdout; --json: one object on stdout). Bad flags
// exit 2 naming the flag; a context no configuration of the family fits
// exits 4 saying why. Returns the exit code.
int RunLocalKernel(const Context& ctx, const LocalKernelFlags& flags,
                   bool json);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_FAMILY_CMD_H_
