#include "models/features.h"

namespace blocktune {

const std::vector<std::string>& FeatureNames(Op op) {
  static const std::vector<std::string> gemm =
      BlockShapeFamily(Op::kGemm).FeatureNames();
  static const std::vector<std::string> conv =
      BlockShapeFamily(Op::kConv).FeatureNames();
  return op == Op::kGemm ? gemm : conv;
}

std::vector<float> LogFeatures(const Context& ctx, const BlockShape& xb) {
  std::vector<float> f;
  BlockShapeFamily(OpOf(ctx)).Features(ctx, ToParams(xb), &f);
  return f;
}

}  // namespace blocktune
