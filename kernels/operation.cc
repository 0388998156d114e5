#include "kernels/operation.h"

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<Op, 2> kOpNames{{{Op::kGemm, "gemm"}, {Op::kConv, "conv"}}};
constexpr EnumNames<DType, 4> kDTypeNames{{{DType::kFp32, "fp32"},
                                           {DType::kFp16, "fp16"},
                                           {DType::kBf16, "bf16"},
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
  }
  return 4;
}

}  // namespace blocktune
