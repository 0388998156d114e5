#include "tuner/candidate_stream.h"

namespace blocktune {

CandidateStream::CandidateStream(Domain domain, const DeviceProfile& profile,
                                 uint64_t seed)
    : domain_(std::move(domain)),
      rules_(RuleSet::ForSampling(profile)),
      rng_(seed) {}

StatusOr<std::unique_ptr<CandidateStream>> CandidateStream::Make(
    Domain domain, const DeviceProfile& profile, const std::string& sampler,
    uint64_t seed) {
  if (sampler != "bayes" && sampler != "uniform") {
    return InvalidArgument("sampler must be bayes or uniform, got '" +
                           sampler + "'");
  }
  std::unique_ptr<CandidateStream> s(
      new CandidateStream(std::move(domain), profile, seed));
  if (sampler == "uniform") {
    s->sampler_ = std::make_unique<UniformSampler>(s->domain_);
    return s;
  }
  // The warm-up of RunSampling: uniform draws from the same Rng until
  // enough are accepted, then one fit.
  auto bayes = std::make_unique<NaiveBayesSampler>(s->domain_);
  UniformSampler uniform(s->domain_);
  const SamplingOptions defaults;
  Draw draw;
  int64_t accepted = 0, draws = 0;
  while (accepted < defaults.warmup_accepted) {
    uniform.Propose(s->rng_, &draw);
    if (++draws > 100'000'000) {
      return FailedPrecondition(
          "the sampling domain accepts almost nothing: " +
          std::to_string(accepted) + " of 100000000 warm-up draws");
    }
    if (s->rules_.FirstFailing(Materialize(s->domain_, draw)) < 0) {
      bayes->Observe(draw);
      ++accepted;
    }
  }
  bayes->Fit();
  s->sampler_ = std::move(bayes);
  return s;
}

StatusOr<Candidate> CandidateStream::Next() {
  Draw draw;
  for (int64_t i = 0; i < 10'000'000; ++i) {
    sampler_->Propose(rng_, &draw);
    ++draws_;
    Candidate c = Materialize(domain_, draw);
    if (rules_.FirstFailing(c) < 0) {
      ++accepted_;
      return c;
    }
  }
  return FailedPrecondition(
      "the sampling domain rejected 10000000 draws in a row");
}

}  // namespace blocktune
