// The context x_C of thesis §4.2: the input shape a kernel is run on.
//
// A GEMM context is (M, N, K, layout of A and B, dtype). A convolution
// context is (N, H, W, C, K, R, S, pad, stride, dilation, dtype) with NHWC
// activations and KRSC filters; it maps to an implicit GEMM with
// M = N*P*Q, N = K, K = C*R*S (thesis §4.1.2).
//
// Values are plain structs; Validate() is the one place their ranges live,
// and every quantity derived from a context (FLOPs, bytes, implicit GEMM) is
// only meaningful for a context that validated.
#ifndef BLOCKTUNE_KERNELS_CONTEXT_H_
#define BLOCKTUNE_KERNELS_CONTEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>

#include "kernels/operation.h"
#include "kernels/status.h"

namespace blocktune {

// Largest extent of one dimension (M, N, K, batch, H, W, C, K).
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
// Largest element count of one tensor (A, B, C; input, filter, output):
// 2^40 elements, 4 TiB of fp32, far past any GPU's memory.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
// Largest filter extent, padding, stride or dilation.
inline constexpr int64_t kMaxWindow = 65535;

struct GemmContext {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  Layout layout_a = Layout::kN;
  Layout layout_b = Layout::kN;
  DType dtype = DType::kFp32;

  auto Tie() const { return std::tie(m, n, k, layout_a, layout_b, dtype); }
  friend bool operator==(const GemmContext& a, const GemmContext& b) {
    return a.Tie() == b.Tie();
  }
};

struct ConvContext {
  int64_t n = 0;  // batch (Z in the thesis)
  int64_t h = 0;
  int64_t w = 0;
  int64_t c = 0;  // input channels (C_i)
  int64_t k = 0;  // output channels (C_o)
  int64_t r = 0;  // filter height
  int64_t s = 0;  // filter width
  int64_t pad_h = 0;
  int64_t pad_w = 0;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  DType dtype = DType::kFp32;

  // Output height and width.
  int64_t P() const {
    return (h + 2 * pad_h - dilation_h * (r - 1) - 1) / stride_h + 1;
  }
  int64_t Q() const {
    return (w + 2 * pad_w - dilation_w * (s - 1) - 1) / stride_w + 1;
  }

  auto Tie() const {
    return std::tie(n, h, w, c, k, r, s, pad_h, pad_w, stride_h, stride_w,
                    dilation_h, dilation_w, dtype);
  }
  friend bool operator==(const ConvContext& a, const ConvContext& b) {
    return a.Tie() == b.Tie();
  }
};

using Context = std::variant<GemmContext, ConvContext>;

// The GEMM a context computes: itself, or a convolution's implicit GEMM.
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

// INVALID_ARGUMENT naming the field (prefixed by `field`) and its range.
Status Validate(const GemmContext& ctx, std::string_view field = "gemm");
Status Validate(const ConvContext& ctx, std::string_view field = "conv");
// Dispatches, naming fields "<field>.gemm.m" or "<field>.conv.h".
Status Validate(const Context& ctx, std::string_view field = "context");

Op OpOf(const Context& ctx);
DType DTypeOf(const Context& ctx);
GemmShape ImplicitGemm(const Context& ctx);
// Floating-point operations: 2*M*N*K of the (implicit) GEMM.
double Flops(const Context& ctx);
// The fewest bytes any kernel must move: read every input once, write the
// output once.
double MinBytes(const Context& ctx);

// Canonical text, stable across versions (the store keys answers on it):
//   "gemm m=4096 n=16 k=4096 layout=NT dtype=fp32"
//   "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1
//    dtype=fp32"
std::string ToString(const Context& ctx);
// Parses a window pair for pad, stride or dilation: "3" is (3, 3); "3x1"
// and "3,1" are (3, 1). Errors name `field`. Ranges are Validate's job.
Status ParseWindowPair(std::string_view field, std::string_view text,
                       int64_t* h, int64_t* w);

// Parses ToString's format (and "pad=1" for square windows) and validates.
StatusOr<Context> ContextFromString(std::string_view text);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_CONTEXT_H_
