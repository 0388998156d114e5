// The Hopper convolution family `conv.wgmma`: the implicit-GEMM convolution
// of conv.mma (conv_mma.h: M = N*P*Q output pixels, N = K output channels,
// the reduction over filter taps outer and channels inner) on gemm.wgmma's
// kernel (gemm_wgmma.h: the TMA ring with mbarriers, the producer
// warpgroup, wgmma.mma_async consumers, the TMA-store epilogue), for
//   Y = alpha * conv(X, F) + beta * Y
// with X the NHWC input, F the KRSC filter and Y the NPQK output, in bf16,
// fp16 (fp32 accumulation) and tf32 (fp32 storage); pad, stride and
// dilation in both dimensions.
//
// What differs from gemm.wgmma is the producer's copies, nothing else:
//   - A (the input) is read by TMA in im2col mode (cp.async.bulk.tensor.4d
//     ... .im2col, a tensor map made by cuTensorMapEncodeIm2col over
//     (C, W, H, N)): one copy brings bm output pixels' input pixels for one
//     filter tap, 128 bytes of channels each, the copy engine walking the
//     output pixels across rows and images, stepping by the convolution's
//     stride and reading zeros in the padding and past the last image. The
//     tap is the copy's im2col offsets (s * dilation_w, r * dilation_h); the
//     tile's first output pixel gives the coordinates.
//   - B (the filter) is read by a tiled rank-3 map over (C, R*S, K): the
//     box {128 bytes of channels, one tap, bn output channels}, zeros past
//     C and K.
//   - stage j of a tile is tap (r, s) = divmod(j / CB, S) and channels
//     [c0, c0 + bk), c0 = bk * (j % CB), CB = ceil(C / bk): channels past C
//     are zero in both operands, so any C that TMA can address works.
// The output Y is an M x K row-major matrix, stored by gemm.wgmma's
// epilogue (TMA stores where beta == 0 and K * element bytes is a multiple
// of 16, else from the registers).
//
// The PTX depends on the parameters and the precision only: the geometry
// is in the entry's parameters and the tensor maps, so one compiled kernel
// serves every convolution its rules admit.
//
// Rules beyond gemm.wgmma's: TMA needs 16-byte strides (C and K multiples
// of 8 bf16/fp16 or 4 tf32 elements; rule alignment), an element stride of
// at most 8 (stride_h, stride_w <= 8; rule stride), and the im2col
// bounding box's corners in [-128, 127] for a rank-4 map (pad_h, pad_w and
// dilation * (R - 1) - pad, dilation * (S - 1) - pad; rule corners), and
// the filter taps' offsets (dilation * (R - 1), dilation * (S - 1)) in
// [0, 255] (PTX ISA, im2col mode: 8 bits each for a 4-D map). Others go to conv.mma, which
// computes every convolution.
#ifndef BLOCKTUNE_KERNELS_CONV_WGMMA_H_
#define BLOCKTUNE_KERNELS_CONV_WGMMA_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "kernels/gemm_wgmma.h"
#include "kernels/status.h"
#include "kernels/tensor_map.h"

namespace blocktune {

// Bumped whenever the emitted PTX can change, and whenever the binary that
// campaigns measure for the same PTX changes.
//
// v2: the PTX is v1's; bumped with gemm.wgmma v5 for the same reason
// (kGemmWgmmaGeneratorVersion): v1's two-consumer measurements were compiled
// without setmaxnreg.
inline constexpr int kConvWgmmaGeneratorVersion = 2;
inline constexpr char kConvWgmmaFamily[] = "conv.wgmma";
// conv.wgmma's kernel launched as a persistent grid (gemm_wgmma.h says
// why a family of its own): conv.wgmma's PTX, its own version.
inline constexpr int kConvWgmmaPersistentGeneratorVersion = 1;
inline constexpr char kConvWgmmaPersistentFamily[] = "conv.wgmma_ps";
// conv.wgmma's kernel with the reduction (C*R*S) split over kg programs
// per tile (the work units are tiles x kg, as gemm.wgmma's split-K): split
// z of a tile walks k tiles [z * ktiles / kg, (z + 1) * ktiles / kg) of the
// tap-major, channel-minor walk, starting at the tap and channel step its
// first k tile names, and stores its raw fp32 sums to W[z] (M x K rows);
// gemm.mma's reduce entry (a programmatic dependent launch on sm_90) adds
// the kg sums of each output in a fixed order and applies alpha and beta.
// For layers whose tiles leave most SMs idle (batch-1 inference: 3x3 over
// 8x8 to 56x56 pixels runs 4-49 programs of one tile each on 132 SMs).
// A family of its own so that conv.wgmma's measurements stay valid: with
// kg = 1 its PTX would be conv.wgmma's, so kg starts at 2.
inline constexpr int kConvWgmmaSplitGeneratorVersion = 1;
inline constexpr char kConvWgmmaSplitFamily[] = "conv.wgmma_sk";
// conv.wgmma's parameters and kg (WgmmaParams' first seven fields).
inline constexpr int kConvWgmmaSplitParamCount = 7;
// The most splits of one tile's reduction (at least one k tile each: rule
// split_has_work).
inline constexpr int64_t kConvWgmmaMaxSplit = 32;
// conv.wgmma_sk with the splits of a tile in one thread-block cluster
// (WgmmaParams::split_cluster): split z is the program's rank in the
// cluster; splits z > 0 store their fp32 sums into the first program's
// shared memory through distributed shared memory and arrive on its
// mbarrier, and the first program adds them in the order z = 1 .. kg - 1
// and stores the tile with conv.wgmma's epilogue. No workspace, no reduce
// entry, one launch: on the H100 (bench/results/h100/conv_sk/) conv.wgmma_sk's
// best at 8x8 x 256 channels took 8.0 us, a floor it shared with 16x16,
// which the second launch, the partial sums' round trip through L2 and
// the reduce programs belong to. kg = 2 .. 8 (the portable cluster size);
// the slots take (kg - 1) * bm * bn * 4 bytes of shared memory (rule
// shared_memory). Its own family so that conv.wgmma_sk's measurements and
// models stay valid.
inline constexpr int kConvWgmmaClusterSplitGeneratorVersion = 1;
inline constexpr char kConvWgmmaClusterSplitFamily[] = "conv.wgmma_sc";
inline constexpr int64_t kConvWgmmaMaxClusterSplit = 8;

// conv.wgmma's parameters: gemm.wgmma's bm, bn, bk, st, wg, gm (its
// WgmmaParams with kg = 1 and cm = 1).
inline constexpr int kConvWgmmaParamCount = 6;

enum class ConvWgmmaRule {
  kNone,
  kComputeCapability,  // exactly 9.0
  kSwizzleRow,         // bk * element bytes a multiple of 128
  kSharedMemory,       // as gemm.wgmma
  kRegisters,          // as gemm.wgmma
  kAlignment,          // C and K multiples of 16 bytes (TMA strides)
  kStride,             // stride_h, stride_w <= 8 (TMA element strides)
  kCorners,            // the im2col box corners in [-128, 127]
  kGrid,               // programs <= 2^31 - 1, M < 2^31
};
inline constexpr ConvWgmmaRule kConvWgmmaRules[] = {
    ConvWgmmaRule::kComputeCapability, ConvWgmmaRule::kSwizzleRow,
    ConvWgmmaRule::kSharedMemory,      ConvWgmmaRule::kRegisters,
    ConvWgmmaRule::kAlignment,         ConvWgmmaRule::kStride,
    ConvWgmmaRule::kCorners,           ConvWgmmaRule::kGrid};
const char* ToString(ConvWgmmaRule rule);

// The problem is a convolution whose dtype is bf16, fp16 or tf32; `p` has
// cm = 1 and kg from 1 to kConvWgmmaMaxSplit (conv.wgmma_sk's own rules,
// family_wgmma.cc, check that every split has work).
bool PassesConvWgmmaRule(ConvWgmmaRule rule, const ConvContext& ctx,
                         const WgmmaParams& p, const KernelLimits& limits);
// OK, or FAILED_PRECONDITION naming the first failing rule and the numbers.
Status CanImplementConvWgmma(const ConvContext& ctx, const WgmmaParams& p,
                             const KernelLimits& limits = {});

// The input's im2col map ('a'), the filter's tiled map ('b') or the
// output's tiled map ('c', gemm.wgmma's C box).
TensorMapSpec ConvWgmmaTensorMap(const ConvContext& ctx, const WgmmaParams& p,
                                 char operand);

// The entry's parameters, in order (offsets in bytes):
//   tmap_a[128] @0, tmap_b[128] @128, tmap_c[128] @256 (CUtensorMaps by
//   value), .u64 C @384 (the output Y), .u32 M @392 (N*P*Q), N @396 (K),
//   K @400 (C*R*S), ldc @404 (K), .f32 alpha @408, beta @412, .u32 C_in
//   @416, P @420, Q @424, S @428, pad_h @432, pad_w @436, stride_h @440,
//   stride_w @444, dilation_h @448, dilation_w @452; with conv.wgmma_sk's
//   split (kg > 1 through a workspace) .u64 W @456 (the partial sums).
std::vector<KernelParam> ConvWgmmaEntryParams(bool split = false);

// k tiles of one tile's reduction: R*S taps of ceil(C / bk) channel steps.
int64_t ConvWgmmaKTiles(const ConvContext& ctx, const WgmmaParams& p);
// The split's partial sums, kg * M * K * 4 bytes (M = N*P*Q); 0 for kg = 1
// and with split_cluster (the sums stay in shared memory).
int64_t ConvWgmmaWorkspaceBytes(const ConvContext& ctx, const WgmmaParams& p);

struct ConvWgmmaKernel {
  std::string ptx;
  std::string entry = "blocktune_conv_wgmma";
  std::array<unsigned, 3> grid{};  // one program per tile and split
  std::array<unsigned, 3> block{};
  // Programs per cluster along x, fixed in the PTX (.reqnctapercluster):
  // kg with split_cluster, else 1.
  unsigned cluster = 1;
  unsigned shared_bytes = 0;  // dynamic; needs the opt-in
  TensorMapSpec map_a, map_b, map_c;
  int element_bytes = 2;
  // kg > 1: the partial sums, and the reduce entry that adds them
  // (gemm.mma's, in the same PTX), launched after the main entry.
  int64_t workspace_bytes = 0;
  std::string reduce_entry;
  bool reduce_dependent = false;
  std::array<unsigned, 3> reduce_grid{};
  std::array<unsigned, 3> reduce_block{};
};

// `arch` must be "sm_90a".
StatusOr<ConvWgmmaKernel> GenerateConvWgmma(const ConvContext& ctx,
                                            const WgmmaParams& p,
                                            const std::string& arch = "sm_90a");

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_CONV_WGMMA_H_
