#include "tuner/candidate_stream.h"

namespace blocktune {

CandidateStream::CandidateStream(Domain domain, RuleSet rules, uint64_t seed)
    : domain_(std::move(domain)), rules_(std::move(rules)), rng_(seed) {}

StatusOr<std::unique_ptr<CandidateStream>> CandidateStream::Make(
    Domain domain, const DeviceProfile& profile, const std::string& sampler,
    uint64_t seed) {
  if (sampler != "bayes" && sampler != "uniform") {
    return InvalidArgument("sampler must be bayes or uniform, got '" +
                           sampler + "'");
  }
  BT_ASSIGN_OR_RETURN(RuleSet rules,
                      RuleSet::ForSampling(*domain.family, profile));
  std::unique_ptr<CandidateStream> s(
      new CandidateStream(std::move(domain), std::move(rules), seed));
  if (sampler == "uniform") {
    s->sampler_ = std::make_unique<UniformSampler>(s->domain_);
    return s;
  }
  // The warm-up of RunSampling, from the same Rng.
  auto bayes = std::make_unique<NaiveBayesSampler>(s->domain_);
  const SamplingOptions defaults;
  constexpr int64_t kMaxWarmUpDraws = 100'000'000;
  const auto [draws, accepted] =
      WarmUp(s->domain_, s->rules_, defaults.warmup_accepted, kMaxWarmUpDraws,
             s->rng_, bayes.get());
  if (accepted < defaults.warmup_accepted) {
    return FailedPrecondition("the sampling domain accepts almost nothing: " +
                              std::to_string(accepted) + " of " +
                              std::to_string(draws) + " warm-up draws");
  }
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
