// The fixed C++ of exported headers (header_export.h): the part every
// header shares (types, the fit rules, the network evaluation), and each
// op's lookup after its exact match. header_export.cc writes the tables
// and models around them.
#ifndef BLOCKTUNE_CLIENT_HEADER_TEXT_H_
#define BLOCKTUNE_CLIENT_HEADER_TEXT_H_

#include <string>

#include "kernels/operation.h"

namespace blocktune {

// The precisions a header can name, in the order of its DType enum.
inline constexpr DType kHeaderPrecisions[] = {DType::kFp32, DType::kTf32,
                                              DType::kBf16, DType::kFp16};

// The header's name of a precision: "DType::kBf16".
std::string HeaderDTypeName(DType d);

// The shared part, guarded by BLOCKTUNE_TUNED_COMMON_V7_ so that headers
// of both ops can be included in one translation unit: the same text for
// every header of this version. Needs <cmath>, <cstddef>, <cstdint> and
// <cstring> before it.
std::string TunedCommonText();

// The rest of `op`'s lookup ("Gemm" or "Conv") after its exact match:
// kPredicted over the models (when `models`), kNearest by `distance` (an
// expression over the entry `e`), kDefault. It uses the names the lookup
// has in scope: view, operands, dtype, and predict(model, row) with models.
std::string TunedLookupText(const std::string& op, bool models,
                            const std::string& distance);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_HEADER_TEXT_H_
