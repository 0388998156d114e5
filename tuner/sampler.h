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
#include "kernels/family.h"
#include "kernels/status.h"
#include "tuner/device_profile.h"

namespace blocktune {

namespace tuner {
class SamplingDomain;
}

// x_B of the ffma families (ml nl ms ns u kg st): what the store, the proto
// and the models still speak (issue 19 carries families through them).
inline constexpr int kBlockParameters = kBlockShapeValues;
// A draw's parameters at most: a family's, then the context's.
inline constexpr int kMaxParameters = 16;

// A domain checked and expanded: every parameter's values, in draw order
// (the family's parameters first, in the family's order, then x_C).
struct Domain {
  const KernelFamily* family = nullptr;
  Op op = Op::kGemm;
  // The precision of every context drawn (and of the named ones); one the
  // family implements.
  DType dtype = DType::kFp32;
  int family_params = 0;  // the leading entries of names and values
  std::vector<std::string> names;  // lower case
  std::vector<std::vector<int64_t>> values;
  std::vector<Context> named;  // contexts taken whole
  double named_fraction = 0;
  // Sampling-only rules this domain's draws skip (names from
  // RuleSet::kSamplingRules; SamplingDomain.skip_rules).
  std::vector<std::string> skip_rules;
};

// Errors name the field ("domain.context[2].pow2_max") and the range.
StatusOr<Domain> CompileDomain(const tuner::SamplingDomain& proto);
// Parses protobuf text format, then compiles.
StatusOr<Domain> ParseDomain(const std::string& text);
// The built-in domain of `family` (tuner/domains/<family>.textproto;
// gemm.ffma's is gemm.textproto, conv.ffma's conv.textproto). NOT_FOUND
// for a family with none.
StatusOr<Domain> DefaultDomain(const KernelFamily& family);
// The built-in domain of op's fp32 family (gemm.ffma, conv.ffma).
StatusOr<Domain> DefaultDomain(Op op);
// The built-in domain of DefaultFamily(op, precision), in that precision.
StatusOr<Domain> DefaultDomain(Op op, DType precision);
// Gives every context of `domain`, drawn or named, the precision `dtype`:
// INVALID_ARGUMENT when the domain's family does not implement it.
Status SetPrecision(Domain* domain, DType dtype);

// One draw: an index into each parameter's values; `named` >= 0 when the
// context is the named one (and the x_C indices are unused).
struct Draw {
  std::array<int, kMaxParameters> index{};
  int named = -1;
};

// How many leading parameters `draw` drew: the family's alone when its
// context is a named one, else every parameter of the domain.
inline size_t DrawnParameters(const Domain& domain, const Draw& draw) {
  return draw.named >= 0 ? static_cast<size_t>(domain.family_params)
                         : domain.values.size();
}

// One (x_B, x_C): a family's parameters and a context in the domain's
// precision.
struct Candidate {
  const KernelFamily* family = nullptr;
  Context ctx;
  Params params;

  Problem problem() const { return Problem(ctx); }
  // "<context> | <family> <params>", e.g. "gemm m=64 ... | gemm.mma bm=64 ..."
  std::string ToString() const;
  friend bool operator==(const Candidate& a, const Candidate& b) {
    return a.family == b.family && a.ctx == b.ctx && a.params == b.params;
  }
};
Candidate Materialize(const Domain& domain, const Draw& draw);

// The ffma families (gemm.ffma, conv.ffma) have x_B itself as their
// parameters, ML NL MS NS U KG in that order. These convert for the code
// that still takes a BlockShape; they are valid for those two families only.
const KernelFamily& FfmaFamily(Op op);
bool HasBlockShape(const KernelFamily& family);
// FAILED_PRECONDITION naming the family when it is not an ffma one.
StatusOr<BlockShape> BlockShapeOf(const Candidate& c);
// The candidate of the ffma family of ctx's op with parameters x_B.
Candidate FfmaCandidate(const Context& ctx, const BlockShape& xb);

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

// The rejection rules of DESIGN.md, each named, for one family. The
// family's hardware rules (KernelFamily::rules(), shared with
// CanImplement) always apply; the sampling-only rules are chosen by name.
// A rejected candidate is counted under the first rule, in this order,
// that it fails:
//   power_of_two        every ParamSpec::power_of_two parameter a power
//                       of two                                  (sampling)
//   params              the parameters validate (the family's tiling)
//   context             the context validates (P, Q >= 1 for conv)
//   min_block_elements  tile_m * tile_n >= 32 (M_L * N_L)        (sampling)
//   split_has_work      SplitHasWork: no split without a step    (sampling)
//   the family's rules  gemm.ffma: threads, shared_memory, registers,
//                       instruction_cache, grid, addressing; gemm.mma:
//                       threads, shared_memory, registers, alignment, grid
//   max_work            2*M*N*K <= max_flops                     (sampling)
//   min_work            2*M*N*K >= min_flops (0: none)           (sampling)
//   working_set         WorkingSetBytes <= max_bytes             (sampling)
//   occupancy           programs >= rho * N_SM                   (sampling)
// max_work and working_set bound what one benchmark costs, so a campaign
// measures ~100 samples a second instead of spending seconds on one
// 16384 x 16384 x 131072 GEMM (or failing to allocate it).
inline constexpr double kDefaultMaxFlops = 0x1p36;           // 6.9e10
inline constexpr int64_t kDefaultMaxBytes = int64_t{1} << 30;  // 1 GiB
// The most work a campaign may ask of one context (CampaignSpec::max_flops):
// 2^50 flop, an fp32 GEMM of hours, far past any layer.
inline constexpr double kMaxCampaignFlops = 0x1p50;

// Where the work of a drawn context, 2*M*N*K of its (implicit) GEMM, may
// lie: rules min_work and max_work. The default leaves out contexts above
// 2^36 flop, so that a campaign measures ~100 samples a second; a campaign
// for large products (CampaignSpec::min_flops, max_flops) moves both, since
// the models only extrapolate where no sample lies (the H100 fp32 data
// ended at 69 GFLOP, and the evaluation's 137-825 GFLOP products were
// answered 5% slower than their measured best on average).
struct WorkBounds {
  double min_flops = 0;
  double max_flops = kDefaultMaxFlops;
};

// Bytes a benchmark of the gemm.ffma / conv.ffma kernel of `xb` in `ctx`
// touches (kernels/family.h WorkingSetBytes), for code that speaks
// BlockShape.
int64_t WorkingSetBytes(const Context& ctx, const BlockShape& xb);

class RuleSet {
 public:
  static constexpr const char* kSamplingRules[] = {
      "power_of_two", "min_block_elements", "split_has_work", "max_work",
      "min_work",     "working_set",        "occupancy"};
  // `sampling_rules`: names from kSamplingRules. INVALID_ARGUMENT names an
  // unknown rule and lists the known ones; rho must be in (0, 64],
  // max_flops in [1, kMaxCampaignFlops] and min_flops in [0, max_flops).
  // FAILED_PRECONDITION where the profile's compute capability is below
  // the family's minimum (gemm.mma on a V100): nothing could be proposed.
  static StatusOr<RuleSet> Make(const KernelFamily& family,
                                const DeviceProfile& profile,
                                const std::vector<std::string>& sampling_rules,
                                double rho = 0.5,
                                double max_flops = kDefaultMaxFlops,
                                int64_t max_bytes = kDefaultMaxBytes,
                                double min_flops = 0);
  // All the sampling rules at rho = 0.5: how training data is drawn.
  static StatusOr<RuleSet> ForSampling(const KernelFamily& family,
                                       const DeviceProfile& profile,
                                       const WorkBounds& work = {});
  // The same for `domain`'s family, less the rules its skip_rules name:
  // what a campaign of that domain draws by.
  static StatusOr<RuleSet> ForSampling(const Domain& domain,
                                       const DeviceProfile& profile,
                                       const WorkBounds& work = {});
  // INVALID_ARGUMENT naming `field` unless `name` is one of kSamplingRules.
  static Status CheckSamplingRule(const std::string& name,
                                  const std::string& field);
  // The hardware rules only: what query-time search applies.
  static StatusOr<RuleSet> HardwareOnly(const KernelFamily& family,
                                        const DeviceProfile& profile);

  // The index (into names()) of the first rule `c` fails, or -1. `c` must
  // be of family().
  int FirstFailing(const Candidate& c) const;
  const std::vector<std::string>& names() const { return names_; }
  const KernelFamily& family() const { return *family_; }

 private:
  enum class Kind { kParams, kContext, kPowerOfTwo, kMinBlockElements,
                    kSplitHasWork, kHardware, kMaxWork, kMinWork,
                    kWorkingSet, kOccupancy };
  struct Rule {
    Kind kind;
    int hardware = -1;  // index into family_->rules()
  };
  const KernelFamily* family_ = nullptr;
  std::vector<Rule> rules_;
  std::vector<std::string> names_;
  std::vector<int> power_of_two_params_;
  KernelLimits limits_;
  int64_t min_programs_ = 0;  // ceil(rho * N_SM)
  double max_flops_ = kDefaultMaxFlops;
  double min_flops_ = 0;
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
  std::string op, family, dtype, sampler, profile;
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
// appending them to `accepted` when it is not null. INVALID_ARGUMENT when
// `rules` are another family's than the domain's.
StatusOr<SamplingReport> RunSampling(const Domain& domain,
                                     const DeviceProfile& profile,
                                     const RuleSet& rules,
                                     const SamplingOptions& options,
                                     std::vector<Candidate>* accepted);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_SAMPLER_H_
