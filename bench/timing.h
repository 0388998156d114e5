// Small statistics for benchmark programs: the median and percentiles of a
// set of timings, and a wall clock.
#ifndef BLOCKTUNE_BENCH_TIMING_H_
#define BLOCKTUNE_BENCH_TIMING_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace blocktune::bench {

inline double NowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The q-quantile (0 <= q <= 1) by nearest rank; `values` is reordered.
inline double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  size_t rank = static_cast<size_t>(q * (values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

}  // namespace blocktune::bench

#endif  // BLOCKTUNE_BENCH_TIMING_H_
