#include "server/sample_digest.h"

#include <algorithm>
#include <atomic>
#include <string>
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

// A family's generator version as most generators write it into their
// PTX's comments ("// blocktune gemm.ffma_k v4, fp32: ..."): the digits
// after "<family name> v" on a comment line. Where it is, KernelDigest
// changes with every version bump although the kernel may not have.
struct VersionToken {
  size_t pos = 0, len = 0;  // the digits in the PTX
  int value = 0;
};

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// The version tokens of the PTX's comment lines that have an older value
// (2 and up), at most `limit`.
std::vector<VersionToken> VersionTokens(const std::string& ptx, size_t limit) {
  std::vector<VersionToken> out;
  size_t line = 0;
  while (line < ptx.size() && out.size() < limit) {
    size_t end = ptx.find('\n', line);
    if (end == std::string::npos) end = ptx.size();
    size_t i = line;
    while (i < end && (ptx[i] == ' ' || ptx[i] == '\t')) ++i;
    if (end - i >= 2 && ptx.compare(i, 2, "//") == 0) {
      // "name.name v123": a dotted lowercase name, " v", digits, a non-digit.
      for (size_t v = ptx.find(" v", i);
           v != std::string::npos && v < end && out.size() < limit;
           v = ptx.find(" v", v + 2)) {
        size_t d = v + 2, e = d;
        while (e < end && ptx[e] >= '0' && ptx[e] <= '9') ++e;
        if (e == d || e - d > 4) continue;
        size_t b = v;
        bool dot = false;
        while (b > i && (IsNameChar(ptx[b - 1]) || ptx[b - 1] == '.')) {
          dot = dot || ptx[b - 1] == '.';
          --b;
        }
        if (!dot || b == v) continue;
        // v1 (or v0) has no older value to try.
        const int value = std::stoi(ptx.substr(d, e - d));
        if (value >= 2) out.push_back({d, e - d, value});
      }
    }
    line = end + 1;
  }
  return out;
}

// Whether `digest` is that of `kernel` with the version tokens of its
// comments set to older values (each from 1 to its own): the kernel a
// sample measured under an older generator version, when the generator
// changed nothing but the version it writes. At most 3 tokens and 64
// variants are tried.
bool DigestWithOlderVersions(const GeneratedKernel& kernel,
                             const std::string& digest) {
  const std::vector<VersionToken> tokens = VersionTokens(kernel.ptx, 3);
  if (tokens.empty()) return false;
  std::vector<int> value;
  for (const VersionToken& t : tokens) value.push_back(t.value);
  GeneratedKernel variant = kernel;
  for (int tried = 0; tried < 64; ++tried) {
    // The next combination below the current one (an odometer over
    // [1, token's own value], starting at the current values).
    size_t i = 0;
    while (i < tokens.size() && value[i] == 1) {
      value[i] = tokens[i].value;
      ++i;
    }
    if (i == tokens.size()) return false;
    --value[i];
    // Tokens are in order: rewrite from the last, so positions hold.
    variant.ptx = kernel.ptx;
    for (size_t j = tokens.size(); j-- > 0;)
      variant.ptx.replace(tokens[j].pos, tokens[j].len,
                          std::to_string(value[j]));
    if (KernelDigest(variant) == digest) return true;
  }
  return false;
}

// The kernel this build's generator emits for the sample.
StatusOr<GeneratedKernel> Regenerated(const SampleRecord& s) {
  const KernelFamily* family = s.kernel.Family();
  if (family == nullptr) {
    return NotFound("this build has no kernel family '" + s.kernel.family +
                    "'");
  }
  return family->Generate(Problem(s.context), s.kernel.params, s.device.Arch());
}

}  // namespace

StatusOr<std::string> RegeneratedDigest(const SampleRecord& s) {
  BT_ASSIGN_OR_RETURN(GeneratedKernel kernel, Regenerated(s));
  return KernelDigest(kernel);
}

int64_t RelabelUnchanged(std::vector<SampleRecord>* samples, int threads) {
  return CountParallel(samples->size(), threads, [&](size_t i) {
    SampleRecord& s = (*samples)[i];
    const KernelFamily* family = s.kernel.Family();
    if (s.kernel_digest.empty() || family == nullptr ||
        s.kernel.generator_version >= family->version())
      return false;
    auto kernel = Regenerated(s);
    if (!kernel.ok()) return false;
    if (KernelDigest(*kernel) != s.kernel_digest &&
        !DigestWithOlderVersions(*kernel, s.kernel_digest))
      return false;
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
