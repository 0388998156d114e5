#include "kernels/operation.h"

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<Op, 2> kOpNames{{{Op::kGemm, "gemm"}, {Op::kConv, "conv"}}};
constexpr EnumNames<DType, 5> kDTypeNames{{{DType::kFp32, "fp32"},
                                           {DType::kTf32, "tf32"},
                                           {DType::kBf16, "bf16"},
                                           {DType::kFp16, "fp16"},
                                           {DType::kFp64, "fp64"}}};
constexpr EnumNames<Layout, 2> kLayoutNames{
    {{Layout::kN, "N"}, {Layout::kT, "T"}}};

}  // namespace

std::string_view ToString(Op op) { return EnumToString(kOpNames, op); }
std::string_view ToString(DType dtype) {
  return EnumToString(kDTypeNames, dtype);
}
std::string_view ToString(Layout layout) {
  return EnumToString(kLayoutNames, layout);
}

StatusOr<Op> OpFromString(std::string_view text, std::string_view field) {
  return EnumFromString(kOpNames, text, field);
}
StatusOr<DType> DTypeFromString(std::string_view text,
                                std::string_view field) {
  return EnumFromString(kDTypeNames, text, field);
}
StatusOr<Layout> LayoutFromString(std::string_view text,
                                  std::string_view field) {
  return EnumFromString(kLayoutNames, text, field);
}

int SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return 4;
    case DType::kFp16: return 2;
    case DType::kBf16: return 2;
    case DType::kFp64: return 8;
    case DType::kTf32: return 4;
  }
  return 4;
}

double MathRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return 0x1p-24;
    case DType::kTf32: return 0x1p-11;
    case DType::kBf16: return 0x1p-8;
    case DType::kFp16: return 0x1p-11;
    case DType::kFp64: return 0x1p-53;
  }
  return 0x1p-24;
}

double StorageRoundoff(DType dtype) {
  return dtype == DType::kTf32 ? MathRoundoff(DType::kFp32)
                               : MathRoundoff(dtype);
}

}  // namespace blocktune
