// The embedded surrogates of an exported header (header_export.h): a
// stored model (v1::Model weights and normalization) written as C++ arrays
// and a function that evaluates it in float exactly as the daemon does
// (models/surrogate.cc), so that a header's predictions match blocktuned's.
#ifndef BLOCKTUNE_CLIENT_HEADER_MODEL_H_
#define BLOCKTUNE_CLIENT_HEADER_MODEL_H_

#include <ostream>
#include <string>

#include "blocktune/v1/blocktune.pb.h"
#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/status.h"

namespace blocktune {

// What a stored model scores: configurations of `family` in contexts of
// `precision`.
struct HeaderModel {
  DType precision = DType::kFp32;
  const KernelFamily* family = nullptr;
};

// The model's precision and family (a model older than families: the op's
// block-shape family in fp32). NOT_FOUND for a family this build lacks.
StatusOr<HeaderModel> HeaderModelKey(const v1::Model& model, Op op);

// Writes the model's arrays, named from `prefix` ("kGemmMmaBf16": its
// kGemmMmaBf16Mean, ..., Layers), and
//   inline float GemmMmaBf16LnFlops(const float* features)
// (the prefix without its k), which maps `family`'s features
// (KernelFamily::FeatureNames of the model's feature set, in order; the set
// goes to *feature_set and the SM count of its wave features to *wave_sms
// when given) to ln(flop/s). An ensemble's
// prediction is the mean of its members', added in member order, as the
// daemon adds them. The text uses the header's detail::Mlp and MlpLayer.
// INVALID_ARGUMENT if the weights or normalization do not parse, are not
// of `family`'s features, or a layer is wider than 1024.
Status WriteHeaderModel(std::ostream& out, const v1::Model& model,
                        const KernelFamily& family, const std::string& prefix,
                        int* feature_set = nullptr, int* wave_sms = nullptr);

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_HEADER_MODEL_H_
