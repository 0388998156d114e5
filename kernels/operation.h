// The vocabulary of what blocktune tunes: the operation, the element type,
// and the storage layout of a GEMM operand (thesis §4.1).
#ifndef BLOCKTUNE_KERNELS_OPERATION_H_
#define BLOCKTUNE_KERNELS_OPERATION_H_

#include <string_view>

#include "kernels/status.h"

namespace blocktune {

// The parameterized kernel families of thesis §4.1.
enum class Op {
  kGemm,  // C = alpha * op(A) * op(B) + beta * C
  kConv,  // 2-D convolution, NHWC activations, KRSC filters (implicit GEMM)
};

// The precision of a context: the element type of inputs and outputs, and
// the math. fp32: FFMA on fp32. tf32: fp32 in and out, tensor-core math on
// inputs rounded to tf32 (cuBLAS's TF32 mode). bf16, fp16: that type in and
// out, fp32 accumulation. fp64 is accepted so stored data can name it.
enum class DType { kFp32, kFp16, kBf16, kFp64, kTf32 };

// Storage of a GEMM operand: N = as given (row-major M x K for A, K x N for
// B), T = transposed. "NT" names A normal and B transposed (C = A * B^T).
enum class Layout { kN, kT };

std::string_view ToString(Op op);
std::string_view ToString(DType dtype);
std::string_view ToString(Layout layout);

// Case-insensitive; errors name `field` and list the allowed spellings.
StatusOr<Op> OpFromString(std::string_view text, std::string_view field = "op");
StatusOr<DType> DTypeFromString(std::string_view text,
                                std::string_view field = "dtype");
StatusOr<Layout> LayoutFromString(std::string_view text,
                                  std::string_view field = "layout");

// Bytes per element in memory (tf32 is stored as fp32).
int SizeOf(DType dtype);
// The unit roundoff of the math (fp32 2^-24, tf32 2^-11, bf16 2^-8, fp16
// 2^-11, fp64 2^-53) and of the stored output (tf32: fp32's).
double MathRoundoff(DType dtype);
double StorageRoundoff(DType dtype);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_OPERATION_H_
