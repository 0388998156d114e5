// The block shape x_B of thesis §4.1–4.2 (Fig. 4.3): how one program of the
// generated kernel divides the (implicit) GEMM.
//
//   M_L x N_L  elements of C computed by one program (thread block),
//   M_S x N_S  elements of C computed by one thread,
//   U          the reduction step staged in shared memory per iteration,
//   K_G        programs that split one reduction (reduction splitting).
//   ST         shared-memory stages of the reduction pipeline: 1 is the
//              thesis's register-staged double buffer (Listing 4.2); 2 and
//              more copy global -> shared with cp.async (sm_80 and later),
//              ST - 1 steps in flight while one is computed.
//
// Validate() checks that a block shape is well formed on its own. Whether a
// device can run it (shared memory, registers, the instruction-cache bound)
// is the code generator's CanImplement, and whether it is worth sampling is
// the tuner's rejection rules; neither lives here.
#ifndef BLOCKTUNE_KERNELS_BLOCK_SHAPE_H_
#define BLOCKTUNE_KERNELS_BLOCK_SHAPE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/status.h"

namespace blocktune {

inline constexpr int64_t kMaxProgramTile = 1024;     // M_L, N_L
inline constexpr int64_t kMaxThreadsPerProgram = 1024;
inline constexpr int64_t kMaxReductionStep = 256;   // U
inline constexpr int64_t kMaxReductionSplit = 65535; // K_G
inline constexpr int64_t kMaxStages = 8;             // ST
inline constexpr int kBlockShapeValues = 7;  // ML NL MS NS U KG ST

struct BlockShape {
  int64_t ml = 0;  // M_L
  int64_t nl = 0;  // N_L
  int64_t ms = 0;  // M_S
  int64_t ns = 0;  // N_S
  int64_t u = 0;   // U
  int64_t kg = 1;  // K_G
  int64_t st = 1;  // ST

  // (M_L / M_S) * (N_L / N_S).
  int64_t ThreadsPerProgram() const { return (ml / ms) * (nl / ns); }

  auto Tie() const { return std::tie(ml, nl, ms, ns, u, kg, st); }
  friend bool operator==(const BlockShape& a, const BlockShape& b) {
    return a.Tie() == b.Tie();
  }
  friend bool operator<(const BlockShape& a, const BlockShape& b) {
    return a.Tie() < b.Tie();
  }
};

// INVALID_ARGUMENT naming "<field>.ml" etc. and the allowed range.
Status Validate(const BlockShape& xb, std::string_view field = "block_shape");

// Programs in the grid: ceil(M / M_L) * ceil(N / N_L) * K_G for the
// (implicit) GEMM of `ctx`. Both arguments must have validated.
int64_t ProgramsInGrid(const Context& ctx, const BlockShape& xb);

// "ML=64 NL=64 MS=4 NS=4 U=8 KG=1" (the thesis's names; " ST=3" follows
// where ST != 1), and its inverse, which also validates (ST= optional).
std::string ToString(const BlockShape& xb);
StatusOr<BlockShape> BlockShapeFromString(std::string_view text);

// A block shape is the parameters of the families gemm.ffma and conv.ffma
// (kernels/family.h), in the order of their ParamSpecs (ML NL MS NS U KG
// ST).
// The store, the protocol and the client carry block shapes until families
// reach them (issue 19); these convert at that edge.
const KernelFamily& BlockShapeFamily(Op op);  // gemm.ffma or conv.ffma
Params ToParams(const BlockShape& xb);
// `params` must be a block-shape family's (7 values; 6, from before ST,
// mean ST = 1).
BlockShape ToBlockShape(const Params& params);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_BLOCK_SHAPE_H_
