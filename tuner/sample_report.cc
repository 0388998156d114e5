#include "tuner/sample_report.h"

#include <cstdio>
#include <string>

namespace blocktune {

tuner::SamplingReport ToProto(const SamplingReport& r,
                              const std::vector<Candidate>& listed) {
  tuner::SamplingReport p;
  p.set_op(r.op);
  p.set_family(r.family);
  p.set_dtype(r.dtype);
  p.set_sampler(r.sampler);
  p.set_device_profile(r.profile);
  p.set_seed(r.seed);
  p.set_draws(r.draws);
  p.set_accepted(r.accepted);
  p.set_acceptance(r.acceptance());
  p.set_seconds(r.seconds);
  p.set_draws_per_second(r.draws_per_second());
  p.set_warmup_draws(r.warmup_draws);
  p.set_warmup_accepted(r.warmup_accepted);
  p.set_warmup_seconds(r.warmup_seconds);
  p.set_accepted_named(r.accepted_named);
  for (const auto& [rule, count] : r.rejected_by_rule) {
    auto* rc = p.add_rejected_by_rule();
    rc->set_rule(rule);
    rc->set_rejected(count);
    rc->set_fraction_of_draws(r.draws ? double(count) / r.draws : 0);
  }
  for (const auto& [name, counts] : r.marginals) {
    auto* m = p.add_marginals();
    m->set_parameter(name);
    int64_t total = 0;
    for (const auto& [value, count] : counts) total += count;
    for (const auto& [value, count] : counts) {
      auto* v = m->add_values();
      v->set_value(value);
      v->set_accepted(count);
      v->set_fraction(total ? double(count) / total : 0);
    }
  }
  for (const Candidate& c : listed)
    p.add_samples(ToString(c.ctx) + " | " + c.family->Format(c.params));
  return p;
}

void PrintReport(const tuner::SamplingReport& r, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s sampler, %s (%s, %s), device profile %s, seed %llu\n",
                r.sampler().c_str(), r.op().c_str(), r.family().c_str(),
                r.dtype().c_str(), r.device_profile().c_str(),
                static_cast<unsigned long long>(r.seed()));
  out << line;
  if (r.warmup_draws() > 0) {
    std::snprintf(line, sizeof(line),
                  "warm-up: %lld accepted of %lld uniform draws (%.3f%%) in "
                  "%.2f s\n",
                  static_cast<long long>(r.warmup_accepted()),
                  static_cast<long long>(r.warmup_draws()),
                  100.0 * r.warmup_accepted() / r.warmup_draws(),
                  r.warmup_seconds());
    out << line;
  }
  std::snprintf(line, sizeof(line),
                "acceptance: %lld of %lld draws = %.3f%% (%lld with a named "
                "context)\n",
                static_cast<long long>(r.accepted()),
                static_cast<long long>(r.draws()), 100 * r.acceptance(),
                static_cast<long long>(r.accepted_named()));
  out << line;
  std::snprintf(line, sizeof(line), "speed: %.2f million draws/s (%.3f s)\n",
                r.draws_per_second() / 1e6, r.seconds());
  out << line << "rejections by rule (each counted under the first rule it "
                 "fails):\n";
  for (const auto& rc : r.rejected_by_rule()) {
    std::snprintf(line, sizeof(line), "  %-20s %12lld  %6.2f%%\n",
                  rc.rule().c_str(), static_cast<long long>(rc.rejected()),
                  100 * rc.fraction_of_draws());
    out << line;
  }
  out << "marginals among accepted samples (value: share):\n";
  for (const auto& m : r.marginals()) {
    std::string text = "  " + m.parameter() + ":";
    for (const auto& v : m.values()) {
      if (v.accepted() == 0) continue;
      std::snprintf(line, sizeof(line), " %lld:%.1f%%",
                    static_cast<long long>(v.value()), 100 * v.fraction());
      text += line;
    }
    out << text << "\n";
  }
  for (const std::string& s : r.samples()) out << s << "\n";
}

}  // namespace blocktune
