// A configuration as the evaluation's plan files spell it, "gemm.mma v3
// bm=128 ...": what eval_bench reads from a plan and neighbors from its
// --config and writes back. Needs only kernels/.
#ifndef BLOCKTUNE_BENCH_KERNELS_CONFIG_TEXT_H_
#define BLOCKTUNE_BENCH_KERNELS_CONFIG_TEXT_H_

#include <string>
#include <vector>

#include "kernels/family.h"
#include "kernels/status.h"

namespace blocktune::bench {

struct Config {
  const KernelFamily* family = nullptr;
  Params params;
  std::string Text() const {
    return std::string(family->name()) + " v" +
           std::to_string(family->version()) + " " + family->Format(params);
  }
  friend bool operator==(const Config& a, const Config& b) {
    return a.family == b.family && a.params == b.params;
  }
};

// `line`'s fields between `sep`s (an empty one where two meet).
inline std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> f;
  size_t a = 0;
  for (size_t b; (b = line.find(sep, a)) != std::string::npos; a = b + 1)
    f.push_back(line.substr(a, b - a));
  f.push_back(line.substr(a));
  return f;
}

// "gemm.mma v3 bm=128 ..." of the family's current version.
inline StatusOr<Config> ConfigFromText(const std::string& text) {
  const auto words = Split(text, ' ');
  if (words.size() < 3 || words[1].size() < 2 || words[1][0] != 'v')
    return InvalidArgument("configuration '" + text +
                           "': expected 'family vN params'");
  BT_ASSIGN_OR_RETURN(const KernelFamily* f, FindFamily(words[0]));
  if (words[1] != "v" + std::to_string(f->version()))
    return FailedPrecondition(
        "configuration '" + text + "' is of " + words[0] + " " + words[1] +
        "; this build generates v" + std::to_string(f->version()) +
        ": make the plan again (bench/eval/run.sh plan)");
  BT_ASSIGN_OR_RETURN(Params p, f->Parse(text.substr(
                                    words[0].size() + words[1].size() + 2)));
  return Config{f, p};
}

}  // namespace blocktune::bench

#endif  // BLOCKTUNE_BENCH_KERNELS_CONFIG_TEXT_H_
