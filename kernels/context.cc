#include "kernels/context.h"

#include <map>
#include <vector>

#include "kernels/validate.h"

namespace blocktune {
namespace {

Status CheckTensor(std::string_view field, std::string_view what,
                   std::initializer_list<int64_t> dims) {
  int64_t elements = 1;
  for (int64_t d : dims) {
    auto product = CheckedProduct(std::string(field) + ": " + std::string(what),
                                  elements, d, kMaxTensorElements);
    if (!product.ok()) return product.status();
    elements = *product;
  }
  return OkStatus();
}

// key=value words after the op word; every key once, none unknown.
StatusOr<std::map<std::string, std::string>> ParseFields(
    const std::vector<std::string_view>& words,
    std::initializer_list<std::string_view> keys) {
  std::map<std::string, std::string> fields;
  for (size_t i = 1; i < words.size(); ++i) {
    size_t eq = words[i].find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("context: expected key=value, got '" +
                             std::string(words[i]) + "'");
    }
    std::string key(words[i].substr(0, eq));
    bool known = false;
    for (auto k : keys) known |= (k == key);
    if (!known) return InvalidArgument("context: unknown key '" + key + "'");
    if (!fields.emplace(key, words[i].substr(eq + 1)).second) {
      return InvalidArgument("context: key '" + key + "' given twice");
    }
  }
  for (auto k : keys) {
    if (!fields.count(std::string(k))) {
      return InvalidArgument("context: missing key '" + std::string(k) + "'");
    }
  }
  return fields;
}

}  // namespace

Status ParseWindowPair(std::string_view field, std::string_view text,
                       int64_t* h, int64_t* w) {
  size_t sep = text.find_first_of(",x");
  auto parsed = ParseInt64(field, text.substr(0, sep));
  if (parsed.ok() && sep != std::string_view::npos) {
    *h = *parsed;
    parsed = ParseInt64(field, text.substr(sep + 1));
    if (parsed.ok()) *w = *parsed;
  } else if (parsed.ok()) {
    *h = *w = *parsed;
  }
  if (parsed.ok()) return OkStatus();
  return InvalidArgument(std::string(field) +
                         " must be an integer, or two as HxW or H,W; got '" +
                         std::string(text) + "'");
}

Status Validate(const GemmContext& ctx, std::string_view field) {
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "m"), ctx.m, 1, kMaxDim));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "n"), ctx.n, 1, kMaxDim));
  BT_RETURN_IF_ERROR(CheckRange(JoinField(field, "k"), ctx.k, 1, kMaxDim));
  BT_RETURN_IF_ERROR(CheckTensor(field, "elements of A (m*k)", {ctx.m, ctx.k}));
  BT_RETURN_IF_ERROR(CheckTensor(field, "elements of B (k*n)", {ctx.k, ctx.n}));
  BT_RETURN_IF_ERROR(CheckTensor(field, "elements of C (m*n)", {ctx.m, ctx.n}));
  return OkStatus();
}

Status Validate(const ConvContext& ctx, std::string_view field) {
  const std::pair<const char*, int64_t> dims[] = {
      {"n", ctx.n}, {"h", ctx.h}, {"w", ctx.w}, {"c", ctx.c}, {"k", ctx.k}};
  for (const auto& [name, value] : dims)
    BT_RETURN_IF_ERROR(CheckRange(JoinField(field, name), value, 1, kMaxDim));
  const std::tuple<const char*, int64_t, int64_t> windows[] = {
      {"r", ctx.r, 1},           {"s", ctx.s, 1},
      {"pad_h", ctx.pad_h, 0},   {"pad_w", ctx.pad_w, 0},
      {"stride_h", ctx.stride_h, 1}, {"stride_w", ctx.stride_w, 1},
      {"dilation_h", ctx.dilation_h, 1}, {"dilation_w", ctx.dilation_w, 1}};
  for (const auto& [name, value, lo] : windows) {
    BT_RETURN_IF_ERROR(
        CheckRange(JoinField(field, name), value, lo, kMaxWindow));
  }
  // All terms are now < 2^48, so these sums cannot overflow.
  const int64_t extent_h = ctx.dilation_h * (ctx.r - 1) + 1;
  const int64_t extent_w = ctx.dilation_w * (ctx.s - 1) + 1;
  if (extent_h > ctx.h + 2 * ctx.pad_h) {
    return InvalidArgument(
        std::string(field) + ": filter height dilation_h*(r-1)+1 = " +
        std::to_string(extent_h) + " must be at most h+2*pad_h = " +
        std::to_string(ctx.h + 2 * ctx.pad_h));
  }
  if (extent_w > ctx.w + 2 * ctx.pad_w) {
    return InvalidArgument(
        std::string(field) + ": filter width dilation_w*(s-1)+1 = " +
        std::to_string(extent_w) + " must be at most w+2*pad_w = " +
        std::to_string(ctx.w + 2 * ctx.pad_w));
  }
  BT_RETURN_IF_ERROR(
      CheckTensor(field, "elements of the input (n*h*w*c)",
                  {ctx.n, ctx.h, ctx.w, ctx.c}));
  BT_RETURN_IF_ERROR(CheckTensor(field, "elements of the filter (k*r*s*c)",
                                 {ctx.k, ctx.r, ctx.s, ctx.c}));
  BT_RETURN_IF_ERROR(CheckTensor(field, "elements of the output (n*p*q*k)",
                                 {ctx.n, ctx.P(), ctx.Q(), ctx.k}));
  return OkStatus();
}

Status Validate(const Context& ctx, std::string_view field) {
  if (const auto* gemm = std::get_if<GemmContext>(&ctx))
    return Validate(*gemm, JoinField(field, "gemm"));
  return Validate(std::get<ConvContext>(ctx), JoinField(field, "conv"));
}

Op OpOf(const Context& ctx) {
  return std::holds_alternative<GemmContext>(ctx) ? Op::kGemm : Op::kConv;
}

DType DTypeOf(const Context& ctx) {
  return std::visit([](const auto& c) { return c.dtype; }, ctx);
}

GemmShape ImplicitGemm(const Context& ctx) {
  if (const auto* gemm = std::get_if<GemmContext>(&ctx))
    return {gemm->m, gemm->n, gemm->k};
  const auto& conv = std::get<ConvContext>(ctx);
  return {conv.n * conv.P() * conv.Q(), conv.k, conv.c * conv.r * conv.s};
}

double Flops(const Context& ctx) {
  GemmShape g = ImplicitGemm(ctx);
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
         static_cast<double>(g.k);
}

double MinBytes(const Context& ctx) {
  double elements = 0;
  if (const auto* gemm = std::get_if<GemmContext>(&ctx)) {
    elements = double(gemm->m) * gemm->k + double(gemm->k) * gemm->n +
               double(gemm->m) * gemm->n;
  } else {
    const auto& c = std::get<ConvContext>(ctx);
    elements = double(c.n) * c.h * c.w * c.c + double(c.k) * c.r * c.s * c.c +
               double(c.n) * c.P() * c.Q() * c.k;
  }
  return elements * SizeOf(DTypeOf(ctx));
}

std::string ToString(const Context& ctx) {
  auto n = [](int64_t v) { return std::to_string(v); };
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    return "gemm m=" + n(g->m) + " n=" + n(g->n) + " k=" + n(g->k) +
           " layout=" + std::string(ToString(g->layout_a)) +
           std::string(ToString(g->layout_b)) +
           " dtype=" + std::string(ToString(g->dtype));
  }
  const auto& c = std::get<ConvContext>(ctx);
  return "conv n=" + n(c.n) + " h=" + n(c.h) + " w=" + n(c.w) +
         " c=" + n(c.c) + " k=" + n(c.k) + " r=" + n(c.r) + " s=" + n(c.s) +
         " pad=" + n(c.pad_h) + "x" + n(c.pad_w) + " stride=" + n(c.stride_h) +
         "x" + n(c.stride_w) + " dilation=" + n(c.dilation_h) + "x" +
         n(c.dilation_w) + " dtype=" + std::string(ToString(c.dtype));
}

StatusOr<Context> ContextFromString(std::string_view text) {
  std::vector<std::string_view> words = SplitWords(text);
  if (words.empty()) return InvalidArgument("context: empty string");
  BT_ASSIGN_OR_RETURN(Op op, OpFromString(words[0], "context op"));
  if (op == Op::kGemm) {
    BT_ASSIGN_OR_RETURN(auto f, ParseFields(words, {"m", "n", "k", "layout",
                                                    "dtype"}));
    GemmContext g;
    BT_ASSIGN_OR_RETURN(g.m, ParseInt64("m", f["m"]));
    BT_ASSIGN_OR_RETURN(g.n, ParseInt64("n", f["n"]));
    BT_ASSIGN_OR_RETURN(g.k, ParseInt64("k", f["k"]));
    const std::string& layout = f["layout"];
    if (layout.size() != 2) {
      return InvalidArgument("layout must be two letters (NN, NT, TN, TT), "
                             "got '" + layout + "'");
    }
    BT_ASSIGN_OR_RETURN(g.layout_a, LayoutFromString(layout.substr(0, 1),
                                                     "layout of A"));
    BT_ASSIGN_OR_RETURN(g.layout_b, LayoutFromString(layout.substr(1, 1),
                                                     "layout of B"));
    BT_ASSIGN_OR_RETURN(g.dtype, DTypeFromString(f["dtype"]));
    BT_RETURN_IF_ERROR(Validate(g));
    return Context(g);
  }
  BT_ASSIGN_OR_RETURN(auto f, ParseFields(words, {"n", "h", "w", "c", "k", "r",
                                                  "s", "pad", "stride",
                                                  "dilation", "dtype"}));
  ConvContext c;
  BT_ASSIGN_OR_RETURN(c.n, ParseInt64("n", f["n"]));
  BT_ASSIGN_OR_RETURN(c.h, ParseInt64("h", f["h"]));
  BT_ASSIGN_OR_RETURN(c.w, ParseInt64("w", f["w"]));
  BT_ASSIGN_OR_RETURN(c.c, ParseInt64("c", f["c"]));
  BT_ASSIGN_OR_RETURN(c.k, ParseInt64("k", f["k"]));
  BT_ASSIGN_OR_RETURN(c.r, ParseInt64("r", f["r"]));
  BT_ASSIGN_OR_RETURN(c.s, ParseInt64("s", f["s"]));
  BT_RETURN_IF_ERROR(ParseWindowPair("pad", f["pad"], &c.pad_h, &c.pad_w));
  BT_RETURN_IF_ERROR(ParseWindowPair("stride", f["stride"], &c.stride_h,
                               &c.stride_w));
  BT_RETURN_IF_ERROR(ParseWindowPair("dilation", f["dilation"], &c.dilation_h,
                               &c.dilation_w));
  BT_ASSIGN_OR_RETURN(c.dtype, DTypeFromString(f["dtype"]));
  BT_RETURN_IF_ERROR(Validate(c));
  return Context(c);
}

}  // namespace blocktune
