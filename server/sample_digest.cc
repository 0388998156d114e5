#include "server/sample_digest.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "kernels/family.h"

namespace blocktune {
namespace {

// Runs fn(i) for i in [0, n) on up to `threads` threads; returns the number
// of calls that returned true.
template <typename Fn>
int64_t CountParallel(size_t n, int threads, const Fn& fn) {
  std::atomic<size_t> next{0};
  std::atomic<int64_t> count{0};
  auto run = [&] {
    int64_t mine = 0;
    for (size_t i = next++; i < n; i = next++) mine += fn(i) ? 1 : 0;
    count += mine;
  };
  const int extra = static_cast<int>(
      std::min<size_t>(n / 64, static_cast<size_t>(std::max(threads, 1) - 1)));
  std::vector<std::thread> pool;
  for (int t = 0; t < extra; ++t) pool.emplace_back(run);
  run();
  for (std::thread& t : pool) t.join();
  return count.load();
}

}  // namespace

StatusOr<std::string> RegeneratedDigest(const SampleRecord& s) {
  const KernelFamily* family = s.kernel.Family();
  if (family == nullptr) {
    return NotFound("this build has no kernel family '" + s.kernel.family +
                    "'");
  }
  BT_ASSIGN_OR_RETURN(GeneratedKernel kernel,
                      family->Generate(Problem(s.context), s.kernel.params,
                                       s.device.Arch()));
  return KernelDigest(kernel);
}

int64_t RelabelUnchanged(std::vector<SampleRecord>* samples, int threads) {
  return CountParallel(samples->size(), threads, [&](size_t i) {
    SampleRecord& s = (*samples)[i];
    const KernelFamily* family = s.kernel.Family();
    if (s.kernel_digest.empty() || family == nullptr ||
        s.kernel.generator_version >= family->version())
      return false;
    auto digest = RegeneratedDigest(s);
    if (!digest.ok() || *digest != s.kernel_digest) return false;
    s.kernel.generator_version = family->version();
    return true;
  });
}

int64_t FillMissingDigests(std::vector<SampleRecord>* samples, int threads) {
  return CountParallel(samples->size(), threads, [&](size_t i) {
    SampleRecord& s = (*samples)[i];
    if (!s.kernel_digest.empty() || !s.kernel.IsCurrent()) return false;
    auto digest = RegeneratedDigest(s);
    if (!digest.ok()) return false;
    s.kernel_digest = std::move(*digest);
    return true;
  });
}

}  // namespace blocktune
