#include "models/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "models/features.h"
#include "tuner/sampler.h"

namespace blocktune {

bool PlausibleSeconds(double flops, double predicted_s) {
  // Written so that NaN fails every comparison and is refused.
  return predicted_s > 0 && flops / predicted_s >= kMinPlausibleFlops &&
         flops / predicted_s <= kMaxPlausibleFlops;
}

BlockSearch::BlockSearch(Surrogate model, const DeviceProfile& profile)
    : model_(std::move(model)),
      range_(model_.family(), model_.search_values(), profile) {}

SearchRange::SearchRange(const KernelFamily& family, const SearchValues& values,
                         const DeviceProfile& profile)
    : family_(&family),
      params_(static_cast<int>(family.params().size())),
      limits_(profile.Limits()) {
  std::vector<int> once;
  for (int r = 0; r < static_cast<int>(family.rules().size()); ++r)
    (family.RuleUsesProblem(r) ? problem_rules_ : once).push_back(r);
  const int n = params_;
  if (static_cast<int>(values.size()) != n) return;
  for (const std::vector<int64_t>& v : values)
    if (v.empty()) return;
  // Every combination, the last parameter varying fastest; `codes` numbers
  // each kept one by its value positions (mixed radix, so ascending).
  std::vector<size_t> at(n, 0);
  std::vector<int64_t> codes;
  Params p;
  p.size = n;
  const Problem any;  // the rules in `once` do not look at it
  for (int64_t code = 0;; ++code) {
    for (int i = 0; i < n; ++i) p[i] = values[i][at[i]];
    bool ok = family.ValidateParams(p).ok();
    for (size_t r = 0; ok && r < once.size(); ++r)
      ok = family.Passes(once[r], any, p, limits_);
    if (ok) {
      grid_values_.insert(grid_values_.end(), p.v.begin(), p.v.begin() + n);
      family.ParamFeatures(p, &grid_features_);
      codes.push_back(code);
    }
    int i = n - 1;
    while (i >= 0 && ++at[i] == values[i].size()) at[i--] = 0;
    if (i < 0) break;
  }
  IndexRefinements(values, codes);
}

void SearchRange::IndexRefinements(
    const std::vector<std::vector<int64_t>>& values,
    const std::vector<int64_t>& codes) {
  const std::vector<ParamSpec>& specs = family_->params();
  const int n = params_;
  // Each refining parameter's radix stride and base value position.
  std::vector<int64_t> stride(n, 1);
  for (int i = n - 2; i >= 0; --i)
    stride[i] = stride[i + 1] * static_cast<int64_t>(values[i + 1].size());
  std::vector<std::pair<int, int64_t>> refining;
  for (int i = 0; i < n; ++i) {
    if (!specs[i].refines || values[i].size() < 2) continue;
    const auto& v = values[i];
    const auto base = specs[i].absent_means
                          ? std::find(v.begin(), v.end(), *specs[i].absent_means)
                          : v.end();
    refining.push_back({i, base == v.end() ? 0 : base - v.begin()});
  }
  if (refining.empty()) return;
  const int32_t size = static_cast<int32_t>(codes.size());
  std::vector<int32_t> base_of(size);
  is_base_.assign(size, 0);
  for (int32_t g = 0; g < size; ++g) {
    int64_t code = codes[g];
    for (const auto& [i, base] : refining) {
      const int64_t digit = (code / stride[i]) % int64_t(values[i].size());
      code += (base - digit) * stride[i];
    }
    const auto it = std::lower_bound(codes.begin(), codes.end(), code);
    const bool held = it != codes.end() && *it == code;
    base_of[g] = held ? static_cast<int32_t>(it - codes.begin()) : g;
    is_base_[g] = base_of[g] == g;
  }
  variant_begin_.assign(size_t(size) + 1, 0);
  for (int32_t g = 0; g < size; ++g)
    if (!is_base_[g]) ++variant_begin_[base_of[g] + 1];
  std::partial_sum(variant_begin_.begin(), variant_begin_.end(),
                   variant_begin_.begin());
  variant_index_.resize(variant_begin_.back());
  std::vector<int32_t> next(variant_begin_.begin(), variant_begin_.end() - 1);
  for (int32_t g = 0; g < size; ++g)
    if (!is_base_[g]) variant_index_[next[base_of[g]]++] = g;
}

namespace {

// The K_G partial sums live in a workspace beside the operands: all of it
// must fit where the operands do (1 GiB, or the operands alone when they
// are larger, which then allows no split). The bytes left for it.
int64_t WorkspaceRoom(const Problem& problem) {
  // operands + workspace_bytes is WorkingSetBytes(problem, shape).
  const int64_t operands = WorkingSetBytes(problem, ConfigShape{});
  return std::max(kDefaultMaxBytes, operands) - operands;
}

}  // namespace

bool SearchRange::Admits(const Problem& problem, int64_t room, int32_t g,
                         ConfigShape* shape) const {
  const Params p = grid(g);
  for (int rule : problem_rules_)
    if (!family_->Passes(rule, problem, p, limits_)) return false;
  *shape = family_->Shape(problem, p);
  return shape->tile_m * shape->tile_n >= 32 &&
         SplitHasWork(problem, *shape) && shape->workspace_bytes <= room;
}

std::vector<int32_t> SearchRange::CandidateIndices(
    const Context& ctx, std::vector<ConfigShape>* shapes,
    bool bases_only) const {
  std::vector<int32_t> out;
  if (shapes) shapes->clear();
  const Problem problem(ctx);
  const int64_t room = WorkspaceRoom(problem);
  const bool bases = bases_only && refines();
  const int32_t size = static_cast<int32_t>(grid_size());
  ConfigShape shape;
  for (int32_t g = 0; g < size; ++g) {
    if (bases && !is_base_[g]) continue;
    if (!Admits(problem, room, g, &shape)) continue;
    out.push_back(g);
    if (shapes) shapes->push_back(shape);
  }
  return out;
}

void SearchRange::AppendVariants(const Context& ctx,
                                 const std::vector<int32_t>& bases,
                                 std::vector<int32_t>* out,
                                 std::vector<ConfigShape>* shapes) const {
  if (!refines()) return;
  const Problem problem(ctx);
  const int64_t room = WorkspaceRoom(problem);
  ConfigShape shape;
  for (int32_t b : bases) {
    for (int32_t i = variant_begin_[b]; i < variant_begin_[b + 1]; ++i) {
      const int32_t g = variant_index_[i];
      if (!Admits(problem, room, g, &shape)) continue;
      out->push_back(g);
      if (shapes) shapes->push_back(shape);
    }
  }
}

std::vector<Params> SearchRange::Candidates(const Context& ctx) const {
  std::vector<Params> out;
  for (int32_t i : CandidateIndices(ctx)) out.push_back(grid(i));
  return out;
}

namespace {

// Predicted seconds of `n` configurations in `ctx`: each row is the
// configuration's ParamFeatures, which `param_features(i, row)` writes,
// then the context's features, then (a model of kShapeFeatures) the
// tiling's of configuration i, whose ConfigShape is `shape(i)`, then (of
// kAlignFeatures) the rows' alignment, then (of kWaveFeatures) the waves'.
// With `ranked`, also the seconds each is ranked by (ScoredConfig::ranked_s:
// an ensemble's members' spread charged kEnsembleRisk times).
template <typename ParamFeaturesFn, typename ShapeFn>
std::vector<double> Score(const Surrogate& model, const Context& ctx, size_t n,
                          ParamFeaturesFn&& param_features, ShapeFn&& shape_of,
                          std::vector<double>* ranked = nullptr,
                          double risk = kEnsembleRisk) {
  const size_t pf = model.family().params().size();
  std::vector<float> context;
  AppendContextFeatures(ctx, &context);
  const bool shape = model.feature_set() >= kShapeFeatures;
  const size_t sf = shape ? ShapeFeatureNames().size() : 0;
  // The rows' alignment: the context's, tight leading dimensions; up to 16
  // bytes (kAlignFeatures) and up to 128 (after wave_fill, kWaveFeatures).
  std::vector<float> align, wide_align;
  if (model.feature_set() >= kAlignFeatures) AppendAlignFeatures(Problem(ctx), &align);
  const bool wave = model.feature_set() >= kWaveFeatures;
  if (wave) AppendRowAlignFeatures(Problem(ctx), kWideAlignLog2, &wide_align);
  const size_t wave_at = pf + context.size() + sf + align.size();
  const size_t f = wave_at + (wave ? 1 + wide_align.size() : 0);
  const GemmShape gemm = ImplicitGemm(ctx);
  std::vector<float> x(n * f);
  std::vector<float> tiling;
  for (size_t i = 0; i < n; ++i) {
    float* row = x.data() + i * f;
    param_features(i, row);
    std::copy(context.begin(), context.end(), row + pf);
    std::copy(align.begin(), align.end(), row + pf + context.size() + sf);
    if (!shape) continue;
    const ConfigShape s = shape_of(i);
    tiling.clear();
    AppendShapeFeatures(gemm, s.tile_m, s.tile_n, s.step_k, s.split_k, &tiling);
    std::copy(tiling.begin(), tiling.end(), row + pf + context.size());
    if (!wave) continue;
    row[wave_at] = WaveFill(gemm, s, model.wave_sms());
    std::copy(wide_align.begin(), wide_align.end(), row + wave_at + 1);
  }
  std::vector<float> y(n), spread(n, 0.f);
  if (ranked && model.members() > 1) {
    model.PredictSpread(x.data(), static_cast<int64_t>(n), y.data(),
                        spread.data());
  } else {
    model.Predict(x.data(), static_cast<int64_t>(n), y.data());
  }
  const double flops = Flops(ctx);
  std::vector<double> seconds(n);
  if (ranked) ranked->resize(n);
  for (size_t i = 0; i < n; ++i) {
    seconds[i] = flops / std::exp(static_cast<double>(y[i]));
    if (ranked)
      (*ranked)[i] = flops / std::exp(static_cast<double>(y[i]) -
                                      risk * spread[i]);
  }
  return seconds;
}

}  // namespace

std::vector<double> BlockSearch::PredictSeconds(
    const Context& ctx, const std::vector<Params>& configs,
    std::vector<double>* ranked) const {
  std::vector<float> features;
  const Problem problem(ctx);
  return Score(
      model_, ctx, configs.size(),
      [&](size_t i, float* row) {
        features.clear();
        family().ParamFeatures(configs[i], &features);
        std::copy(features.begin(), features.end(), row);
      },
      [&](size_t i) { return family().Shape(problem, configs[i]); }, ranked,
      risk_);
}

namespace {

constexpr size_t kEnsembleShortlist = 512;

// Positions of the `keep` fastest predicted configurations, fastest first;
// ties go to the smaller one (parameters compared in order), so the order
// is the same on every run.
std::vector<size_t> Fastest(const std::vector<double>& seconds,
                            const std::vector<int32_t>& index,
                            const SearchRange& range, size_t keep) {
  std::vector<size_t> order(index.size());
  std::iota(order.begin(), order.end(), 0);
  keep = std::min(keep, order.size());
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](size_t a, size_t b) {
                      if (seconds[a] != seconds[b]) return seconds[a] < seconds[b];
                      return range.grid(index[a]) < range.grid(index[b]);
                    });
  order.resize(keep);
  return order;
}

}  // namespace

std::vector<ScoredConfig> BlockSearch::Top(const Context& ctx, int k,
                                          SearchStats* stats,
                                          Refinement refinement) const {
  const auto start = std::chrono::steady_clock::now();
  const size_t want = static_cast<size_t>(std::max(k, 1));
  const bool refine =
      refinement == Refinement::kShortlist && range_.refines();
  // Positions in the range's grid, and (for a model that takes the tiling's
  // features) each one's ConfigShape, which the range's rules computed.
  const bool with_shapes = model_.feature_set() >= kShapeFeatures;
  std::vector<ConfigShape> shapes;
  std::vector<int32_t> index = range_.CandidateIndices(
      ctx, with_shapes ? &shapes : nullptr, /*bases_only=*/refine);
  int64_t candidates = static_cast<int64_t>(index.size());
  // The parameters' features come precomputed with the grid.
  const size_t pf = family().params().size();
  auto score_at = [&](const Surrogate& model, const std::vector<int32_t>& at,
                      const std::vector<ConfigShape>& at_shapes,
                      std::vector<double>* at_ranked = nullptr) {
    return Score(
        model, ctx, at.size(),
        [&](size_t i, float* row) {
          std::copy_n(range_.grid_features(at[i]), pf, row);
        },
        [&](size_t i) { return at_shapes[i]; }, at_ranked, risk_);
  };
  auto score = [&](const Surrogate& model) {
    return score_at(model, index, shapes);
  };
  // The seconds the ranking goes by: the first member's predictions, then
  // the ensemble's mean charged its members' spread (ranked_s).
  std::vector<double> ranked;
  // A broken model's NaN or absurd times would poison the ranking (NaN
  // compares false with everything): such configurations are dropped here.
  const double flops = Flops(ctx);
  int64_t implausible = 0;
  auto drop_implausible = [&](std::vector<double>* seconds) {
    size_t kept = 0;
    for (size_t i = 0; i < seconds->size(); ++i) {
      if (!PlausibleSeconds(flops, (*seconds)[i])) continue;
      (*seconds)[kept] = (*seconds)[i];
      ranked[kept] = ranked[i];
      index[kept] = index[i];
      if (!shapes.empty()) shapes[kept] = shapes[i];
      ++kept;
    }
    implausible += static_cast<int64_t>(seconds->size() - kept);
    seconds->resize(kept);
    ranked.resize(kept);
    index.resize(kept);
    if (!shapes.empty()) shapes.resize(kept);
  };
  std::vector<double> seconds = score(model_.Member(0));
  ranked = seconds;
  drop_implausible(&seconds);
  if (refine) {
    // The other values of the refining parameters, for the best bases.
    std::vector<int32_t> best;
    for (size_t i : Fastest(seconds, index, range_,
                            std::max(kRefineShortlist, 8 * want)))
      best.push_back(index[i]);
    std::vector<int32_t> more;
    std::vector<ConfigShape> more_shapes;
    range_.AppendVariants(ctx, best, &more,
                          with_shapes ? &more_shapes : nullptr);
    const std::vector<double> more_seconds =
        score_at(model_.Member(0), more, more_shapes);
    index.insert(index.end(), more.begin(), more.end());
    shapes.insert(shapes.end(), more_shapes.begin(), more_shapes.end());
    seconds.insert(seconds.end(), more_seconds.begin(), more_seconds.end());
    ranked.insert(ranked.end(), more_seconds.begin(), more_seconds.end());
    candidates += static_cast<int64_t>(more.size());
    drop_implausible(&seconds);
  }
  if (model_.members() > 1) {
    // An ensemble costs one network's scoring per member. Its first member
    // ranks the whole range; the ensemble re-scores that ranking's best
    // kEnsembleShortlist (or 8k) shapes, where its top k lies. Against
    // scoring everything with the ensemble, on the shipped H100 models: the
    // same top 10 on the 32 oracle contexts, and on the 54 evaluation shapes
    // all but one (MLP 256x16x256: its 10th shape differs).
    std::vector<int32_t> short_index;
    std::vector<ConfigShape> short_shapes;
    for (size_t i : Fastest(seconds, index, range_,
                            std::max(kEnsembleShortlist, 8 * want))) {
      short_index.push_back(index[i]);
      if (!shapes.empty()) short_shapes.push_back(shapes[i]);
    }
    index = std::move(short_index);
    shapes = std::move(short_shapes);
    seconds = score_at(model_, index, shapes, &ranked);
    drop_implausible(&seconds);
  }
  std::vector<ScoredConfig> top;
  for (size_t i : Fastest(ranked, index, range_, want))
    top.push_back({range_.grid(index[i]), seconds[i], ranked[i]});
  if (stats) {
    stats->candidates = candidates;
    stats->implausible = implausible;
    stats->seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  }
  return top;
}

namespace {

std::string Short(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", v);
  return text;
}

// Contexts every model of an op must predict sanely: a spread of sizes and
// layouts such as training domains cover, none extreme, in `precision`.
std::vector<Context> ProbeContexts(Op op, DType precision) {
  std::vector<Context> out;
  if (op == Op::kGemm) {
    const int64_t shapes[][3] = {{512, 512, 512},
                                 {4096, 4096, 4096},
                                 {4096, 16, 4096},
                                 {128, 128, 8192}};
    for (const auto& [m, n, k] : shapes) {
      GemmContext g;
      g.m = m;
      g.n = n;
      g.k = k;
      g.layout_b = k > 4096 ? Layout::kN : Layout::kT;
      g.dtype = precision;
      out.push_back(g);
    }
    return out;
  }
  // ResNet-50-like layers: n, h=w, c, k, r=s, pad, stride.
  const int64_t layers[][7] = {{8, 56, 64, 64, 3, 1, 1},
                               {32, 14, 256, 256, 1, 0, 1},
                               {1, 224, 3, 64, 7, 3, 2}};
  for (const auto& [n, hw, c, k, rs, pad, stride] : layers) {
    ConvContext cv;
    cv.n = n;
    cv.h = cv.w = hw;
    cv.c = c;
    cv.k = k;
    cv.r = cv.s = rs;
    cv.pad_h = cv.pad_w = pad;
    cv.stride_h = cv.stride_w = stride;
    cv.dtype = precision;
    out.push_back(cv);
  }
  return out;
}

}  // namespace

Status BlockSearch::Probe() const {
  for (const Context& ctx : ProbeContexts(model_.op(), model_.precision())) {
    // An evenly spaced sample of the range: a broken network (a NaN or an
    // overflow in any weight) is broken for every input, and scoring whole
    // ranges of 100k shapes would add seconds to every import and start.
    // The search drops what a sample misses.
    constexpr size_t kProbeShapes = 1024;
    std::vector<Params> shapes = Candidates(ctx);
    const size_t stride = shapes.size() / kProbeShapes + 1;
    for (size_t i = 0; i * stride < shapes.size(); ++i) {
      shapes[i] = shapes[i * stride];
    }
    shapes.resize((shapes.size() + stride - 1) / stride);
    const std::vector<double> seconds = PredictSeconds(ctx, shapes);
    const double flops = Flops(ctx);
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (PlausibleSeconds(flops, seconds[i])) continue;
      return InvalidArgument("model predicts " + Short(seconds[i]) + " s (" +
                             Short(flops / seconds[i]) + " flop/s) for '" +
                             ToString(ctx) + "' with " +
                             std::string(family().name()) + " " +
                             family().Format(shapes[i]) +
                             "; a usable model predicts a finite time at " +
                             Short(kMinPlausibleFlops) + " to " +
                             Short(kMaxPlausibleFlops) + " flop/s");
    }
  }
  return OkStatus();
}

}  // namespace blocktune
