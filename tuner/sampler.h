// Data synthesis D of thesis §4.2: candidate (x_B, x_C) pairs drawn from a
// sampling domain, kept only where the rejection rules accept them, and
// proposed by a uniform sampler or by the Naive Bayes generator of §4.2.2.
#ifndef BLOCKTUNE_TUNER_SAMPLER_H_
#define BLOCKTUNE_TUNER_SAMPLER_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/block_shape.h"
#include "kernels/context.h"
#include "kernels/status.h"
#include "tuner/device_profile.h"

namespace blocktune {

namespace tuner {
class SamplingDomain;
}

inline constexpr int kBlockParameters = 6;  // ml nl ms ns u kg
inline constexpr int kMaxParameters = 16;

// A domain checked and expanded: every parameter's values, in draw order
// (x_B first, then x_C).
struct Domain {
  Op op = Op::kGemm;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> values;
  std::vector<Context> named;  // contexts taken whole
  double named_fraction = 0;
};

// Errors name the field ("domain.context[2].pow2_max") and the range.
StatusOr<Domain> CompileDomain(const tuner::SamplingDomain& proto);
// Parses protobuf text format, then compiles.
StatusOr<Domain> ParseDomain(const std::string& text);
// The built-in domain of tuner/domains/<op>.textproto.
StatusOr<Domain> DefaultDomain(Op op);

// One draw: an index into each parameter's values; `named` >= 0 when the
// context is the named one (and the x_C indices are unused).
struct Draw {
  std::array<int, kMaxParameters> index{};
  int named = -1;
};

// How many leading parameters `draw` drew: x_B alone when its context is
// a named one, else every parameter of the domain.
inline size_t DrawnParameters(const Domain& domain, const Draw& draw) {
  return draw.named >= 0 ? kBlockParameters : domain.values.size();
}

struct Candidate {
  Context ctx;
  BlockShape xb;
};
Candidate Materialize(const Domain& domain, const Draw& draw);

// xoshiro256**, seeded through splitmix64: fast, and the same sequence on
// every platform for a given seed.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n), by Lemire's multiply-shift.
  uint32_t Below(uint32_t n) {
    return static_cast<uint32_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  double Uniform01() { return (Next() >> 11) * 0x1.0p-53; }

  // The whole state, so a campaign can stop and carry on exactly.
  std::array<uint64_t, 4> state() const { return {s_[0], s_[1], s_[2], s_[3]}; }
  void set_state(const std::array<uint64_t, 4>& s) {
    for (int i = 0; i < 4; ++i) s_[i] = s[i];
  }

 private:
  uint64_t s_[4];
};

// The rejection rules of DESIGN.md, each named. The hardware rules
// (kernels/gemm_ptx.h, shared with CanImplement) always apply; the
// sampling-only rules are chosen by name. A rejected candidate is counted
// under the first rule, in this order, that it fails:
//   block_shape         M_S divides M_L, N_S divides N_L
//   context             the context validates (P, Q >= 1 for conv)
//   power_of_two        every x_B component a power of two   (sampling)
//   min_block_elements  M_L * N_L >= 32                       (sampling)
//   split_has_work      K_G * U <= K: no split without a step  (sampling)
//   threads, shared_memory, registers, instruction_cache, grid, addressing
//   max_work            2*M*N*K <= max_flops                  (sampling)
//   working_set         A + B + C + workspace <= max_bytes    (sampling)
//   occupancy           programs >= rho * N_SM                (sampling)
// max_work and working_set bound what one benchmark costs, so a campaign
// measures ~100 samples a second instead of spending seconds on one
// 16384 x 16384 x 131072 GEMM (or failing to allocate it).
inline constexpr double kDefaultMaxFlops = 0x1p36;           // 6.9e10
inline constexpr int64_t kDefaultMaxBytes = int64_t{1} << 30;  // 1 GiB

// Bytes a benchmark of `xb` in `ctx` touches: operands, output, workspace.
int64_t WorkingSetBytes(const Context& ctx, const BlockShape& xb);

class RuleSet {
 public:
  static constexpr const char* kSamplingRules[] = {
      "power_of_two", "min_block_elements", "split_has_work", "max_work",
      "working_set",  "occupancy"};
  // `sampling_rules`: names from kSamplingRules. INVALID_ARGUMENT names an
  // unknown rule and lists the known ones; rho must be in (0, 64].
  static StatusOr<RuleSet> Make(const DeviceProfile& profile,
                                const std::vector<std::string>& sampling_rules,
                                double rho = 0.5,
                                double max_flops = kDefaultMaxFlops,
                                int64_t max_bytes = kDefaultMaxBytes);
  // All the sampling rules at rho = 0.5: how training data is drawn.
  static RuleSet ForSampling(const DeviceProfile& profile);
  // The hardware rules only: what query-time search applies.
  static RuleSet HardwareOnly(const DeviceProfile& profile);

  // The index (into names()) of the first rule `c` fails, or -1.
  int FirstFailing(const Candidate& c) const;
  const std::vector<std::string>& names() const { return names_; }

 private:
  enum class Kind { kBlockShape, kContext, kPowerOfTwo, kMinBlockElements,
                    kSplitHasWork, kHardware, kMaxWork, kWorkingSet,
                    kOccupancy };
  struct Rule {
    Kind kind;
    HardwareRule hardware = HardwareRule::kNone;
  };
  std::vector<Rule> rules_;
  std::vector<std::string> names_;
  KernelLimits limits_;
  int64_t min_programs_ = 0;  // ceil(rho * N_SM)
  double max_flops_ = kDefaultMaxFlops;
  int64_t max_bytes_ = kDefaultMaxBytes;
};

// Proposes draws. Deterministic given the Rng's seed.
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual void Propose(Rng& rng, Draw* draw) const = 0;
  virtual std::string name() const = 0;
};

// Every value of every parameter equally likely; named contexts with the
// domain's named_fraction.
class UniformSampler : public Sampler {
 public:
  explicit UniformSampler(const Domain& domain) : domain_(domain) {}
  void Propose(Rng& rng, Draw* draw) const override;
  std::string name() const override { return "uniform"; }

 private:
  const Domain& domain_;
};

// Thesis §4.2.2: each component is an independent categorical variable
// given "accepted", with probabilities proportional to accepted counts,
// every count starting at alpha (so no value the domain allows ever gets
// probability zero). Observe() adds an accepted draw; Fit() rebuilds the
// tables from the counts.
class NaiveBayesSampler : public Sampler {
 public:
  NaiveBayesSampler(const Domain& domain, double alpha = 100);
  void Observe(const Draw& accepted);
  void Fit();
  void Propose(Rng& rng, Draw* draw) const override;
  std::string name() const override { return "bayes"; }
  // P(value index v of parameter p), after the last Fit().
  double Probability(int p, int v) const;

 private:
  int Pick(const std::vector<double>& cumulative, Rng& rng) const;
  const Domain& domain_;
  double alpha_;
  std::vector<std::vector<double>> counts_;      // per parameter, value
  std::vector<double> named_counts_;
  std::vector<std::vector<double>> cumulative_;  // normalized, ends at 1
  std::vector<double> named_cumulative_;
};

// The Naive Bayes warm-up: uniform draws from `rng` until `wanted` pass
// `rules` (or `max_draws` are made), each accepted one observed by
// `bayes`, then one Fit(). Returns {draws, accepted}.
std::pair<int64_t, int64_t> WarmUp(const Domain& domain, const RuleSet& rules,
                                   int64_t wanted, int64_t max_draws, Rng& rng,
                                   NaiveBayesSampler* bayes);

struct SamplingOptions {
  std::string sampler = "bayes";  // or "uniform"
  int64_t count = 1000;           // accepted samples wanted
  uint64_t seed = 1;
  double alpha = 100;
  // The Naive Bayes warm-up: uniform draws until this many are accepted.
  int64_t warmup_accepted = 20000;
  // Stop after this many draws (warm-up included) even if short of count.
  int64_t max_draws = 2'000'000'000;
};

struct SamplingReport {
  std::string op, sampler, profile;
  uint64_t seed = 0;
  int64_t draws = 0, accepted = 0;     // after the warm-up
  double seconds = 0;                  // of those draws
  int64_t warmup_draws = 0, warmup_accepted = 0;
  double warmup_seconds = 0;
  std::vector<std::pair<std::string, int64_t>> rejected_by_rule;
  // Per parameter, value -> accepted count (after the warm-up).
  std::vector<std::pair<std::string, std::map<int64_t, int64_t>>> marginals;
  int64_t accepted_named = 0;  // accepted draws with a named context

  double acceptance() const { return draws ? double(accepted) / draws : 0; }
  double draws_per_second() const { return seconds > 0 ? draws / seconds : 0; }
};

// Draws until `options.count` candidates are accepted (or max_draws),
// appending them to `accepted` when it is not null.
StatusOr<SamplingReport> RunSampling(const Domain& domain,
                                     const DeviceProfile& profile,
                                     const RuleSet& rules,
                                     const SamplingOptions& options,
                                     std::vector<Candidate>* accepted);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_SAMPLER_H_
