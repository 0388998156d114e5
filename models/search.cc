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

std::vector<ScoredShape> BlockSearch::Top(const Context& ctx, int k,
                                          SearchStats* stats) const {
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> index;
  std::vector<BlockShape> shapes = range_.Candidates(ctx, &index);
  // The block shapes' logs come precomputed with the grid.
  std::vector<double> seconds =
      Score(model_, ctx, shapes.size(), [&](size_t i, float* row) {
        std::copy_n(range_.grid_logs(index[i]), kBlockParameters, row);
      });
  std::vector<size_t> order(shapes.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t keep = std::min(order.size(), static_cast<size_t>(std::max(k, 1)));
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](size_t a, size_t b) {
                      if (seconds[a] != seconds[b]) return seconds[a] < seconds[b];
                      return shapes[a] < shapes[b];
                    });
  std::vector<ScoredShape> top;
  for (size_t i = 0; i < keep; ++i) top.push_back({shapes[order[i]], seconds[order[i]]});
  if (stats) {
    stats->candidates = static_cast<int64_t>(shapes.size());
    stats->seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  }
  return top;
}

}  // namespace blocktune
