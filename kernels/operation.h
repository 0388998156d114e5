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

// Element type of inputs and outputs. The generators of issue 3 emit fp32;
// the others are accepted as contexts so stored data can name them.
enum class DType { kFp32, kFp16, kBf16, kFp64 };

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

// Bytes per element.
int SizeOf(DType dtype);

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_OPERATION_H_
