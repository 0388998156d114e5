#include "models/features.h"

#include <cmath>

namespace blocktune {

const std::vector<std::string>& FeatureNames(Op op) {
  static const std::vector<std::string> kGemm = {
      "log2_ml", "log2_nl", "log2_ms", "log2_ns", "log2_u", "log2_kg",
      "log2_m",  "log2_n",  "log2_k",  "a_transposed", "b_transposed"};
  static const std::vector<std::string> kConv = {
      "log2_ml", "log2_nl", "log2_ms", "log2_ns", "log2_u", "log2_kg",
      "log2_n", "log2_p", "log2_q", "log2_c", "log2_k", "log2_r", "log2_s",
      "log2_stride_h", "log2_stride_w", "log2_dilation_h", "log2_dilation_w",
      "log2_1p_pad_h", "log2_1p_pad_w"};
  return op == Op::kGemm ? kGemm : kConv;
}

std::vector<float> LogFeatures(const Context& ctx, const BlockShape& xb) {
  auto lg = [](int64_t v) { return static_cast<float>(std::log2(double(v))); };
  std::vector<float> f = {lg(xb.ml), lg(xb.nl), lg(xb.ms),
                          lg(xb.ns), lg(xb.u),  lg(xb.kg)};
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    f.insert(f.end(), {lg(g->m), lg(g->n), lg(g->k),
                       g->layout_a == Layout::kT ? 1.f : 0.f,
                       g->layout_b == Layout::kT ? 1.f : 0.f});
    return f;
  }
  const auto& c = std::get<ConvContext>(ctx);
  f.insert(f.end(), {lg(c.n), lg(c.P()), lg(c.Q()), lg(c.c), lg(c.k), lg(c.r),
                     lg(c.s), lg(c.stride_h), lg(c.stride_w), lg(c.dilation_h),
                     lg(c.dilation_w), lg(1 + c.pad_h), lg(1 + c.pad_w)});
  return f;
}

}  // namespace blocktune
