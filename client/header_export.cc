#include "client/header_export.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "kernels/block_shape.h"
#include "kernels/operation.h"
#include "models/surrogate.pb.h"
#include "tuner/sampler.h"

namespace blocktune {
namespace {

// What every exported header shares; guarded so that a GEMM and a
// convolution header can be included in one translation unit.
constexpr char kCommon[] = R"(#ifndef BLOCKTUNE_TUNED_COMMON_V1_
#define BLOCKTUNE_TUNED_COMMON_V1_
namespace blocktune {
namespace tuned {

// x_B of thesis 4.1: an ml x nl block of C per program, ms x ns per thread,
// u the reduction step staged in shared memory, kg programs per reduction.
struct BlockShape {
  int @BLOCK_FIELDS@;
};

// How a returned configuration matches the shape asked for.
enum class Match {
  kExact,      // exported for exactly this shape
  kPredicted,  // the embedded model's fastest candidate for this shape
  kNearest,    // exported for the nearest shape (distance below)
  kDefault,    // nothing fits: an untuned default
};

// Storage of A and B in C = op(A) * op(B): N as given, T transposed.
enum class Layout { NN, NT, TN, TT };

struct Config {
  BlockShape block;
  Match match;
  // kExact: the exported answer's time (measured, else predicted);
  // kPredicted: the model's prediction for this shape; else 0.
  double seconds;
};

// An fp32 convolution, NHWC input, KRSC filter.
struct ConvShape {
  std::int64_t n = 1, h = 0, w = 0, c = 0, k = 0, r = 3, s = 3;
  std::int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
};

namespace detail {

constexpr BlockShape kDefaultBlock = @DEFAULT_BLOCK@;

// The daemon's sizes (kernels/family.h WorkingSetBytes, tuner/sampler.h):
// one of the K_G partial sums, and the memory a benchmark's working set may
// take (or the operands alone when larger).
constexpr double kPartialSumBytes = @PARTIAL_SUM_BYTES@;
constexpr double kMaxWorkingSetBytes = @MAX_WORKING_SET_BYTES@;

inline double SqLog2Ratio(double a, double b) {
  const double r = std::log2(a) - std::log2(b);
  return r * r;
}

inline float Log2f(std::int64_t v) {
  return static_cast<float>(std::log2(static_cast<double>(v)));
}

// Whether a block shape can run for an (implicit) GEMM of m x n x k whose
// operands take `operand_bytes`: a split leaves every program at least one
// reduction step, the grid fits, and the K_G partial sums fit in memory
// (1 GiB in all, or the operands alone when larger) -- the rules the
// daemon's search applies beyond the context-free hardware ones.
inline bool Fits(const BlockShape& b, std::int64_t m, std::int64_t n,
                 std::int64_t k, double operand_bytes) {
  if (b.kg > 1 && std::int64_t{b.kg} * b.u > k) return false;
  if ((n + b.nl - 1) / b.nl > 65535) return false;
  if (b.kg > 1) {
    const double limit =
        operand_bytes > kMaxWorkingSetBytes ? operand_bytes : kMaxWorkingSetBytes;
    if (operand_bytes + kPartialSumBytes * b.kg * double(m) * double(n) > limit)
      return false;
  }
  return true;
}

// The candidate that `fits` accepts with the fewest `seconds`; null if none
// fits.
template <std::size_t N, typename FitsFn, typename SecondsFn>
inline const BlockShape* Fastest(const BlockShape (&candidates)[N], FitsFn fits,
                                 SecondsFn seconds, double* best_seconds) {
  const BlockShape* best = nullptr;
  for (const BlockShape& b : candidates) {
    if (!fits(b)) continue;
    const double s = seconds(b);
    if (best == nullptr || s < *best_seconds) {
      best = &b;
      *best_seconds = s;
    }
  }
  return best;
}

// The entry whose block shape `fits` at the least `distance`; null if none.
template <typename Entry, std::size_t N, typename FitsFn, typename DistanceFn>
inline const Entry* Nearest(const Entry (&entries)[N], FitsFn fits,
                            DistanceFn distance) {
  const Entry* nearest = nullptr;
  double nearest_distance = 0;
  for (const Entry& e : entries) {
    if (!fits(e.block)) continue;
    const double d = distance(e);
    if (nearest == nullptr || d < nearest_distance) {
      nearest = &e;
      nearest_distance = d;
    }
  }
  return nearest;
}

struct MlpLayer {
  int inputs, outputs;
  const float* weight;  // [outputs][inputs]
  const float* bias;
};

// The surrogate: normalized features through ReLU layers (none after the
// last), in float, summing inputs in order, as blocktuned does.
inline float Mlp(const MlpLayer* layers, int count, const float* features,
                 const float* mean, const float* stddev, int inputs) {
  float a[1024], b[1024];
  for (int i = 0; i < inputs; ++i) a[i] = (features[i] - mean[i]) / stddev[i];
  float* in = a;
  float* out = b;
  for (int l = 0; l < count; ++l) {
    const MlpLayer& layer = layers[l];
    for (int o = 0; o < layer.outputs; ++o) {
      const float* w = layer.weight + static_cast<std::size_t>(o) * layer.inputs;
      float sum = layer.bias[o];
      for (int i = 0; i < layer.inputs; ++i) sum += w[i] * in[i];
      out[o] = (l + 1 < count && sum < 0.f) ? 0.f : sum;
    }
    float* t = in;
    in = out;
    out = t;
  }
  return in[0];
}

}  // namespace detail
}  // namespace tuned
}  // namespace blocktune
#endif  // BLOCKTUNE_TUNED_COMMON_V1_
)";

std::string Hex(float v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%af", static_cast<double>(v));
  return buf;
}

std::string Num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// A block shape as the header's BlockShape initializer, in the order of its
// family's parameters.
std::string Block(const BlockShape& b) {
  const Params p = ToParams(b);
  std::string out = "{";
  for (int i = 0; i < p.size; ++i) out += (i ? ", " : "") + std::to_string(p[i]);
  return out + "}";
}

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

// Bytes of an operand element: the block-shape families compute fp32.
std::string ElementBytes() { return std::to_string(SizeOf(DType::kFp32)) + ".0"; }

// kCommon with the block-shape families' names, default and sizes filled in
// (the same for both ops, as the shared guard requires, and the same values
// as headers exported before, so that headers of two versions mix).
std::string Common() {
  const KernelFamily& family = BlockShapeFamily(Op::kGemm);
  std::string fields;
  for (const ParamSpec& spec : family.params())
    fields += (fields.empty() ? "" : ", ") + spec.LowerName();
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%.1f", double(kDefaultMaxBytes));
  std::string text = kCommon;
  ReplaceAll(&text, "@BLOCK_FIELDS@", fields);
  ReplaceAll(&text, "@DEFAULT_BLOCK@",
             Block(ToBlockShape(family.DefaultCandidates().front())));
  ReplaceAll(&text, "@PARTIAL_SUM_BYTES@", ElementBytes());  // fp32 sums
  ReplaceAll(&text, "@MAX_WORKING_SET_BYTES@", limit);
  return text;
}

// One feature of the embedded model as a C++ expression over the names of
// gemm_predict_seconds (block, m, n, k, layout) or conv_predict_seconds
// (block, shape, and its output size p, q). INVALID_ARGUMENT for a feature
// the header does not know how to compute.
StatusOr<std::string> FeatureExpression(Op op, const std::string& feature) {
  if (op == Op::kGemm && feature == "a_transposed")
    return std::string("(layout == Layout::TN || layout == Layout::TT) ? 1.f : 0.f");
  if (op == Op::kGemm && feature == "b_transposed")
    return std::string("(layout == Layout::NT || layout == Layout::TT) ? 1.f : 0.f");
  std::string_view v = feature;
  const bool log2 = v.substr(0, 5) == "log2_";
  if (log2) v.remove_prefix(5);
  const bool plus_one = log2 && v.substr(0, 3) == "1p_";
  if (plus_one) v.remove_prefix(3);
  std::string var(v);
  static const char* const kGemm[] = {"m", "n", "k"};
  static const char* const kConv[] = {"n", "c", "k", "r", "s", "stride_h",
                                      "stride_w", "dilation_h", "dilation_w",
                                      "pad_h", "pad_w", "p", "q"};
  bool known = false;
  if (op == Op::kGemm) {
    for (const char* name : kGemm) known = known || var == name;
  } else {
    for (const char* name : kConv) known = known || var == name;
    if (var != "p" && var != "q") var = "shape." + var;
  }
  if (!log2 || !known) {
    return InvalidArgument("feature '" + feature +
                           "': the exported header cannot compute it");
  }
  return "detail::Log2f(" + std::string(plus_one ? "1 + " : "") + var + ")";
}

// The embedded model's input for `op`: its family's features
// (KernelFamily::Features), in order, as `const float f[N] = {...};`.
StatusOr<std::string> FeatureArray(Op op) {
  const KernelFamily& family = BlockShapeFamily(op);
  const std::vector<std::string> names = family.FeatureNames();
  std::vector<std::string> terms;
  for (const ParamSpec& spec : family.params()) {
    const std::string field = "block." + spec.LowerName();
    terms.push_back(spec.log_feature ? "detail::Log2f(" + field + ")"
                                     : "static_cast<float>(" + field + ")");
  }
  for (size_t i = terms.size(); i < names.size(); ++i) {
    BT_ASSIGN_OR_RETURN(std::string term, FeatureExpression(op, names[i]));
    terms.push_back(term);
  }
  std::string out = "  const float f[" + std::to_string(terms.size()) + "] = {";
  for (size_t i = 0; i < terms.size(); ++i) {
    out += "\n      " + terms[i] + (i + 1 < terms.size() ? "," : "};\n");
  }
  return out;
}

const char* LayoutName(const GemmContext& g) {
  static const char* const kNames[2][2] = {{"NN", "NT"}, {"TN", "TT"}};
  return kNames[g.layout_a == Layout::kT][g.layout_b == Layout::kT];
}

// `name`[] as a float array, eight values a line.
void FloatArray(std::ostream& out, const std::string& name,
                const google::protobuf::RepeatedField<float>& values) {
  out << "inline constexpr float " << name << "[] = {";
  for (int i = 0; i < values.size(); ++i) {
    out << (i % 8 == 0 ? "\n    " : " ") << Hex(values.Get(i)) << ",";
  }
  out << "};\n";
}

// One network of the embedded model: its arrays, and `<name>Layers`,
// `<name>Mean`, ...; `name` is kGemm (kConv), or kGemmM0, kGemmM1, ... for
// the members of an ensemble.
Status WriteNetwork(std::ostream& out, const v1::Model& model, Op op,
                    const std::string& name, const models::Weights& weights,
                    const models::Normalization& norm, int* inputs_out) {
  const int inputs = norm.features_size();
  const int expected = static_cast<int>(BlockShapeFamily(op).FeatureNames().size());
  const std::string opname(ToString(op));
  if (weights.format() != "blocktune.mlp.v1" || weights.layers().empty() ||
      norm.target() != "ln(flop/s)") {
    return InvalidArgument("model " + std::to_string(model.id()) +
                           ": weights do not parse as blocktune.mlp.v1");
  }
  if (inputs != expected || norm.mean_size() != inputs ||
      norm.stddev_size() != inputs || weights.layers(0).inputs() != inputs) {
    return InvalidArgument("model " + std::to_string(model.id()) + " takes " +
                           std::to_string(inputs) + " features; the " + opname +
                           " header computes " + std::to_string(expected));
  }
  int previous = inputs;
  for (const models::Layer& l : weights.layers()) {
    if (l.inputs() != previous || l.outputs() < 1 || l.outputs() > 1024 ||
        l.weight_size() != l.inputs() * l.outputs() || l.bias_size() != l.outputs()) {
      return InvalidArgument("model " + std::to_string(model.id()) +
                             ": inconsistent layer sizes");
    }
    previous = l.outputs();
  }
  if (previous != 1) {
    return InvalidArgument("model " + std::to_string(model.id()) +
                           ": the last layer must have one output");
  }
  const std::string& p = name;
  FloatArray(out, p + "Mean", norm.mean());
  FloatArray(out, p + "Stddev", norm.stddev());
  for (int l = 0; l < weights.layers_size(); ++l) {
    FloatArray(out, p + "W" + std::to_string(l), weights.layers(l).weight());
    FloatArray(out, p + "B" + std::to_string(l), weights.layers(l).bias());
  }
  out << "inline constexpr MlpLayer " << p << "Layers[] = {\n";
  for (int l = 0; l < weights.layers_size(); ++l) {
    out << "    {" << weights.layers(l).inputs() << ", "
        << weights.layers(l).outputs() << ", " << p << "W" << l << ", " << p << "B"
        << l << "},\n";
  }
  out << "};\n";
  // Full precision for the target's scale: it enters every prediction.
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", norm.target_mean());
  out << "inline constexpr double " << p << "TargetMean = " << buf << ";\n";
  std::snprintf(buf, sizeof(buf), "%.17g", norm.target_std());
  out << "inline constexpr double " << p << "TargetStd = " << buf << ";\n";
  *inputs_out = inputs;
  return OkStatus();
}

// The expression of one network's ln(flop/s), as the daemon computes it
// (models/surrogate.cc): float(y * std + mean).
std::string NetworkLnFlops(const std::string& p, int layers, int inputs) {
  return "static_cast<float>(Mlp(" + p + "Layers, " + std::to_string(layers) +
         ", features, " + p + "Mean, " + p + "Stddev, " +
         std::to_string(inputs) + ") * " + p + "TargetStd + " + p +
         "TargetMean)";
}

// The embedded model: its arrays and `<Op>LnFlops`; features as its family
// computes them (FeatureArray). An ensemble's prediction is the mean of
// its members', added in member order, as the daemon adds them.
Status WriteModel(std::ostream& out, const HeaderSpec& spec, const std::string& op) {
  const v1::Model& model = *spec.model;
  models::Weights weights;
  models::Normalization norm;
  if (!weights.ParseFromString(model.weights()) ||
      !norm.ParseFromString(model.normalization())) {
    return InvalidArgument("model " + std::to_string(model.id()) +
                           ": weights or normalization do not parse");
  }
  const std::string p = "k" + op;  // kGemm / kConv
  const bool ensemble = weights.format() == "blocktune.mlp-ensemble.v1";
  const int members = ensemble ? weights.members_size() : 1;
  if (ensemble && (members < 2 || weights.member_normalizations_size() != members)) {
    return InvalidArgument("model " + std::to_string(model.id()) +
                           ": an ensemble needs 2 or more members, each with "
                           "its normalization");
  }
  out << "\n// The surrogate f(x_B, x_C): model " << model.id() << ", hidden layers "
      << model.architecture();
  if (ensemble) out << ", the mean of " << members << " networks";
  out << ". Inputs:";
  for (const std::string& f : norm.features()) out << " " << f;
  out << ".\n// Output: normalized ln(flop/s).\n";
  std::vector<std::string> terms;
  for (int m = 0; m < members; ++m) {
    const std::string name = ensemble ? p + "M" + std::to_string(m) : p;
    const models::Weights& w = ensemble ? weights.members(m) : weights;
    const models::Normalization& n =
        ensemble ? weights.member_normalizations(m) : norm;
    int inputs = 0;
    BT_RETURN_IF_ERROR(WriteNetwork(out, model, spec.op, name, w, n, &inputs));
    terms.push_back(NetworkLnFlops(name, w.layers_size(), inputs));
  }
  out << "inline float " << p.substr(1) << "LnFlops(const float* features) {\n";
  if (!ensemble) {
    out << "  return " << terms[0] << ";\n}\n";
    return OkStatus();
  }
  out << "  float sum = " << terms[0] << ";\n";
  for (int m = 1; m < members; ++m) out << "  sum += " << terms[m] << ";\n";
  out << "  return sum / " << members << ".0f;\n}\n";
  return OkStatus();
}

void WriteProvenance(std::ostream& out, const HeaderSpec& spec, const std::string& file_op) {
  const v1::DeviceFingerprint& d = spec.device;
  std::map<std::string, int> sources;
  for (const HeaderEntry& e : spec.entries) ++sources[e.source];
  out << "// Tuned " << file_op << " block shapes from blocktune. Generated; do not edit.\n"
      << "//\n"
      << "// device:  " << d.name() << " (sm_" << d.cc_major() << d.cc_minor()
      << ", " << d.sm_count() << " SMs)\n"
      << "// driver:  " << (d.driver_version().empty() ? "unknown" : d.driver_version())
      << ", CUDA " << (d.cuda_version().empty() ? "unknown" : d.cuda_version()) << "\n"
      << "// ptxas:   " << (d.ptxas_version().empty() ? "unknown" : d.ptxas_version()) << "\n";
  if (spec.model) {
    out << "// model:   " << spec.model->id() << " (hidden layers "
        << spec.model->architecture() << ", libtorch "
        << (spec.model->libtorch_version().empty() ? "?" : spec.model->libtorch_version())
        << ", " << spec.model->training_samples() << " training samples)\n"
        << "//          " << spec.model->training_set() << "\n";
  } else {
    out << "// model:   none (exported without --with-model)\n";
  }
  out << "// date:    " << spec.generated_utc << "\n"
      << "// command: " << spec.command << "\n"
      << "// answers: " << spec.entries.size() << " (";
  bool first = true;
  for (const auto& [source, n] : sources) {
    out << (first ? "" : ", ") << source << " " << n;
    first = false;
  }
  out << "), " << spec.candidates.size() << " candidate block shapes\n"
      << "//\n"
      << "// Self-contained C++17; needs only the standard library.\n"
      << "//\n";
}

}  // namespace

StatusOr<std::string> WriteTunedHeader(const HeaderSpec& spec) {
  if (spec.entries.empty()) {
    return InvalidArgument("entries: a header needs at least one answer");
  }
  const bool gemm = spec.op == Op::kGemm;
  const std::string op = gemm ? "Gemm" : "Conv";
  const std::string guard = gemm ? "BLOCKTUNE_TUNED_GEMM_H_" : "BLOCKTUNE_TUNED_CONV_H_";
  std::ostringstream out;
  WriteProvenance(out, spec, gemm ? "GEMM" : "convolution");
  if (gemm) {
    out << "// blocktune::tuned::gemm_config(m, n, k, layout) returns, in order:\n"
           "//   kExact     the answer exported for exactly (m, n, k, layout);\n";
  } else {
    out << "// blocktune::tuned::conv_config(shape) returns, in order:\n"
           "//   kExact     the answer exported for exactly this shape;\n";
  }
  if (spec.model) {
    out << "//   kPredicted the candidate block shape the embedded model predicts\n"
           "//              fastest, among those that fit the shape;\n";
  }
  out << "//   kNearest   the answer of the nearest exported shape whose block shape\n"
         "//              fits. Distance: the sum over "
      << (gemm ? "M, N and K" : "N, H, W, C, K, R and S")
      << " of the squared\n"
         "//              log2 ratio, plus 1 for every "
      << (gemm ? "operand layout" : "pad, stride or dilation")
      << " that differs;\n"
         "//   kDefault   64x64 tiles of 4x4 per thread, U = 8, no split.\n"
         "// A block shape fits when a split leaves every program at least one\n"
         "// reduction step (K_G * U <= K), ceil(N / N_L) <= 65535, and the K_G\n"
         "// partial sums fit in 1 GiB with the operands.\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <cmath>\n#include <cstddef>\n#include <cstdint>\n\n"
      << Common() << "\nnamespace blocktune {\nnamespace tuned {\nnamespace detail {\n\n";

  // The table.
  if (gemm) {
    out << "struct GemmEntry {\n  std::int64_t m, n, k;\n  Layout layout;\n"
           "  BlockShape block;\n  double seconds;\n};\n"
           "inline constexpr GemmEntry kGemmEntries[] = {\n";
    for (const HeaderEntry& e : spec.entries) {
      const auto& g = std::get<GemmContext>(e.context);
      out << "    {" << g.m << ", " << g.n << ", " << g.k << ", Layout::"
          << LayoutName(g) << ", " << Block(e.block_shape) << ", " << Num(e.seconds)
          << "},\n";
    }
  } else {
    out << "struct ConvEntry {\n  ConvShape shape;\n  BlockShape block;\n"
           "  double seconds;\n};\n"
           "inline constexpr ConvEntry kConvEntries[] = {\n";
    for (const HeaderEntry& e : spec.entries) {
      const auto& c = std::get<ConvContext>(e.context);
      out << "    {{" << c.n << ", " << c.h << ", " << c.w << ", " << c.c << ", "
          << c.k << ", " << c.r << ", " << c.s << ", " << c.pad_h << ", "
          << c.pad_w << ", " << c.stride_h << ", " << c.stride_w << ", "
          << c.dilation_h << ", " << c.dilation_w << "}, " << Block(e.block_shape)
          << ", " << Num(e.seconds) << "},\n";
    }
  }
  out << "};\n";

  std::string features;
  if (spec.model) {
    BT_ASSIGN_OR_RETURN(features, FeatureArray(spec.op));
    out << "inline constexpr BlockShape k" << op << "Candidates[] = {\n";
    for (const BlockShape& b : spec.candidates) out << "    " << Block(b) << ",\n";
    out << "};\n";
    BT_RETURN_IF_ERROR(WriteModel(out, spec, op));
  }

  // Shape helpers and the lookup.
  out << "\n// Bytes of an operand element.\ninline constexpr double k" << op
      << "ElementBytes = " << ElementBytes() << ";\n";
  if (gemm) {
    out << R"(
inline double GemmOperandBytes(std::int64_t m, std::int64_t n, std::int64_t k) {
  return kGemmElementBytes *
         (double(m) * double(n) + double(m) * double(k) + double(k) * double(n));
}

inline double GemmDistance(const GemmEntry& e, std::int64_t m, std::int64_t n,
                           std::int64_t k, Layout layout) {
  const int a = layout == Layout::TN || layout == Layout::TT;
  const int b = layout == Layout::NT || layout == Layout::TT;
  const int ea = e.layout == Layout::TN || e.layout == Layout::TT;
  const int eb = e.layout == Layout::NT || e.layout == Layout::TT;
  return SqLog2Ratio(double(e.m), double(m)) + SqLog2Ratio(double(e.n), double(n)) +
         SqLog2Ratio(double(e.k), double(k)) + (a != ea) + (b != eb);
}

}  // namespace detail
)";
    if (spec.model) {
      out << R"(
// The embedded model's predicted time, in seconds, of block shape `block`
// for C = op(A) op(B) of m x n x k (as blocktuned predicts it).
inline double gemm_predict_seconds(std::int64_t m, std::int64_t n, std::int64_t k,
                                   Layout layout, const BlockShape& block) {
)" << features << R"(  const double flops = 2.0 * double(m) * double(n) * double(k);
  return flops / std::exp(static_cast<double>(detail::GemmLnFlops(f)));
}
)";
    }
    out << R"(
// The block shape to run C = op(A) op(B) of m x n x k with (see the top of
// this file for the order of preference).
inline Config gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                          Layout layout = Layout::NN) {
  for (const detail::GemmEntry& e : detail::kGemmEntries) {
    if (e.m == m && e.n == n && e.k == k && e.layout == layout)
      return {e.block, Match::kExact, e.seconds};
  }
  const double operands = detail::GemmOperandBytes(m, n, k);
  auto fits = [&](const BlockShape& b) {
    return detail::Fits(b, m, n, k, operands);
  };
)";
    if (spec.model) {
      out << R"(  double seconds = 0;
  if (const BlockShape* best = detail::Fastest(
          detail::kGemmCandidates, fits,
          [&](const BlockShape& b) { return gemm_predict_seconds(m, n, k, layout, b); },
          &seconds)) {
    return {*best, Match::kPredicted, seconds};
  }
)";
    }
    out << R"(  const detail::GemmEntry* nearest = detail::Nearest(
      detail::kGemmEntries, fits, [&](const detail::GemmEntry& e) {
        return detail::GemmDistance(e, m, n, k, layout);
      });
  if (nearest != nullptr) return {nearest->block, Match::kNearest, 0.0};
  return {detail::kDefaultBlock, Match::kDefault, 0.0};
}
)";
  } else {
    out << R"(
inline std::int64_t ConvP(const ConvShape& s) {
  return (s.h + 2 * s.pad_h - s.dilation_h * (s.r - 1) - 1) / s.stride_h + 1;
}
inline std::int64_t ConvQ(const ConvShape& s) {
  return (s.w + 2 * s.pad_w - s.dilation_w * (s.s - 1) - 1) / s.stride_w + 1;
}
inline bool SameShape(const ConvShape& a, const ConvShape& b) {
  return a.n == b.n && a.h == b.h && a.w == b.w && a.c == b.c && a.k == b.k &&
         a.r == b.r && a.s == b.s && a.pad_h == b.pad_h && a.pad_w == b.pad_w &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w;
}
inline double ConvDistance(const ConvShape& a, const ConvShape& b) {
  return SqLog2Ratio(double(a.n), double(b.n)) + SqLog2Ratio(double(a.h), double(b.h)) +
         SqLog2Ratio(double(a.w), double(b.w)) + SqLog2Ratio(double(a.c), double(b.c)) +
         SqLog2Ratio(double(a.k), double(b.k)) + SqLog2Ratio(double(a.r), double(b.r)) +
         SqLog2Ratio(double(a.s), double(b.s)) + (a.pad_h != b.pad_h) +
         (a.pad_w != b.pad_w) + (a.stride_h != b.stride_h) +
         (a.stride_w != b.stride_w) + (a.dilation_h != b.dilation_h) +
         (a.dilation_w != b.dilation_w);
}
inline bool ConvFits(const BlockShape& b, const ConvShape& s) {
  const std::int64_t m = s.n * ConvP(s) * ConvQ(s);
  const double operands = kConvElementBytes * (double(m) * double(s.k) +
                                 double(s.n) * double(s.h) * double(s.w) * double(s.c) +
                                 double(s.k) * double(s.r) * double(s.s) * double(s.c));
  return Fits(b, m, s.k, s.c * s.r * s.s, operands);
}

}  // namespace detail
)";
    if (spec.model) {
      out << R"(
// The embedded model's predicted time, in seconds, of block shape `block`
// for the convolution `shape` (as blocktuned predicts it).
inline double conv_predict_seconds(const ConvShape& shape, const BlockShape& block) {
  const std::int64_t p = detail::ConvP(shape), q = detail::ConvQ(shape);
)" << features << R"(  const double flops = 2.0 * double(shape.n * p * q) * double(shape.k) *
                       double(shape.c * shape.r * shape.s);
  return flops / std::exp(static_cast<double>(detail::ConvLnFlops(f)));
}
)";
    }
    out << R"(
// The block shape to run the convolution `shape` with (see the top of this
// file for the order of preference).
inline Config conv_config(const ConvShape& shape) {
  for (const detail::ConvEntry& e : detail::kConvEntries) {
    if (detail::SameShape(e.shape, shape)) return {e.block, Match::kExact, e.seconds};
  }
)";
    out << R"(  auto fits = [&](const BlockShape& b) { return detail::ConvFits(b, shape); };
)";
    if (spec.model) {
      out << R"(  double seconds = 0;
  if (const BlockShape* best = detail::Fastest(
          detail::kConvCandidates, fits,
          [&](const BlockShape& b) { return conv_predict_seconds(shape, b); }, &seconds)) {
    return {*best, Match::kPredicted, seconds};
  }
)";
    }
    out << R"(  const detail::ConvEntry* nearest = detail::Nearest(
      detail::kConvEntries, fits,
      [&](const detail::ConvEntry& e) { return detail::ConvDistance(e.shape, shape); });
  if (nearest != nullptr) return {nearest->block, Match::kNearest, 0.0};
  return {detail::kDefaultBlock, Match::kDefault, 0.0};
}
)";
  }
  out << "\n}  // namespace tuned\n}  // namespace blocktune\n\n#endif  // " << guard
      << "\n";
  return out.str();
}

}  // namespace blocktune
