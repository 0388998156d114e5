#include "models/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "models/features.h"

namespace blocktune {

BlockSearch::BlockSearch(Surrogate model, const DeviceProfile& profile)
    : model_(std::move(model)), range_(model_.search_values(), profile) {}

SearchRange::SearchRange(const SearchValues& v, const DeviceProfile& profile)
    : limits_(profile.Limits()) {
  for (int64_t ml : v[0])
    for (int64_t nl : v[1])
      for (int64_t ms : v[2])
        for (int64_t ns : v[3])
          for (int64_t u : v[4])
            for (int64_t kg : v[5]) {
              BlockShape xb{ml, nl, ms, ns, u, kg};
              if (ml % ms != 0 || nl % ns != 0 || ml * nl < 32) continue;
              if (!Validate(xb).ok()) continue;
              if (!Passes(HardwareRule::kThreads, Context{}, xb, limits_) ||
                  !Passes(HardwareRule::kSharedMemory, Context{}, xb, limits_) ||
                  !Passes(HardwareRule::kInstructionCache, Context{}, xb,
                          limits_)) {
                continue;
              }
              grid_.push_back(xb);
              for (int64_t c : {ml, nl, ms, ns, u, kg}) {
                grid_logs_.push_back(static_cast<float>(std::log2(double(c))));
              }
            }
}

std::vector<BlockShape> SearchRange::Candidates(
    const Context& ctx, std::vector<int32_t>* index) const {
  std::vector<BlockShape> out;
  const int64_t k = ImplicitGemm(ctx).k;
  // The K_G partial sums live in a workspace of M*N*K_G floats: all of it
  // must fit where the operands do (1 GiB, or the operands alone when they
  // are larger, which then allows no split).
  BlockShape unsplit{1, 1, 1, 1, 1, 1};
  const int64_t limit = std::max(kDefaultMaxBytes, WorkingSetBytes(ctx, unsplit));
  for (size_t g = 0; g < grid_.size(); ++g) {
    const BlockShape& xb = grid_[g];
    if (xb.kg * xb.u > k && xb.kg > 1) continue;
    if (xb.kg > 1 && WorkingSetBytes(ctx, xb) > limit) continue;
    if (!Passes(HardwareRule::kRegisters, ctx, xb, limits_) ||
        !Passes(HardwareRule::kGrid, ctx, xb, limits_) ||
        !Passes(HardwareRule::kAddressing, ctx, xb, limits_)) {
      continue;
    }
    out.push_back(xb);
    if (index) index->push_back(static_cast<int32_t>(g));
  }
  return out;
}

namespace {

// Predicted seconds of `n` block shapes in `ctx`: each row is the context's
// features with the block shape's six log2 values, which `block_logs(i,
// row)` writes first.
template <typename BlockLogs>
std::vector<double> Score(const Surrogate& model, const Context& ctx, size_t n,
                          BlockLogs&& block_logs) {
  const std::vector<float> probe = LogFeatures(ctx, BlockShape{1, 1, 1, 1, 1, 1});
  const size_t f = probe.size();
  std::vector<float> x(n * f);
  for (size_t i = 0; i < n; ++i) {
    float* row = x.data() + i * f;
    std::copy(probe.begin(), probe.end(), row);
    block_logs(i, row);
  }
  std::vector<float> y(n);
  model.Predict(x.data(), static_cast<int64_t>(n), y.data());
  const double flops = Flops(ctx);
  std::vector<double> seconds(n);
  for (size_t i = 0; i < n; ++i) {
    seconds[i] = flops / std::exp(static_cast<double>(y[i]));
  }
  return seconds;
}

}  // namespace

std::vector<double> BlockSearch::PredictSeconds(
    const Context& ctx, const std::vector<BlockShape>& shapes) const {
  return Score(model_, ctx, shapes.size(), [&](size_t i, float* row) {
    const BlockShape& xb = shapes[i];
    for (int64_t c : {xb.ml, xb.nl, xb.ms, xb.ns, xb.u, xb.kg}) {
      *row++ = static_cast<float>(std::log2(double(c)));
    }
  });
}

namespace {

constexpr size_t kEnsembleShortlist = 512;

// Positions of the `keep` fastest predicted shapes, fastest first; ties go
// to the smaller block shape, so the order is the same on every run.
std::vector<size_t> Fastest(const std::vector<double>& seconds,
                            const std::vector<BlockShape>& shapes, size_t keep) {
  std::vector<size_t> order(shapes.size());
  std::iota(order.begin(), order.end(), 0);
  keep = std::min(keep, order.size());
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](size_t a, size_t b) {
                      if (seconds[a] != seconds[b]) return seconds[a] < seconds[b];
                      return shapes[a] < shapes[b];
                    });
  order.resize(keep);
  return order;
}

}  // namespace

std::vector<ScoredShape> BlockSearch::Top(const Context& ctx, int k,
                                          SearchStats* stats) const {
  const auto start = std::chrono::steady_clock::now();
  const size_t want = static_cast<size_t>(std::max(k, 1));
  std::vector<int32_t> index;
  std::vector<BlockShape> shapes = range_.Candidates(ctx, &index);
  const int64_t candidates = static_cast<int64_t>(shapes.size());
  // The block shapes' logs come precomputed with the grid.
  auto score = [&](const Surrogate& model) {
    return Score(model, ctx, shapes.size(), [&](size_t i, float* row) {
      std::copy_n(range_.grid_logs(index[i]), kBlockParameters, row);
    });
  };
  std::vector<double> seconds = score(model_.Member(0));
  if (model_.members() > 1) {
    // An ensemble costs one network's scoring per member. Its first member
    // ranks the whole range; the ensemble re-scores that ranking's best
    // kEnsembleShortlist (or 8k) shapes, where its top k lies. Against
    // scoring everything with the ensemble, on the shipped H100 models: the
    // same top 10 on the 32 oracle contexts, and on the 54 evaluation shapes
    // all but one (MLP 256x16x256: its 10th shape differs).
    std::vector<BlockShape> short_shapes;
    std::vector<int32_t> short_index;
    for (size_t i :
         Fastest(seconds, shapes, std::max(kEnsembleShortlist, 8 * want))) {
      short_shapes.push_back(shapes[i]);
      short_index.push_back(index[i]);
    }
    shapes = std::move(short_shapes);
    index = std::move(short_index);
    seconds = score(model_);
  }
  std::vector<ScoredShape> top;
  for (size_t i : Fastest(seconds, shapes, want))
    top.push_back({shapes[i], seconds[i]});
  if (stats) {
    stats->candidates = candidates;
    stats->seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  }
  return top;
}

}  // namespace blocktune
