#include "kernels/family.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "kernels/fnv1a.h"
#include "kernels/tensor_map.h"
#include "kernels/validate.h"

namespace blocktune {

// The registry. One line per family; the order is the default order in
// which families are offered for an (op, precision).
const KernelFamily& GemmFfmaFamily();  // kernels/family_ffma.cc
const KernelFamily& ConvFfmaFamily();  // kernels/family_ffma.cc
const KernelFamily& GemmMmaFamily();   // kernels/family_mma.cc
const KernelFamily& ConvMmaFamily();   // kernels/family_mma.cc
// After gemm.mma, so that DefaultFamily(gemm, bf16/fp16/tf32) stays the
// family that runs on every tensor-core GPU; its rules keep it off every
// device but compute capability 9.0.
const KernelFamily& GemmWgmmaFamily(); // kernels/family_wgmma.cc
const KernelFamily& ConvWgmmaFamily(); // kernels/family_wgmma.cc
const KernelFamily& GemmWgmmaRsFamily(); // kernels/family_wgmma.cc
// Last: its rule offers it only where an operand's rows are not 16-byte
// aligned.
const KernelFamily& GemmMmaPackedFamily(); // kernels/family_mma.cc
// After it: offered only where an operand's rows are not 16-byte aligned,
// on compute capability 9.0.
const KernelFamily& GemmWgmmaPackedFamily(); // kernels/family_wgmma.cc
// Last: gemm.wgmma's and conv.wgmma's kernels launched as persistent grids.
const KernelFamily& GemmWgmmaPersistentFamily(); // kernels/family_wgmma.cc
const KernelFamily& ConvWgmmaPersistentFamily(); // kernels/family_wgmma.cc
// gemm.wgmma_ps with the tail split (its last round split over K).
const KernelFamily& GemmWgmmaTailFamily(); // kernels/family_wgmma.cc
// fp32 GEMMs of N <= 8 (decode), a streaming kernel; after gemm.ffma, which
// stays DefaultFamily(gemm, fp32): its rules offer it for NT (or NN of one
// column) only.
const KernelFamily& GemmGemvFamily(); // kernels/family_gemv.cc
// fp32 NT GEMMs with both operands K-major in shared memory; after
// gemm.gemv (its rules offer it for NT with rows of 16-byte units only).
const KernelFamily& GemmFfmaKFamily(); // kernels/family_ffma_k.cc
// gemm.ffma_k on packed operands, for NT products whose rows are not whole
// 16-byte units (its rule unaligned_rows offers it there only).
const KernelFamily& GemmFfmaKPackedFamily(); // kernels/family_ffma_k.cc
// conv.wgmma with each tile's reduction split over programs, for layers
// with fewer tiles than SMs (its rule few_tiles offers it there only).
const KernelFamily& ConvWgmmaSplitFamily(); // kernels/family_wgmma.cc
// conv.wgmma_sk's split added inside a thread-block cluster (one launch).
const KernelFamily& ConvWgmmaClusterSplitFamily(); // kernels/family_wgmma.cc
// gemm.wgmma with each tile's K split inside a thread-block cluster, for
// products with fewer tiles than SMs (rule few_tiles).
const KernelFamily& GemmWgmmaClusterSplitFamily(); // kernels/family_wgmma.cc

const std::vector<const KernelFamily*>& Families() {
  static const std::vector<const KernelFamily*> families = {
      &GemmFfmaFamily(),
      &ConvFfmaFamily(),
      &GemmMmaFamily(),
      &ConvMmaFamily(),
      &GemmWgmmaFamily(),
      &ConvWgmmaFamily(),
      &GemmWgmmaRsFamily(),
      &GemmMmaPackedFamily(),
      &GemmWgmmaPackedFamily(),
      &GemmWgmmaPersistentFamily(),
      &ConvWgmmaPersistentFamily(),
      &GemmWgmmaTailFamily(),
      &GemmGemvFamily(),
      &GemmFfmaKFamily(),
      &GemmFfmaKPackedFamily(),
      &ConvWgmmaSplitFamily(),
      &ConvWgmmaClusterSplitFamily(),
      &GemmWgmmaClusterSplitFamily(),
  };
  return families;
}

StatusOr<const KernelFamily*> FindFamily(std::string_view name) {
  std::string names;
  for (const KernelFamily* f : Families()) {
    if (EqualsIgnoreCase(f->name(), name)) return f;
    names += (names.empty() ? "" : ", ") + std::string(f->name());
  }
  return NotFound("family must be one of " + names + "; got " + Quoted(name));
}

StatusOr<FamilyConfig> ParseFamilyConfig(std::string_view text) {
  const size_t space = text.find(' ');
  BT_ASSIGN_OR_RETURN(const KernelFamily* family, FindFamily(text.substr(0, space)));
  BT_ASSIGN_OR_RETURN(
      Params params,
      family->Parse(space == std::string_view::npos ? std::string_view()
                                                    : text.substr(space + 1)));
  return FamilyConfig{family, params};
}

std::vector<const KernelFamily*> FamiliesFor(Op op, DType precision) {
  std::vector<const KernelFamily*> out;
  for (const KernelFamily* f : Families())
    if (f->op() == op && f->Implements(precision)) out.push_back(f);
  return out;
}

StatusOr<const KernelFamily*> DefaultFamily(Op op, DType precision) {
  std::vector<const KernelFamily*> all = FamiliesFor(op, precision);
  if (all.empty()) {
    std::string have;
    for (const KernelFamily* f : Families()) {
      if (f->op() != op) continue;
      for (DType d : f->precisions()) {
        std::string name(ToString(d));
        if (have.find(name) == std::string::npos)
          have += (have.empty() ? "" : ", ") + name;
      }
    }
    return InvalidArgument("dtype " + std::string(ToString(precision)) +
                           " has no " + std::string(ToString(op)) +
                           " kernel family; implemented: " + have);
  }
  return all.front();
}

std::array<int64_t, 3> LeadingDims(const Problem& problem) {
  const auto* g = std::get_if<GemmContext>(&problem.ctx);
  if (g == nullptr) return {0, 0, 0};
  const int64_t lda =
      problem.lda ? problem.lda : (g->layout_a == Layout::kN ? g->k : g->m);
  const int64_t ldb =
      problem.ldb ? problem.ldb : (g->layout_b == Layout::kN ? g->n : g->k);
  const int64_t ldc = problem.ldc ? problem.ldc : g->n;
  return {lda, ldb, ldc};
}

bool KernelFamily::Implements(DType precision) const {
  const std::vector<DType>& p = precisions();
  return std::find(p.begin(), p.end(), precision) != p.end();
}

std::string PrecisionNames(const KernelFamily& f) {
  std::string out;
  for (DType d : f.precisions())
    out += (out.empty() ? "" : ", ") + std::string(ToString(d));
  return out;
}

Status KernelFamily::CheckProblem(const Problem& problem) const {
  const Op got = OpOf(problem.ctx);
  if (got != op()) {
    return InvalidArgument("context: family " + std::string(name()) +
                           " computes " + std::string(ToString(op())) +
                           ", got a " + std::string(ToString(got)));
  }
  if (!Implements(DTypeOf(problem.ctx))) {
    return InvalidArgument("context.dtype: family " + std::string(name()) +
                           " implements " + PrecisionNames(*this) + "; got " +
                           std::string(ToString(DTypeOf(problem.ctx))));
  }
  BT_RETURN_IF_ERROR(Validate(problem.ctx));
  const auto* g = std::get_if<GemmContext>(&problem.ctx);
  if (g == nullptr) return OkStatus();
  const auto ld = LeadingDims(problem);
  // The stored rows' lengths (the least each leading dimension may be) and
  // how many rows each operand has.
  const int64_t lengths[] = {g->layout_a == Layout::kN ? g->k : g->m,
                             g->layout_b == Layout::kN ? g->n : g->k, g->n};
  const int64_t rows[] = {g->layout_a == Layout::kN ? g->m : g->k,
                          g->layout_b == Layout::kN ? g->k : g->n, g->m};
  if (ld[0] < lengths[0] || ld[1] < lengths[1] || ld[2] < lengths[2]) {
    return InvalidArgument(
        "lda, ldb, ldc must be at least the stored rows' lengths (" +
        std::to_string(lengths[0]) + ", " + std::to_string(lengths[1]) + ", " +
        std::to_string(lengths[2]) + "), got " + std::to_string(ld[0]) + ", " +
        std::to_string(ld[1]) + ", " + std::to_string(ld[2]));
  }
  // At most kMaxDim, and the rows they span at most kMaxTensorElements, as
  // for the contexts' own sizes: byte offsets and strides cannot overflow
  // (an lda of 2^63 - 8 made a TMA stride of -16 bytes).
  const char* names[] = {"lda", "ldb", "ldc"};
  for (int i = 0; i < 3; ++i) {
    BT_RETURN_IF_ERROR(CheckRange(names[i], ld[i], lengths[i], kMaxDim));
    BT_RETURN_IF_ERROR(CheckedProduct(std::string(names[i]) + " times its rows",
                                      ld[i], rows[i], kMaxTensorElements)
                           .status());
  }
  return OkStatus();
}

int KernelFamily::FirstFailingRule(const Problem& problem, const Params& params,
                                   const KernelLimits& limits) const {
  const int n = static_cast<int>(rules().size());
  for (int i = 0; i < n; ++i)
    if (!Passes(i, problem, params, limits)) return i;
  return -1;
}

StatusOr<Params> KernelFamily::Default(const Problem& problem,
                                       const KernelLimits& limits) const {
  const std::vector<Params> candidates = DefaultCandidates();
  for (const Params& p : candidates) {
    if (!SplitHasWork(problem, Shape(problem, p))) continue;
    if (CanImplement(problem, p, limits).ok()) return p;
  }
  Status first = candidates.empty()
                     ? FailedPrecondition("no candidates")
                     : CanImplement(problem, candidates.front(), limits);
  // Every candidate the device accepts splits K past its extent.
  if (first.ok()) first = FailedPrecondition("K is too short to split");
  return FailedPrecondition("no default " + std::string(name()) +
                            " configuration fits '" + ToString(problem.ctx) +
                            "': " + first.message());
}

namespace {
float Log2(int64_t v) { return static_cast<float>(std::log2(double(v))); }
}  // namespace

std::string ParamSpec::LowerName() const {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(c));
  return lower;
}

std::vector<std::string> KernelFamily::FeatureNames(int set) const {
  std::vector<std::string> names;
  for (const ParamSpec& s : params())
    names.push_back(s.log_feature ? "log2_" + s.LowerName() : s.LowerName());
  const std::vector<std::string>& ctx = ContextFeatureNames(op());
  names.insert(names.end(), ctx.begin(), ctx.end());
  if (set >= kShapeFeatures) {
    const std::vector<std::string>& shape = ShapeFeatureNames();
    names.insert(names.end(), shape.begin(), shape.end());
  }
  if (set >= kAlignFeatures) {
    const std::vector<std::string>& align = AlignFeatureNames(op());
    names.insert(names.end(), align.begin(), align.end());
  }
  if (set >= kWaveFeatures) {
    const std::vector<std::string>& wave = WaveFeatureNames(op());
    names.insert(names.end(), wave.begin(), wave.end());
  }
  return names;
}

int KernelFamily::FeatureSetNamed(const std::vector<std::string>& names) const {
  for (int set = kLogFeatures; set <= kNewestFeatureSet; ++set)
    if (FeatureNames(set) == names) return set;
  return kNewestFeatureSet;
}

void KernelFamily::Features(const Problem& problem, const Params& values,
                            std::vector<float>* out, int set,
                            int wave_sms) const {
  ParamFeatures(values, out);
  AppendContextFeatures(problem.ctx, out);
  if (set < kShapeFeatures) return;
  const ConfigShape s = Shape(problem, values);
  AppendShapeFeatures(ImplicitGemm(problem.ctx), s.tile_m, s.tile_n, s.step_k,
                      s.split_k, out);
  if (set >= kAlignFeatures) AppendAlignFeatures(problem, out);
  if (set >= kWaveFeatures) AppendWaveFeatures(problem, s, wave_sms, out);
}

const std::vector<std::string>& AlignFeatureNames(Op op) {
  static const std::vector<std::string> kGemm = {
      "log2_align_a", "log2_align_b", "log2_align_c"};
  static const std::vector<std::string> kConv = {"log2_align_c",
                                                 "log2_align_k"};
  return op == Op::kGemm ? kGemm : kConv;
}

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

float RowAlignFeature(int64_t elements, int element_bytes, int max_log2) {
  const int64_t bytes = elements * element_bytes;
  int log2 = 0;
  while (log2 < max_log2 && bytes % (int64_t{2} << log2) == 0) ++log2;
  return static_cast<float>(log2);
}

float AlignFeature(int64_t elements, int element_bytes) {
  return RowAlignFeature(elements, element_bytes, kAlignLog2);
}

void AppendRowAlignFeatures(const Problem& problem, int max_log2,
                            std::vector<float>* out) {
  const int e = SizeOf(DTypeOf(problem.ctx));
  auto align = [&](int64_t elements) {
    return RowAlignFeature(elements, e, max_log2);
  };
  if (std::holds_alternative<GemmContext>(problem.ctx)) {
    const auto ld = LeadingDims(problem);
    out->insert(out->end(), {align(ld[0]), align(ld[1]), align(ld[2])});
    return;
  }
  const auto& c = std::get<ConvContext>(problem.ctx);
  out->insert(out->end(), {align(c.c), align(c.k)});
}

void AppendAlignFeatures(const Problem& problem, std::vector<float>* out) {
  AppendRowAlignFeatures(problem, kAlignLog2, out);
}

const std::vector<std::string>& WaveFeatureNames(Op op) {
  static const std::vector<std::string> kGemm = {
      "wave_fill", "log2_align128_a", "log2_align128_b", "log2_align128_c"};
  static const std::vector<std::string> kConv = {
      "wave_fill", "log2_align128_c", "log2_align128_k"};
  return op == Op::kGemm ? kGemm : kConv;
}

float WaveFill(const GemmShape& g, const ConfigShape& s, int sms) {
  const int64_t programs = CeilDiv(g.m, std::max<int64_t>(s.tile_m, 1)) *
                           CeilDiv(g.n, std::max<int64_t>(s.tile_n, 1)) *
                           std::max<int64_t>(s.split_k, 1);
  const int64_t per_wave = std::max(sms, 1);
  return static_cast<float>(double(programs) /
                            double(CeilDiv(programs, per_wave) * per_wave));
}

void AppendWaveFeatures(const Problem& problem, const ConfigShape& s, int sms,
                        std::vector<float>* out) {
  out->push_back(WaveFill(ImplicitGemm(problem.ctx), s, sms));
  AppendRowAlignFeatures(problem, kWideAlignLog2, out);
}

const std::vector<std::string>& ShapeFeatureNames() {
  static const std::vector<std::string> kNames = {
      "log2_tiles", "fill_m", "fill_n", "fill_k", "log2_k_steps"};
  return kNames;
}

void AppendShapeFeatures(const GemmShape& g, int64_t tile_m, int64_t tile_n,
                         int64_t step_k, int64_t split_k,
                         std::vector<float>* out) {
  tile_m = std::max<int64_t>(tile_m, 1);
  tile_n = std::max<int64_t>(tile_n, 1);
  step_k = std::max<int64_t>(step_k, 1);
  split_k = std::max<int64_t>(split_k, 1);
  const int64_t tiles_m = CeilDiv(g.m, tile_m), tiles_n = CeilDiv(g.n, tile_n);
  const int64_t steps = CeilDiv(CeilDiv(g.k, split_k), step_k);
  out->insert(out->end(),
              {static_cast<float>(std::log2(double(tiles_m) * double(tiles_n) *
                                            double(split_k))),
               static_cast<float>(double(g.m) / double(tiles_m * tile_m)),
               static_cast<float>(double(g.n) / double(tiles_n * tile_n)),
               static_cast<float>(double(g.k) /
                                  (double(split_k) * double(steps) * double(step_k))),
               Log2(steps)});
}

void KernelFamily::ParamFeatures(const Params& values,
                                 std::vector<float>* out) const {
  const std::vector<ParamSpec>& specs = params();
  for (size_t i = 0; i < specs.size(); ++i) {
    out->push_back(specs[i].log_feature ? Log2(values[static_cast<int>(i)])
                                        : float(values[static_cast<int>(i)]));
  }
}

const std::vector<std::string>& ContextFeatureNames(Op op) {
  static const std::vector<std::string> kGemm = {
      "log2_m", "log2_n", "log2_k", "a_transposed", "b_transposed"};
  static const std::vector<std::string> kConv = {
      "log2_n", "log2_p", "log2_q", "log2_c", "log2_k", "log2_r", "log2_s",
      "log2_stride_h", "log2_stride_w", "log2_dilation_h", "log2_dilation_w",
      "log2_1p_pad_h", "log2_1p_pad_w"};
  return op == Op::kGemm ? kGemm : kConv;
}

void AppendContextFeatures(const Context& ctx, std::vector<float>* out) {
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    out->insert(out->end(), {Log2(g->m), Log2(g->n), Log2(g->k),
                             g->layout_a == Layout::kT ? 1.f : 0.f,
                             g->layout_b == Layout::kT ? 1.f : 0.f});
    return;
  }
  const auto& c = std::get<ConvContext>(ctx);
  out->insert(out->end(),
              {Log2(c.n), Log2(c.P()), Log2(c.Q()), Log2(c.c), Log2(c.k),
               Log2(c.r), Log2(c.s), Log2(c.stride_h), Log2(c.stride_w),
               Log2(c.dilation_h), Log2(c.dilation_w), Log2(1 + c.pad_h),
               Log2(1 + c.pad_w)});
}

int64_t WorkingSetBytes(const Problem& problem, const ConfigShape& shape) {
  const int64_t e = SizeOf(DTypeOf(problem.ctx));
  int64_t bytes = shape.workspace_bytes;
  if (const auto* g = std::get_if<GemmContext>(&problem.ctx)) {
    const auto ld = LeadingDims(problem);
    const int64_t a_rows = g->layout_a == Layout::kN ? g->m : g->k;
    const int64_t b_rows = g->layout_b == Layout::kN ? g->k : g->n;
    return bytes + e * (a_rows * ld[0] + b_rows * ld[1] + g->m * ld[2]);
  }
  const auto& c = std::get<ConvContext>(problem.ctx);
  return bytes + e * (c.n * c.h * c.w * c.c + c.k * c.r * c.s * c.c +
                      c.n * c.P() * c.Q() * c.k);
}

bool SplitHasWork(const Problem& problem, const ConfigShape& shape) {
  return shape.split_k <= 1 ||
         shape.split_k * shape.step_k <= ImplicitGemm(problem.ctx).k;
}

std::string KernelFamily::Format(const Params& values) const {
  std::string out;
  const std::vector<ParamSpec>& specs = this->params();
  for (int i = 0; i < values.size && i < static_cast<int>(specs.size()); ++i) {
    if (!out.empty()) out += ' ';
    out += specs[i].name + "=" + std::to_string(values[i]);
  }
  return out;
}

int KernelFamily::ParamIndex(std::string_view name) const {
  const std::vector<ParamSpec>& specs = params();
  for (size_t i = 0; i < specs.size(); ++i)
    if (EqualsIgnoreCase(specs[i].name, name)) return static_cast<int>(i);
  return -1;
}

StatusOr<Params> KernelFamily::Parse(std::string_view text,
                                     const Params* base) const {
  const std::vector<ParamSpec>& specs = params();
  Params p;
  if (base != nullptr) {
    p = *base;
  } else {
    std::vector<Params> d = DefaultCandidates();
    if (!d.empty()) p = d.front();
  }
  p.size = static_cast<int>(specs.size());
  std::string names;
  for (const ParamSpec& s : specs) names += (names.empty() ? "" : " ") + s.name;
  std::vector<bool> seen(specs.size(), false);
  for (std::string_view word : SplitWords(text)) {
    const size_t eq = word.find('=');
    const int i = eq == std::string_view::npos ? -1 : ParamIndex(word.substr(0, eq));
    if (i < 0 || seen[i]) {
      return InvalidArgument(
          "params: expected key=value words with keys among " + names +
          " (each once) for family " + std::string(name()) + "; got " +
          Quoted(word));
    }
    seen[i] = true;
    BT_ASSIGN_OR_RETURN(
        p[i], ParseInt64(JoinField("params", specs[i].name), word.substr(eq + 1)));
  }
  BT_RETURN_IF_ERROR(ValidateParams(p));
  return p;
}

std::string KernelDigest(const GeneratedKernel& k) {
  auto dims = [](const std::array<unsigned, 3>& d) {
    return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
           std::to_string(d[2]);
  };
  Fnv1a fnv;
  fnv.Add(k.ptx);
  fnv.Add(k.entry);
  fnv.Add(k.pack_entry);
  fnv.Add(k.reduce_entry);
  fnv.Add(k.target);
  fnv.Add("grid " + dims(k.grid) + " block " + dims(k.block) + " cluster " +
          std::to_string(k.cluster) + " persistent " +
          std::to_string(k.persistent) + " shared " +
          std::to_string(k.dynamic_shared_bytes) + " workspace " +
          std::to_string(k.workspace_bytes) + " counters " +
          std::to_string(k.counter_offset));
  fnv.Add("pack " + dims(k.pack_grid) + " " + dims(k.pack_block) +
          " reduce " + dims(k.reduce_grid) + " " + dims(k.reduce_block) +
          " dependent " + std::to_string(k.reduce_dependent));
  for (const TensorMapParam& t : k.tensor_maps) {
    fnv.Add("map " + std::to_string(t.param_index) + " " + t.operand + " " +
            std::to_string(t.offset) + " " + ToString(t.map));
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(fnv.h));
  return hex;
}

}  // namespace blocktune
