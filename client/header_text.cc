#include "client/header_text.h"

#include <cstdio>

#include "kernels/block_shape.h"
#include "kernels/gemm_mma_ptx.h"
#include "tuner/sampler.h"

namespace blocktune {
namespace {

// What every exported header shares; guarded so that a GEMM and a
// convolution header can be included in one translation unit. V2: configs
// of any kernel family, and precisions (V1 had block shapes of fp32 only).
// V3: models of either feature set (Model::feature_set, ShapeFeatures).
// V4: the block shape's st (ffma generator version 2).
// V5: models of feature set 3 (AlignFeature, the rows' alignment).
// V6: models of feature set 4 (WaveFeatures; Model::wave_sms).
// V7: an ensemble's ln_flops is the ranking of models/search.h (its mean
// less kEnsembleRisk of its members' spread), no longer the mean.
// Headers of different versions do not mix.
constexpr char kCommon[] = R"(#ifndef BLOCKTUNE_TUNED_COMMON_V7_
#define BLOCKTUNE_TUNED_COMMON_V7_
namespace blocktune {
namespace tuned {

// x_B of thesis 4.1, the parameters of the CUDA-core families gemm.ffma and
// conv.ffma: an ml x nl block of C per program, ms x ns per thread, u the
// reduction step staged in shared memory, kg programs per reduction, st
// shared-memory stages.
struct BlockShape {
  int @BLOCK_FIELDS@;
};

// How a returned configuration matches the shape asked for.
enum class Match {
  kExact,      // exported for exactly this shape and precision
  kPredicted,  // the embedded models' fastest candidate for this shape
  kNearest,    // exported for the nearest shape (distance below)
  kDefault,    // nothing fits: an untuned default
};

// Storage of A and B in C = op(A) * op(B): N as given, T transposed.
enum class Layout { NN, NT, TN, TT };

// The precision: kFp32 fp32 in and out on CUDA cores (FFMA); kTf32 fp32 in
// and out, tensor-core math on tf32-rounded inputs; kBf16, kFp16 that type
// in and out, fp32 accumulate.
enum class DType { kFp32, kTf32, kBf16, kFp16 };

inline constexpr int kMaxParams = @MAX_PARAMS@;

// A kernel configuration: its family (`blocktune families`), the generator
// version it was tuned with, and its parameters by name. `family` is null
// only where the header has no configuration for the precision asked.
struct Config {
  BlockShape block;  // gemm.ffma and conv.ffma: the parameters; else zeros
  Match match;
  // kExact: the exported answer's time (measured, else predicted);
  // kPredicted: the model's prediction for this shape; else 0.
  double seconds;
  const char* family;               // "gemm.ffma", "gemm.mma", ...
  int version;                      // generator version
  int param_count;
  const char* const* param_names;   // [param_count], as the family names them
  std::int64_t params[kMaxParams];  // [param_count], in that order

  // The value of the parameter named `name` (as in param_names); -1 if the
  // family has none of that name.
  std::int64_t param(const char* name) const {
    for (int i = 0; i < param_count; ++i)
      if (std::strcmp(param_names[i], name) == 0) return params[i];
    return -1;
  }
};

// A convolution, NHWC input, KRSC filter.
struct ConvShape {
  std::int64_t n = 1, h = 0, w = 0, c = 0, k = 0, r = 3, s = 3;
  std::int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
};

namespace detail {

// A Config of an ffma family (`family`) whose parameters are `block`.
inline Config BlockConfig(const char* family, const BlockShape& block) {
  Config c{};
  c.family = family;
  c.params[0] = block.ml;
  c.params[1] = block.nl;
  c.params[2] = block.ms;
  c.params[3] = block.ns;
  c.params[4] = block.u;
  c.params[5] = block.kg;
  c.params[6] = block.st;
  return c;
}

// How the header checks a family's rules (Fits below).
enum class Kind { kFfma, kMma };

struct Family {
  const char* name;
  int version;  // the generator version the rules below are of
  int param_count;
  const char* const* param_names;
  const bool* log_feature;  // per parameter: the model sees log2, else the value
  Kind kind;
  // Positions of M_L, N_L, U and K_G among the parameters, and of the
  // K_G sum's choice (-1: none; then K_G partial sums of M x N).
  int tile_m, tile_n, step_k, split_k, split_reduce;
};

// A configuration of families[family]; `rules` has bit RuleClass(problem)
// set where the family's device rules (threads, shared memory, registers
// ...) accept it on the exporting device.
struct ConfigRow {
  int family;  // -1 ends a table
  std::int64_t params[kMaxParams];
  std::uint64_t rules;
};

struct Candidate {
  DType dtype;
  ConfigRow config;
};

// A problem as the implicit GEMM the kernels compute.
struct GemmView {
  std::int64_t m, n, k;
  bool a_t, b_t;
  DType dtype;
};

// The daemon's sizes (kernels/family.h WorkingSetBytes, tuner/sampler.h):
// one of the K_G partial sums, and the memory a benchmark's working set may
// take (or the operands alone when larger).
constexpr double kPartialSumBytes = @PARTIAL_SUM_BYTES@;
constexpr double kMaxWorkingSetBytes = @MAX_WORKING_SET_BYTES@;
// gemm.mma's in-kernel K_G tree: counters per tile beyond K_G.
constexpr double kSplitCounterPad = @SPLIT_COUNTER_PAD@;

inline double ElementBytes(DType d) {
  return @ELEMENT_BYTES@;
}

inline double SqLog2Ratio(double a, double b) {
  const double r = std::log2(a) - std::log2(b);
  return r * r;
}

inline float Log2f(std::int64_t v) {
  return static_cast<float>(std::log2(static_cast<double>(v)));
}

inline std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Bytes per copy of an operand whose rows are `ld` elements (gemm.mma).
inline std::int64_t CopyBytes(std::int64_t ld, std::int64_t element_bytes) {
  std::int64_t w = 16;
  while (w > element_bytes && (ld * element_bytes) % w != 0) w /= 2;
  return w;
}

inline int Log2Index(std::int64_t v) {  // 2 -> 0, 4 -> 1, 8 -> 2, 16 -> 3
  int i = 0;
  while (v > 2) {
    v /= 2;
    ++i;
  }
  return i;
}

// The class of a problem a family's device rules see: gemm.mma's register
// estimate depends on the operands' layouts and copy widths (the tight
// leading dimensions' alignment); the ffma families' on the layouts and
// whether each operand's contiguous dimension is a multiple of 4 (its
// loads are vectors of 4 or scalars).
inline int RuleClass(const Family& f, const GemmView& g) {
  const std::int64_t lda = g.a_t ? g.m : g.k;  // the contiguous dimensions
  const std::int64_t ldb = g.b_t ? g.k : g.n;
  const int layouts = (g.a_t ? 32 : 0) + (g.b_t ? 16 : 0);
  if (f.kind == Kind::kFfma)
    return layouts + (lda % 4 == 0 ? 2 : 0) + (ldb % 4 == 0 ? 1 : 0);
  const auto es = static_cast<std::int64_t>(ElementBytes(g.dtype));
  return layouts + 4 * Log2Index(CopyBytes(lda, es)) + Log2Index(CopyBytes(ldb, es));
}

// The K_G partial sums' workspace (each family's Shape().workspace_bytes).
inline double WorkspaceBytes(const Family& f, const ConfigRow& c, const GemmView& g) {
  const std::int64_t kg = c.params[f.split_k];
  if (kg <= 1) return 0;
  if (f.split_reduce >= 0 && c.params[f.split_reduce] == 1) {
    const double tiles = double(CeilDiv(g.m, c.params[f.tile_m])) *
                         double(CeilDiv(g.n, c.params[f.tile_n]));
    return tiles * double(kg) * double(c.params[f.tile_m]) *
               double(c.params[f.tile_n]) * kPartialSumBytes +
           tiles * (double(kg) + kSplitCounterPad) * 4.0;
  }
  return kPartialSumBytes * double(kg) * double(g.m) * double(g.n);
}

// Whether a configuration can run for the problem: a split leaves every
// program at least one reduction step, the grid fits, and the device
// rules hold -- what the daemon's default requires.
inline bool Runs(const Family& f, const ConfigRow& c, const GemmView& g) {
  const std::int64_t tile_m = c.params[f.tile_m], tile_n = c.params[f.tile_n];
  const std::int64_t kg = c.params[f.split_k], step = c.params[f.step_k];
  if (kg > 1 && kg * step > g.k) return false;
  if (f.kind == Kind::kFfma) {
    if (CeilDiv(g.n, tile_n) > 65535 || CeilDiv(g.m, tile_m) > 2147483647) return false;
  } else {
    if (CeilDiv(g.m, tile_m) * CeilDiv(g.n, tile_n) > 2147483647 || kg > 65535)
      return false;
  }
  return ((c.rules >> RuleClass(f, g)) & 1u) != 0;
}

// Runs, and the K_G partial sums fit in memory beside operands of
// `operand_bytes` (1 GiB in all, or the operands alone when larger) --
// the rules the daemon's search applies beyond the context-free ones.
inline bool Fits(const Family& f, const ConfigRow& c, const GemmView& g,
                 double operand_bytes) {
  if (!Runs(f, c, g)) return false;
  const double limit =
      operand_bytes > kMaxWorkingSetBytes ? operand_bytes : kMaxWorkingSetBytes;
  return operand_bytes + WorkspaceBytes(f, c, g) <= limit;
}

inline Config MakeConfig(const Family* families, const ConfigRow& row, Match match,
                         double seconds, int version) {
  Config c{};
  const Family& f = families[row.family];
  c.match = match;
  c.seconds = seconds;
  c.family = f.name;
  c.version = version;
  c.param_count = f.param_count;
  c.param_names = f.param_names;
  for (int i = 0; i < f.param_count; ++i) c.params[i] = row.params[i];
  if (f.kind == Kind::kFfma) {
    c.block = {@BLOCK_INIT@};
  }
  return c;
}

// The family named `name` among `families` (ended by a null name); -1 if none.
inline int FamilyIndex(const Family* families, const char* name) {
  if (name == nullptr) return -1;
  for (int i = 0; families[i].name != nullptr; ++i)
    if (std::strcmp(families[i].name, name) == 0) return i;
  return -1;
}

// The model's input for a configuration: one feature per parameter (log2,
// or the value), as KernelFamily::ParamFeatures computes it.
inline void ParamFeatures(const Family& f, const std::int64_t* params, float* out) {
  for (int i = 0; i < f.param_count; ++i)
    out[i] = f.log_feature[i] ? Log2f(params[i]) : static_cast<float>(params[i]);
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

// The tiling's features (feature set 2; kernels/family.h
// AppendShapeFeatures) of a configuration of `f` for the implicit GEMM
// m x n x k, written from out[0].
inline void ShapeFeatures(const Family& f, const std::int64_t* params, std::int64_t m,
                          std::int64_t n, std::int64_t k, float* out) {
  const std::int64_t tile_m = params[f.tile_m] > 1 ? params[f.tile_m] : 1;
  const std::int64_t tile_n = params[f.tile_n] > 1 ? params[f.tile_n] : 1;
  const std::int64_t step_k = params[f.step_k] > 1 ? params[f.step_k] : 1;
  const std::int64_t split_k = params[f.split_k] > 1 ? params[f.split_k] : 1;
  const std::int64_t tiles_m = CeilDiv(m, tile_m), tiles_n = CeilDiv(n, tile_n);
  const std::int64_t steps = CeilDiv(CeilDiv(k, split_k), step_k);
  out[0] = static_cast<float>(std::log2(double(tiles_m) * double(tiles_n) * double(split_k)));
  out[1] = static_cast<float>(double(m) / double(tiles_m * tile_m));
  out[2] = static_cast<float>(double(n) / double(tiles_n * tile_n));
  out[3] = static_cast<float>(double(k) / (double(split_k) * double(steps) * double(step_k)));
  out[4] = Log2f(steps);
}

// The alignment of a row of `elements` of `bytes` each (kernels/family.h
// RowAlignFeature): log2 of the largest power of two, at most 2^max_log2,
// that divides its bytes. Feature set 3's AlignFeature stops at 16 bytes.
inline float RowAlignFeature(std::int64_t elements, double bytes, int max_log2) {
  const std::int64_t row = elements * static_cast<std::int64_t>(bytes);
  int log2 = 0;
  while (log2 < max_log2 && row % (std::int64_t{2} << log2) == 0) ++log2;
  return static_cast<float>(log2);
}
inline float AlignFeature(std::int64_t elements, double bytes) {
  return RowAlignFeature(elements, bytes, @ALIGN_LOG2@);
}

// Feature wave_fill (feature set 4; kernels/family.h AppendWaveFeatures)
// of a configuration of `f` for the implicit GEMM m x n x k on a device of
// `sms` SMs: the share of the last wave's SMs that have a program.
inline float WaveFill(const Family& f, const std::int64_t* params, std::int64_t m,
                      std::int64_t n, std::int64_t sms) {
  const std::int64_t tile_m = params[f.tile_m] > 1 ? params[f.tile_m] : 1;
  const std::int64_t tile_n = params[f.tile_n] > 1 ? params[f.tile_n] : 1;
  const std::int64_t split_k = params[f.split_k] > 1 ? params[f.split_k] : 1;
  const std::int64_t programs = CeilDiv(m, tile_m) * CeilDiv(n, tile_n) * split_k;
  const std::int64_t per_wave = sms > 1 ? sms : 1;
  return static_cast<float>(double(programs) /
                            double(CeilDiv(programs, per_wave) * per_wave));
}

// An embedded model: the surrogate of (dtype, families[family]); ln_flops
// maps its features to ln(flop/s) as blocktuned ranks and reports it (an
// ensemble's mean less a multiple of its members' standard deviation):
// the parameters', the context's, then
// from feature_set 2 the tiling's (ShapeFeatures), then with feature_set 3
// the rows' alignment (AlignFeature), then with feature_set 4 the waves'
// on a device of wave_sms SMs (WaveFill, RowAlignFeature up to 128 bytes).
// family -1 ends a table.
struct Model {
  DType dtype;
  int family;
  float (*ln_flops)(const float* features);
  int feature_set;
  int wave_sms;
};

}  // namespace detail
}  // namespace tuned
}  // namespace blocktune
#endif  // BLOCKTUNE_TUNED_COMMON_V7_
)";

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

}  // namespace

std::string HeaderDTypeName(DType d) {
  switch (d) {
    case DType::kTf32:
      return "DType::kTf32";
    case DType::kBf16:
      return "DType::kBf16";
    case DType::kFp16:
      return "DType::kFp16";
    default:
      return "DType::kFp32";
  }
}

// kCommon with the block-shape families' names and the daemon's sizes
// filled in (the same for both ops, as the shared guard requires).
std::string TunedCommonText() {
  const KernelFamily& family = BlockShapeFamily(Op::kGemm);
  std::string fields;
  for (const ParamSpec& spec : family.params())
    fields += (fields.empty() ? "" : ", ") + spec.LowerName();
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%.1f", double(kDefaultMaxBytes));
  std::string bytes;
  for (DType d : kHeaderPrecisions) {
    if (d == DType::kFp32) continue;
    bytes += "d == " + HeaderDTypeName(d) + " ? " + std::to_string(SizeOf(d)) + ".0 : ";
  }
  bytes += std::to_string(SizeOf(DType::kFp32)) + ".0";
  std::string text = kCommon;
  ReplaceAll(&text, "@BLOCK_FIELDS@", fields);
  std::string init;
  for (size_t i = 0; i < family.params().size(); ++i)
    init += (i ? ", " : "") + std::string("int(row.params[") + std::to_string(i) + "])";
  ReplaceAll(&text, "@BLOCK_INIT@", init);
  ReplaceAll(&text, "@MAX_PARAMS@", std::to_string(kMaxFamilyParams));
  ReplaceAll(&text, "@PARTIAL_SUM_BYTES@", "4.0");  // fp32 sums, every family
  ReplaceAll(&text, "@MAX_WORKING_SET_BYTES@", limit);
  ReplaceAll(&text, "@SPLIT_COUNTER_PAD@",
             std::to_string(mma_internal::kSplitCounterPad) + ".0");
  ReplaceAll(&text, "@ELEMENT_BYTES@", bytes);
  ReplaceAll(&text, "@ALIGN_LOG2@", std::to_string(kAlignLog2));
  return text;
}


// The lookup's body after the exact match, shared by both ops: `view`,
// `operands`, `families`, `dtype` and `predict(row)` are in scope.
std::string TunedLookupText(const std::string& op, bool models, const std::string& distance) {
  std::string out = R"(  auto fits = [&](const detail::ConfigRow& row) {
    return detail::Fits(detail::k@OpFamilies[row.family], row, view, operands);
  };
)";
  if (models) {
    out += R"(  // The models' fastest candidate, over the precision's families.
  const detail::Candidate* best = nullptr;
  double best_seconds = 0;
  for (const detail::Model* model = detail::k@OpModels; model->family >= 0; ++model) {
    if (model->dtype != dtype) continue;
    for (const detail::Candidate* c = detail::k@OpCandidates; c->config.family >= 0; ++c) {
      if (c->dtype != dtype || c->config.family != model->family || !fits(c->config))
        continue;
      const double s = predict(*model, c->config);
      if (best == nullptr || s < best_seconds) {
        best = c;
        best_seconds = s;
      }
    }
  }
  if (best != nullptr) {
    return detail::MakeConfig(detail::k@OpFamilies, best->config, Match::kPredicted,
                              best_seconds,
                              detail::k@OpFamilies[best->config.family].version);
  }
)";
  }
  out += R"(  const detail::@OpEntry* nearest = nullptr;
  double nearest_distance = 0;
  for (const detail::@OpEntry* e = detail::k@OpEntries; e->config.family >= 0; ++e) {
    if (e->dtype != dtype || !fits(e->config)) continue;
    const double d = @DISTANCE@;
    if (nearest == nullptr || d < nearest_distance) {
      nearest = e;
      nearest_distance = d;
    }
  }
  if (nearest != nullptr) {
    return detail::MakeConfig(detail::k@OpFamilies, nearest->config, Match::kNearest,
                              0.0, nearest->version);
  }
  const detail::Candidate* fallback = nullptr;
  for (const detail::Candidate* c = detail::k@OpDefaults; c->config.family >= 0; ++c) {
    if (c->dtype != dtype) continue;
    if (fallback == nullptr) fallback = c;
    if (detail::Runs(detail::k@OpFamilies[c->config.family], c->config, view)) {
      fallback = c;
      break;
    }
  }
  if (fallback == nullptr) return Config{};  // no family of this precision
  return detail::MakeConfig(detail::k@OpFamilies, fallback->config, Match::kDefault,
                            0.0, detail::k@OpFamilies[fallback->config.family].version);
}
)";
  ReplaceAll(&out, "@DISTANCE@", distance);
  ReplaceAll(&out, "@Op", op);
  return out;
}

}  // namespace blocktune
