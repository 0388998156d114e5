// The configurations around one configuration: every combination of the
// values of the named parameters (the others kept), that validates and that
// the family's hardware rules accept for the shape on a Hopper profile of
// --sm-count SMs, as lines of an evaluation plan (bench/eval/run.sh's
// plan-families.tsv form), for eval_bench --extra. A local search a device
// call can time in full beside the model's answers, where a random sweep
// would draw a rare value a few times only (issue 18: gemm.ffma_k's K_G of
// 3 to 7 on the MLP layers).
//
//   neighbors --group mlp --context "gemm m=7168 n=16 k=7168 layout=NT dtype=fp32"
//     --config "gemm.ffma_k v5 LM=8 TM=8 TN=4 WM=1 WN=1 KC=32 ST=2 KG=4 WK=4 CL=4"
//     --vary KG=3/5/6/7/8,CL,ST,WK [--sm-count 132]
//
// --vary names parameters, each with all of its values or those after '=',
// separated by '/'.
// Needs no GPU. Prints to stdout; a count to stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/kernels/config_text.h"
#include "kernels/context.h"
#include "kernels/family.h"
#include "kernels/limits.h"

namespace blocktune::bench {
namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: neighbors --group G --context TEXT --config 'FAMILY vN "
               "K=V ...' --vary NAME[=V/V/...],... [--sm-count N]\n");
  return 2;
}

int Main(int argc, char** argv) {
  std::string group, context_text, config_text, vary_text;
  int sm_count = 132;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage();
    const std::string v = argv[++i];
    if (flag == "--group") {
      group = v;
    } else if (flag == "--context") {
      context_text = v;
    } else if (flag == "--config") {
      config_text = v;
    } else if (flag == "--vary") {
      vary_text = v;
    } else if (flag == "--sm-count") {
      sm_count = std::atoi(v.c_str());
      if (sm_count < 1 || sm_count > 1024) {
        std::fprintf(stderr, "--sm-count %s: expected 1 to 1024\n", v.c_str());
        return 2;
      }
    } else {
      return Usage();
    }
  }
  if (group.empty() || context_text.empty() || config_text.empty() ||
      vary_text.empty())
    return Usage();
  auto ctx = ContextFromString(context_text);
  if (!ctx.ok()) {
    std::fprintf(stderr, "--context: %s\n", ctx.status().ToString().c_str());
    return 2;
  }
  auto seed = ConfigFromText(config_text);
  if (!seed.ok()) {
    std::fprintf(stderr, "--config: %s\n", seed.status().ToString().c_str());
    return 2;
  }
  const KernelFamily& f = *seed->family;
  // Each axis: a parameter and the values it takes (all of its domain's,
  // or those after '=', separated by '/').
  std::vector<int> axes;
  std::vector<std::vector<int64_t>> values;
  for (const std::string& item : Split(vary_text, ',')) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const int at = f.ParamIndex(name);
    if (at < 0) {
      std::fprintf(stderr, "--vary: %s has no parameter '%s'\n",
                   std::string(f.name()).c_str(), name.c_str());
      return 2;
    }
    if (std::find(axes.begin(), axes.end(), at) != axes.end()) {
      std::fprintf(stderr, "--vary: '%s' is named twice\n", name.c_str());
      return 2;
    }
    const std::vector<int64_t>& domain = f.params()[at].values;
    std::vector<int64_t> these;
    if (eq == std::string::npos) {
      these = domain;
    } else {
      for (const std::string& word : Split(item.substr(eq + 1), '/')) {
        char* stop = nullptr;
        const long long x = std::strtoll(word.c_str(), &stop, 10);
        if (word.empty() || *stop != '\0' ||
            std::find(domain.begin(), domain.end(), x) == domain.end()) {
          std::string allowed;
          for (int64_t d : domain)
            allowed += (allowed.empty() ? "" : ", ") + std::to_string(d);
          std::fprintf(stderr, "--vary: %s=%s: expected one of %s's values {%s}\n",
                       name.c_str(), word.c_str(), name.c_str(), allowed.c_str());
          return 2;
        }
        these.push_back(x);
      }
    }
    axes.push_back(at);
    values.push_back(std::move(these));
  }
  KernelLimits limits;  // the Hopper profile's
  limits.sm_count = sm_count;
  const Problem problem(*ctx);
  // The plan's own spelling of the shape, which eval_bench matches.
  const std::string shape = ToString(*ctx);
  // An odometer over the axes' values.
  std::vector<size_t> at(axes.size(), 0);
  long printed = 0, tried = 0;
  for (;;) {
    Config c = *seed;
    Params& p = c.params;
    for (size_t a = 0; a < axes.size(); ++a)
      p[axes[a]] = values[a][at[a]];
    ++tried;
    // CanImplement validates the parameters too (INVALID_ARGUMENT).
    if (f.CanImplement(problem, p, limits).ok() &&
        SplitHasWork(problem, f.Shape(problem, p))) {
      std::printf("%s\t%s\t0\t%s\t0\n", group.c_str(), shape.c_str(),
                  c.Text().c_str());
      ++printed;
    }
    size_t a = 0;
    for (; a < axes.size(); ++a) {
      if (++at[a] < values[a].size()) break;
      at[a] = 0;
    }
    if (a == axes.size()) break;
  }
  std::fprintf(stderr, "%ld of %ld combinations pass\n", printed, tried);
  return 0;
}

}  // namespace
}  // namespace blocktune::bench

int main(int argc, char** argv) { return blocktune::bench::Main(argc, argv); }
