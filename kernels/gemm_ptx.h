// The GEMM code generator k(x_B) of thesis §4.1.1: fp32 PTX for
//   C = alpha * op(A) * op(B) + beta * C
// for any block shape x_B and any M, N, K (ragged edges are predicated, not
// padded). A is M x K, B is K x N, C is M x N, all row-major with leading
// dimensions lda, ldb, ldc; layout T stores an operand transposed (A as
// K x M, B as N x K).
//
// Each program computes an M_L x N_L block of C with (M_L/M_S)*(N_L/N_S)
// threads of M_S x N_S elements each. Per reduction step it stages an
// M_L x U block of A and a U x N_L block of B in shared memory, double
// buffered: the next step's global loads are in flight while the current
// step's M_S*N_S*U FMAs run (thesis Listing 4.2). With ST > 1 stages the
// steps go global -> shared by cp.async (16-byte copies where a vector
// lands whole in a shared row, 4-byte ones where it is transposed or
// gathered), ST - 1 steps in flight, with no staging registers. With K_G > 1 the
// reduction is split over K_G programs; their partial sums go to a
// workspace and a second kernel adds them in a fixed order, so results are
// deterministic.
#ifndef BLOCKTUNE_KERNELS_GEMM_PTX_H_
#define BLOCKTUNE_KERNELS_GEMM_PTX_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/limits.h"
#include "kernels/status.h"

namespace blocktune {

// Generator versions of the two families this file's generators implement
// (kernels/family.h), bumped whenever the emitted PTX can change. Version 1
// is the generator with the in-order K_G reduction kernel; data measured
// before it is version 0. Version 2 adds ST, the cp.async pipeline (ST = 1
// emits version 1's PTX byte for byte; rows of version 1 read as ST = 1).
// Version 3 walks an operand's scalar loads (rows not 16-byte aligned) from
// one pointer (gemm_ptx.cc OperandWalk); aligned kernels are version 2's
// byte for byte, so their samples keep their measurements (a store
// re-labels them by kernel digest, server/sample_digest.h).
inline constexpr int kGemmFfmaGeneratorVersion = 3;
inline constexpr int kConvFfmaGeneratorVersion = 3;

// The estimate for the kernel of `ctx`: a convolution adds its window
// origins and reduction walks.
int64_t KernelRegisterEstimate(const Context& ctx, const BlockShape& xb);
// FAILED_PRECONDITION where a convolution is too large for the kernel's
// 32-bit offsets (one image, the implicit GEMM's M and K).
Status CheckConvAddressing(const ConvContext& ctx);

// Shared memory the GEMM kernel of `xb` declares: two stages (ST stages
// where ST > 1) of U rows of (M_L + pad_a) + (N_L + pad_b) floats, the pads
// against bank conflicts.
int64_t GemmSharedBytes(const BlockShape& xb);
// A register estimate per thread: accumulators, fragments, staged loads
// (vectors of vec_a and vec_b elements, as the generator loads them for a
// context: KernelRegisterEstimate) and addressing.
int64_t GemmRegisterEstimate(const BlockShape& xb, int64_t vec_a,
                             int64_t vec_b);

// The hardware rules, each named; the sampler counts rejections by them.
enum class HardwareRule {
  kNone,
  kThreads,           // (M_L/M_S)*(N_L/N_S) <= threads per block
  kSharedMemory,      // GemmSharedBytes <= static shared memory
  kRegisters,         // estimate per thread, and per program within an SM
  kInstructionCache,  // 16*(M_S*U + N_S*U + M_S*N_S*U) <= S_IC
  kGrid,              // grid dimensions
  kAddressing,        // convolution offsets fit the kernel's 32 bits
  kAsyncCopy,         // ST > 1 copies with cp.async: compute capability >= 8.0
};
inline constexpr HardwareRule kHardwareRules[] = {
    HardwareRule::kThreads,          HardwareRule::kSharedMemory,
    HardwareRule::kRegisters,        HardwareRule::kInstructionCache,
    HardwareRule::kGrid,             HardwareRule::kAddressing,
    HardwareRule::kAsyncCopy};
const char* ToString(HardwareRule rule);

// The one place the hardware rules live. Passes: whether one rule holds,
// with no allocation (the sampler calls it millions of times a second).
bool Passes(HardwareRule rule, const Context& ctx, const BlockShape& xb,
            const KernelLimits& limits);
// The first rule, in kHardwareRules order, that fails; kNone if all hold.
HardwareRule FirstFailingHardwareRule(const Context& ctx, const BlockShape& xb,
                                      const KernelLimits& limits);
// OK if the kernel of `xb` can run on a device with `limits`; else
// FAILED_PRECONDITION naming the rule and the numbers. `ctx` must be a
// GEMM or convolution context that validated, `xb` a valid block shape.
Status CanImplement(const Context& ctx, const BlockShape& xb,
                    const KernelLimits& limits);

struct GemmKernel {
  std::string ptx;
  std::string entry = "blocktune_gemm";  // or "blocktune_conv"
  // Present when K_G > 1: adds the K_G partial sums, in order, and applies
  // alpha and beta. Launch it after `entry` on the same stream.
  std::string reduce_entry;
  bool reduce_dependent = false;  // GeneratedKernel::reduce_dependent
  // Present when a first launch copies operands into the workspace
  // (GeneratedKernel::pack_entry: gemm.ffma_kpk's).
  std::string pack_entry;
  std::array<unsigned, 3> pack_grid{};
  std::array<unsigned, 3> pack_block{};
  std::array<unsigned, 3> grid{};   // for `entry`
  std::array<unsigned, 3> block{};
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
  int64_t workspace_bytes = 0;  // K_G * M * N floats when K_G > 1
  // Global load vector widths. Where 4, the kernel reads that operand in
  // 16-byte vectors: its base must be 16-byte aligned and its leading
  // dimension a multiple of 4 (LoadedGemm::Launch checks).
  int64_t vector_a = 1;
  int64_t vector_b = 1;
};

// Parameters of `entry`, in order:
//   .u64 A, .u64 B, .u64 C, .u64 W (workspace; 0 when K_G == 1),
//   .u32 M, N, K, lda, ldb, ldc, .f32 alpha, beta.
// `reduce_entry` takes: .u64 W, .u64 C, .u32 M, N, ldc, K_G,
// .f32 alpha, beta.
// The PTX targets `arch` ("sm_80", "sm_90"). The launch geometry is for
// the M, N, K of `ctx`; the PTX itself works for any M, N, K.
StatusOr<GemmKernel> GenerateGemm(const GemmContext& ctx, const BlockShape& xb,
                                  const std::string& arch = "sm_80");

// The implicit-GEMM convolution of thesis §4.1.2 on the same x_B:
// M = N*P*Q output pixels, N = K output channels, K = C*R*S. Entry
// "blocktune_conv" takes GenerateGemm's parameters, with A the NHWC input,
// B the KRSC filter (ldb = C*R*S), C the NPQK output (ldc = K), lda unused,
// followed by .u32 H, W, C, P, Q, S, pad_h, pad_w, stride_h, stride_w,
// dilation_h, dilation_w. Padding reads as zeros.
StatusOr<GemmKernel> GenerateConv(const ConvContext& ctx, const BlockShape& xb,
                                  const std::string& arch = "sm_80");

// The K_G > 1 reduction of GenerateGemm, for the generators that share it
// (gemm.gemv): appends the entry "blocktune_gemm_reduce" (parameters
// ReduceParams()) to kernel->ptx and sets reduce_entry, its geometry and
// workspace_bytes. The main entry must leave program z's partial sums in
// the workspace W as K_G x M x N floats, W[(z*M + row)*N + col]; the
// reduction adds them in z order (deterministic) and writes
// C = alpha * sum + beta * C, not reading C where beta == 0.
// fixed_partials: the entry adds exactly `kg` partial sums, a constant of
// its PTX, and ignores its K_G argument (gemm.ffma_k with clusters, whose
// K_G programs leave K_G / CL sums); false: as many as K_G says.
// dependent (sm_90 only): the entry begins with griddepcontrol.wait and is
// launched as a programmatic dependent launch (kernel->reduce_dependent);
// the main entry should execute griddepcontrol.launch_dependents early.
void AddSplitReduce(int64_t kg, int64_t m, int64_t n, GemmKernel* kernel,
                    bool fixed_partials = false, bool dependent = false);

// A GeneratedKernel of a GemmKernel (gemm.ffma's, conv.ffma's and
// gemm.gemv's): its reduce entry where K_G > 1, the entry parameters of
// `op`, and the operands' alignment from the load vector widths (V floats:
// the leading dimension a multiple of V, the bases 4 * V-byte aligned).
GeneratedKernel FromGemmKernel(const KernelFamily& family, GemmKernel k, Op op);

// The parameters of GenerateGemm's (op kGemm) or GenerateConv's (kConv)
// entry, and of the K_G reduction's, in order, as documented above.
std::vector<KernelParam> EntryParams(Op op);
std::vector<KernelParam> ReduceParams();

// OK for a PTX target the generator supports: "sm_XY" with XY in [70, 120]
// ("sm_90a" style suffixes too); INVALID_ARGUMENT naming `field` otherwise.
Status CheckArch(std::string_view field, const std::string& arch);

// GenerateGemm or GenerateConv, by the context's op.
StatusOr<GemmKernel> GenerateKernel(const Context& ctx, const BlockShape& xb,
                                    const std::string& arch = "sm_80");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_GEMM_PTX_H_
