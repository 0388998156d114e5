// Benchmarks a given list of (x_C, x_B) on one GPU worker process: what
// query verification (re-benchmarking the surrogate's top k) and the
// oracle evaluation need, with the same measurement protocol and the same
// failure handling as a campaign. A crash or a sticky error costs only the
// sample the worker said it was running (launch_error); a sample running
// past the timeout is killed (timeout); the worker restarts for the rest.
#ifndef BLOCKTUNE_SERVER_BENCH_LIST_H_
#define BLOCKTUNE_SERVER_BENCH_LIST_H_

#include <functional>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "tuner/measurement.h"
#include "tuner/sampler.h"

namespace blocktune {

struct BenchListOptions {
  std::string worker_path;               // blocktune-worker
  std::vector<std::string> worker_args;  // added to the worker's argv
  int gpu = 0;
  double kernel_timeout_s = 30;
  double start_timeout_s = 120;          // for the worker's hello
  // Asked about every 100 ms; when it says true the worker is killed and
  // the call answers UNAVAILABLE (the daemon is stopping).
  std::function<bool()> stop;
};

struct BenchListResult {
  DeviceFingerprint device;
  std::vector<Measurement> measurements;  // one per candidate, in order
  std::vector<bool> verified;             // checked against the reference
  int restarts = 0;
};

// Called as each result arrives: the candidate's index, its measurement,
// whether it was checked against the reference.
using BenchListSink = std::function<void(size_t, const Measurement&, bool)>;

// UNAVAILABLE when the worker cannot start (with its reason), dies three
// times in a row without finishing a sample, or `options.stop` says so.
StatusOr<BenchListResult> BenchmarkList(const BenchListOptions& options,
                                        const std::vector<Candidate>& list,
                                        const BenchListSink& on_result = nullptr);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_BENCH_LIST_H_
