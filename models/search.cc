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

std::vector<double> BlockSearch::PredictSeconds(
    const Context& ctx, const std::vector<BlockShape>& shapes) const {
  const std::vector<float> probe = LogFeatures(ctx, BlockShape{1, 1, 1, 1, 1, 1});
  const size_t f = probe.size();
  std::vector<float> x(shapes.size() * f);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const BlockShape& xb = shapes[i];
    float* row = x.data() + i * f;
    std::copy(probe.begin(), probe.end(), row);
    int j = 0;
    for (int64_t c : {xb.ml, xb.nl, xb.ms, xb.ns, xb.u, xb.kg}) {
      row[j++] = static_cast<float>(std::log2(double(c)));
    }
  }
  std::vector<float> y(shapes.size());
  model_.Predict(x.data(), static_cast<int64_t>(shapes.size()), y.data());
  const double flops = Flops(ctx);
  std::vector<double> seconds(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    seconds[i] = flops / std::exp(static_cast<double>(y[i]));
  }
  return seconds;
}

std::vector<ScoredShape> BlockSearch::Top(const Context& ctx, int k,
                                          SearchStats* stats) const {
  const auto start = std::chrono::steady_clock::now();
  std::vector<int32_t> index;
  std::vector<BlockShape> shapes = range_.Candidates(ctx, &index);
  // Features from the grid's precomputed logs and the context's, once.
  const std::vector<float> probe = LogFeatures(ctx, BlockShape{1, 1, 1, 1, 1, 1});
  const size_t f = probe.size();
  std::vector<float> x(shapes.size() * f);
  for (size_t i = 0; i < shapes.size(); ++i) {
    float* row = x.data() + i * f;
    std::copy(probe.begin(), probe.end(), row);
    std::copy_n(range_.grid_logs(index[i]), kBlockParameters, row);
  }
  std::vector<float> y(shapes.size());
  model_.Predict(x.data(), static_cast<int64_t>(shapes.size()), y.data());
  const double flops = Flops(ctx);
  std::vector<double> seconds(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    seconds[i] = flops / std::exp(static_cast<double>(y[i]));
  }
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
