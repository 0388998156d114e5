// Candidate draws per second on one core (issue 4 target: >= 1 million),
// and acceptance, for both samplers and every family's built-in domain
// (gemm.ffma, conv.ffma, gemm.mma) on the H100 profile, in one run. A draw is a proposal, its materialized (x_B, x_C)
// and every rejection rule it meets; the Naive Bayes warm-up is timed
// apart.
//
//   sampler_bench [draws]   (default 20 million per row)
#include <cstdio>
#include <cstdlib>

#include "tuner/device_profile.h"
#include "tuner/sampler.h"

int main(int argc, char** argv) {
  using namespace blocktune;
  const int64_t draws = argc > 1 ? std::atoll(argv[1]) : 20'000'000;
  const DeviceProfile profile = *ProfileByName("h100");
  std::printf("# %s\n# %lld draws per row, one thread\n",
              Describe(profile).c_str(), static_cast<long long>(draws));
  std::printf("%-9s %-8s %12s %10s %14s %12s %8s\n", "family", "sampler",
              "draws", "accepted", "acceptance_%", "Mdraws/s", "vs_1M");
  for (const KernelFamily* family : Families()) {
    auto built_in = DefaultDomain(*family);
    if (!built_in.ok()) continue;
    const Domain& domain = *built_in;
    const RuleSet rules = *RuleSet::ForSampling(domain, profile);
    for (const char* sampler : {"uniform", "bayes"}) {
      SamplingOptions options;
      options.sampler = sampler;
      options.count = int64_t{1} << 40;  // stop on draws
      options.max_draws = draws;
      options.seed = 1;
      auto r = RunSampling(domain, profile, rules, options, nullptr);
      if (!r.ok()) {
        std::printf("%s\n", r.status().ToString().c_str());
        return 1;
      }
      std::printf("%-9s %-8s %12lld %10lld %14.3f %12.2f %8.2f\n",
                  std::string(family->name()).c_str(), sampler,
                  static_cast<long long>(r->draws),
                  static_cast<long long>(r->accepted), 100 * r->acceptance(),
                  r->draws_per_second() / 1e6, r->draws_per_second() / 1e6);
    }
  }
  return 0;
}
