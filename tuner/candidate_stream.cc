#include "tuner/candidate_stream.h"

#include <algorithm>

namespace blocktune {

CandidateStream::CandidateStream(Domain domain, RuleSet rules, uint64_t seed,
                                 std::string arch)
    : domain_(std::move(domain)),
      rules_(std::move(rules)),
      rng_(seed),
      arch_(std::move(arch)) {}

StatusOr<std::unique_ptr<CandidateStream>> CandidateStream::Make(
    Domain domain, const DeviceProfile& profile, const std::string& sampler,
    uint64_t seed, const WorkBounds& work) {
  if (sampler != "bayes" && sampler != "uniform") {
    return InvalidArgument("sampler must be bayes or uniform, got '" +
                           sampler + "'");
  }
  BT_ASSIGN_OR_RETURN(RuleSet rules,
                      RuleSet::ForSampling(domain, profile, work));
  const std::string arch = "sm_" + std::to_string(profile.cc_major) +
                           std::to_string(profile.cc_minor);
  std::unique_ptr<CandidateStream> s(
      new CandidateStream(std::move(domain), std::move(rules), seed, arch));
  if (sampler == "uniform") {
    s->sampler_ = std::make_unique<UniformSampler>(s->domain_);
    return s;
  }
  // The warm-up of RunSampling, from the same Rng.
  auto bayes = std::make_unique<NaiveBayesSampler>(s->domain_);
  const SamplingOptions defaults;
  constexpr int64_t kMaxWarmUpDraws = 100'000'000;
  // With a lower bound on the work about 1 uniform draw in 10,000 passes
  // (the default domain from 2^37 flop): 2,000 accepted draws (~2 s) teach
  // the Naive Bayes generator where the large contexts are, where the
  // default 20,000 would take 100 million draws.
  constexpr int64_t kBoundedWarmUp = 2'000;
  const int64_t want = work.min_flops > 0
                           ? std::min<int64_t>(defaults.warmup_accepted,
                                               kBoundedWarmUp)
                           : defaults.warmup_accepted;
  const auto [draws, accepted] = WarmUp(s->domain_, s->rules_, want,
                                        kMaxWarmUpDraws, s->rng_, bayes.get());
  if (accepted < want) {
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
      last_ = draw;
      last_ptx_.clear();
      last_contexts_ = {c.ctx};
      return c;
    }
  }
  return FailedPrecondition(
      "the sampling domain rejected 10000000 draws in a row");
}

void CandidateStream::set_rng_state(const std::array<uint64_t, 4>& s) {
  rng_.set_state(s);
  last_.reset();
  last_ptx_.clear();
  last_contexts_.clear();
}

std::optional<Candidate> CandidateStream::Another(uint64_t seed, int tries) {
  if (!last_) return std::nullopt;
  const Candidate base = Materialize(domain_, *last_);
  if (last_ptx_.empty()) {
    auto kernel = base.family->Generate(base.problem(), base.params, arch_);
    if (!kernel.ok()) return std::nullopt;
    last_ptx_ = std::move(kernel->ptx);
  }
  Rng rng(seed);
  for (int t = 0; t < tries; ++t) {
    Draw draw;
    sampler_->Propose(rng, &draw);
    for (int i = 0; i < domain_.family_params; ++i)
      draw.index[i] = last_->index[i];
    Candidate c = Materialize(domain_, draw);
    if (rules_.FirstFailing(c) >= 0) continue;
    if (std::find(last_contexts_.begin(), last_contexts_.end(), c.ctx) !=
        last_contexts_.end())
      continue;
    auto kernel = c.family->Generate(c.problem(), c.params, arch_);
    if (!kernel.ok() || kernel->ptx != last_ptx_) continue;
    last_contexts_.push_back(c.ctx);
    return c;
  }
  return std::nullopt;
}

}  // namespace blocktune
