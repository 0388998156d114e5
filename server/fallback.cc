#include "server/fallback.h"

#include <cmath>
#include <limits>

namespace blocktune {
namespace {

double LogRatio2(int64_t a, int64_t b) {
  const double r = std::log2(double(a)) - std::log2(double(b));
  return r * r;
}

}  // namespace

double ContextDistance(const Context& a, const Context& b) {
  if (OpOf(a) != OpOf(b) || DTypeOf(a) != DTypeOf(b))
    return std::numeric_limits<double>::infinity();
  if (const auto* ga = std::get_if<GemmContext>(&a)) {
    const auto& gb = std::get<GemmContext>(b);
    return LogRatio2(ga->m, gb.m) + LogRatio2(ga->n, gb.n) +
           LogRatio2(ga->k, gb.k) + (ga->layout_a != gb.layout_a) +
           (ga->layout_b != gb.layout_b);
  }
  const auto& ca = std::get<ConvContext>(a);
  const auto& cb = std::get<ConvContext>(b);
  return LogRatio2(ca.n, cb.n) + LogRatio2(ca.h, cb.h) + LogRatio2(ca.w, cb.w) +
         LogRatio2(ca.c, cb.c) + LogRatio2(ca.k, cb.k) + LogRatio2(ca.r, cb.r) +
         LogRatio2(ca.s, cb.s) + (ca.pad_h != cb.pad_h) +
         (ca.pad_w != cb.pad_w) + (ca.stride_h != cb.stride_h) +
         (ca.stride_w != cb.stride_w) + (ca.dilation_h != cb.dilation_h) +
         (ca.dilation_w != cb.dilation_w);
}

bool FitsContext(const Context& ctx, const KernelConfig& kernel,
                 const KernelLimits& limits) {
  const KernelFamily* family = kernel.Family();
  if (family == nullptr || family->op() != OpOf(ctx) ||
      !family->Implements(DTypeOf(ctx)) ||
      !family->ValidateParams(kernel.params).ok()) {
    return false;
  }
  const Problem problem(ctx);
  return SplitHasWork(problem, family->Shape(problem, kernel.params)) &&
         family->FirstFailingRule(problem, kernel.params, limits) < 0;
}

bool FitsContext(const Context& ctx, const BlockShape& xb,
                 const KernelLimits& limits) {
  return FitsContext(ctx, KernelConfig::OfBlockShape(OpOf(ctx), xb), limits);
}

StatusOr<KernelConfig> DefaultKernel(const Context& ctx,
                                     const KernelLimits& limits,
                                     std::string_view family) {
  const KernelFamily* f = nullptr;
  if (family.empty()) {
    BT_ASSIGN_OR_RETURN(f, DefaultFamily(OpOf(ctx), DTypeOf(ctx)));
  } else {
    BT_ASSIGN_OR_RETURN(f, FindFamily(family));
  }
  BT_ASSIGN_OR_RETURN(Params params, f->Default(Problem(ctx), limits));
  return KernelConfig::Current(*f, params);
}

StatusOr<BlockShape> DefaultBlockShape(const Context& ctx,
                                       const KernelLimits& limits) {
  BT_ASSIGN_OR_RETURN(Params params,
                      BlockShapeFamily(OpOf(ctx)).Default(Problem(ctx), limits));
  return ToBlockShape(params);
}

}  // namespace blocktune
