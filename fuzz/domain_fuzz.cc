// Fuzzes the sampling-domain loader: protobuf text format
// (tuner/domains/*.textproto, or `blocktune sample --domain FILE`) ->
// ParseDomain -> CompileDomain, then a short sampling run on the domain,
// as `blocktune sample` does: every draw it proposes goes through
// Materialize and the rejection rules, whatever values the file allowed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tuner/device_profile.h"
#include "tuner/sampler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blocktune;
  if (size > (1 << 16)) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto domain = ParseDomain(text);
  if (!domain.ok()) return 0;
  if (domain->values.size() > kMaxParameters) std::abort();
  for (const auto& values : domain->values) {
    if (values.empty()) std::abort();
  }

  // The input picks the profile and the sampler, so both vary.
  const auto& profiles = BuiltinProfiles();
  const DeviceProfile& profile = profiles[size % profiles.size()];
  SamplingOptions options;
  options.sampler = size % 2 ? "bayes" : "uniform";
  options.count = 16;
  options.warmup_accepted = 16;
  options.max_draws = 256;
  options.seed = size;
  std::vector<Candidate> accepted;
  // A family the profile cannot run (gemm.mma on the V100) has no rules.
  auto sampling = RuleSet::ForSampling(*domain, profile);
  auto hardware_only = RuleSet::HardwareOnly(*domain->family, profile);
  if (sampling.ok() != hardware_only.ok()) std::abort();
  if (!sampling.ok()) return 0;
  auto report = RunSampling(*domain, profile, *sampling, options, &accepted);
  if (!report.ok()) std::abort();
  auto hardware = RunSampling(*domain, profile, *hardware_only, options, nullptr);
  if (!hardware.ok()) std::abort();
  return 0;
}
