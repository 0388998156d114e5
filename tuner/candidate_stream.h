// A campaign's candidates: the sampler of thesis §4.2 run as an endless,
// deterministic stream. Given (domain, profile, sampler, seed) the n-th
// candidate is always the same, and the stream's whole state is its Rng
// (the Naive Bayes tables are refit from the same seeded warm-up), so a
// campaign that stops after candidate n carries on with candidate n+1.
#ifndef BLOCKTUNE_TUNER_CANDIDATE_STREAM_H_
#define BLOCKTUNE_TUNER_CANDIDATE_STREAM_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/sampler.h"

namespace blocktune {

class CandidateStream {
 public:
  // `sampler` is "bayes" or "uniform". The rules are ForSampling for the
  // domain's family with `work`'s bounds (FAILED_PRECONDITION where the
  // profile cannot run it).
  // The Naive Bayes warm-up (20,000 accepted uniform draws, ~0.3 s) runs
  // here.
  static StatusOr<std::unique_ptr<CandidateStream>> Make(
      Domain domain, const DeviceProfile& profile, const std::string& sampler,
      uint64_t seed, const WorkBounds& work = {});

  // The next accepted candidate; FAILED_PRECONDITION
  // if 10 million draws in a row are rejected (a domain nothing passes).
  StatusOr<Candidate> Next();

  // Another context for the kernel of the last candidate Next() returned:
  // the same parameters x_B, a context x_C proposed by the sampler from an
  // Rng seeded with `seed` (not the stream's: the stream's sequence of
  // candidates does not change), accepted when the rules pass, the
  // context is new to this kernel, and the family generates the very same
  // PTX for it, so the worker measures it without compiling again. At
  // most `tries` proposals; nullopt when none passes, or when there is no
  // last candidate (after set_rng_state). Its proposals are not the
  // sampler's: draws() and accepted() do not count them.
  std::optional<Candidate> Another(uint64_t seed, int tries = 64);

  std::array<uint64_t, 4> rng_state() const { return rng_.state(); }
  // Also forgets the last candidate (Another answers nullopt until Next).
  void set_rng_state(const std::array<uint64_t, 4>& s);
  // Draws and acceptances since the warm-up, this process only.
  int64_t draws() const { return draws_; }
  int64_t accepted() const { return accepted_; }

 private:
  CandidateStream(Domain domain, RuleSet rules, uint64_t seed, std::string arch);
  Domain domain_;
  RuleSet rules_;
  Rng rng_;
  std::unique_ptr<Sampler> sampler_;
  int64_t draws_ = 0;
  int64_t accepted_ = 0;
  // The last candidate of Next(), its PTX (generated on the first
  // Another) and the contexts its kernel has been given so far.
  std::string arch_;  // what the PTX is generated for: the profile's sm_XY
  std::optional<Draw> last_;
  std::string last_ptx_;
  std::vector<Context> last_contexts_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_CANDIDATE_STREAM_H_
