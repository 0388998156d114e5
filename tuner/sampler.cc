#include "tuner/sampler.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <chrono>
#include <cmath>
#include <iterator>
#include <optional>

#include "kernels/validate.h"
#include "tuner/domain.pb.h"

namespace blocktune {

// tuner/domains/*.textproto, embedded at build time (domains_embedded.cc).
extern const char* const kGemmDomainText;
extern const char* const kConvDomainText;

namespace {

constexpr const char* kBlockNames[kBlockParameters] = {"ml", "nl", "ms",
                                                       "ns", "u",  "kg"};
constexpr const char* kGemmContextNames[] = {"m", "n", "k", "layout"};
constexpr const char* kConvContextNames[] = {"n",  "hw",     "c",       "k",
                                             "rs", "stride", "dilation"};
// The largest value of each parameter above: what a block shape or a
// context can hold at all (Validate), so the rules' products of a draw's
// values stay far from int64 overflow.
constexpr int64_t kBlockMax[kBlockParameters] = {
    kMaxProgramTile, kMaxProgramTile,   kMaxProgramTile,
    kMaxProgramTile, kMaxReductionStep, kMaxReductionSplit};
constexpr int64_t kGemmContextMax[] = {kMaxDim, kMaxDim, kMaxDim, 3};
constexpr int64_t kConvContextMax[] = {kMaxDim,    kMaxDim,    kMaxDim,
                                       kMaxDim,    kMaxWindow, kMaxWindow,
                                       kMaxWindow};
constexpr int64_t kMaxValue = int64_t{1} << 40;

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The values of one parameter: listed ones and powers of two in range,
// sorted, without repeats.
StatusOr<std::vector<int64_t>> Expand(const tuner::Parameter& p,
                                      const std::string& field) {
  std::vector<int64_t> values(p.values().begin(), p.values().end());
  if (p.pow2_min() != 0 || p.pow2_max() != 0) {
    BT_RETURN_IF_ERROR(
        CheckRange(field + ".pow2_min", p.pow2_min(), 1, kMaxValue));
    BT_RETURN_IF_ERROR(CheckRange(field + ".pow2_max", p.pow2_max(),
                                  p.pow2_min(), kMaxValue));
    for (int64_t v = 1; v <= p.pow2_max(); v *= 2)
      if (v >= p.pow2_min()) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.empty()) {
    return InvalidArgument(field + " ('" + p.name() +
                           "') has no values: give values or pow2_min and "
                           "pow2_max");
  }
  return values;
}

// Finds the parameters `names` in `params`, in that order.
Status Collect(const google::protobuf::RepeatedPtrField<tuner::Parameter>& params,
               const std::string& field, const char* const* names,
               const int64_t* max_values, int count, Domain* out) {
  if (params.size() != count) {
    std::string want;
    for (int i = 0; i < count; ++i) want += std::string(i ? ", " : "") + names[i];
    return InvalidArgument(field + " must have exactly the parameters " + want +
                           "; got " + std::to_string(params.size()));
  }
  for (int i = 0; i < count; ++i) {
    int found = -1;
    for (int j = 0; j < params.size(); ++j)
      if (params[j].name() == names[i]) found = j;
    if (found < 0) {
      return InvalidArgument(field + ": missing parameter '" + names[i] + "'");
    }
    const std::string f = field + "[" + std::to_string(found) + "]";
    BT_ASSIGN_OR_RETURN(auto values, Expand(params[found], f));
    const int64_t lo = std::string(names[i]) == "layout" ? 0 : 1;
    for (int64_t v : values) {
      if (v < lo || v > max_values[i]) {
        return InvalidArgument(f + " ('" + names[i] + "') values must be in [" +
                               std::to_string(lo) + ", " +
                               std::to_string(max_values[i]) + "], got " +
                               std::to_string(v));
      }
    }
    out->names.push_back(names[i]);
    out->values.push_back(std::move(values));
  }
  return OkStatus();
}

// The rules compute sizes of every draw (the implicit GEMM, FLOPs, bytes)
// before any of them could reject it, so the largest draw's tensors must
// be within Validate's bound; smaller draws then are too. A convolution's
// output P x Q is at most H x W.
Status CheckLargestDraw(const Domain& d) {
  auto largest = [&](int p) { return d.values[p].back(); };
  struct Tensor {
    const char* what;
    std::array<int64_t, 4> dims;
  };
  std::vector<Tensor> tensors;
  if (d.op == Op::kGemm) {
    const int64_t m = largest(6), n = largest(7), k = largest(8);
    tensors = {{"A (m*k)", {m, k, 1, 1}},
               {"B (k*n)", {k, n, 1, 1}},
               {"C (m*n)", {m, n, 1, 1}}};
  } else {
    const int64_t n = largest(6), hw = largest(7), c = largest(8),
                  k = largest(9), rs = largest(10);
    tensors = {{"the input (n*hw*hw*c)", {n, hw, hw, c}},
               {"the filter (k*rs*rs*c)", {k, rs, rs, c}},
               {"the output (n*hw*hw*k)", {n, hw, hw, k}}};
  }
  for (const Tensor& t : tensors) {
    int64_t elements = 1;
    for (int64_t dim : t.dims) {
      auto product =
          CheckedProduct(std::string("domain.context: elements of ") + t.what +
                             " at the largest values",
                         elements, dim, kMaxTensorElements);
      if (!product.ok()) return product.status();
      elements = *product;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Domain> CompileDomain(const tuner::SamplingDomain& proto) {
  Domain d;
  if (proto.op() == "gemm") {
    d.op = Op::kGemm;
  } else if (proto.op() == "conv") {
    d.op = Op::kConv;
  } else {
    return InvalidArgument("domain.op must be gemm or conv, got '" +
                           proto.op() + "'");
  }
  BT_RETURN_IF_ERROR(Collect(proto.block_shape(), "domain.block_shape",
                             kBlockNames, kBlockMax, kBlockParameters, &d));
  if (d.op == Op::kGemm) {
    BT_RETURN_IF_ERROR(Collect(proto.context(), "domain.context",
                               kGemmContextNames, kGemmContextMax, 4, &d));
  } else {
    BT_RETURN_IF_ERROR(Collect(proto.context(), "domain.context",
                               kConvContextNames, kConvContextMax, 7, &d));
  }
  BT_RETURN_IF_ERROR(CheckLargestDraw(d));
  for (int i = 0; i < proto.named_contexts_size(); ++i) {
    const std::string field = "domain.named_contexts[" + std::to_string(i) + "]";
    auto ctx = ContextFromString(proto.named_contexts(i));
    if (!ctx.ok()) return InvalidArgument(field + ": " + ctx.status().message());
    if (OpOf(*ctx) != d.op) {
      return InvalidArgument(field + " is not a " +
                             std::string(ToString(d.op)) + " context");
    }
    d.named.push_back(*ctx);
  }
  if (!(proto.named_fraction() >= 0 && proto.named_fraction() <= 1)) {
    return InvalidArgument("domain.named_fraction must be in [0, 1], got " +
                           std::to_string(proto.named_fraction()));
  }
  if (proto.named_fraction() > 0 && d.named.empty()) {
    return InvalidArgument(
        "domain.named_fraction is > 0 but there are no named_contexts");
  }
  d.named_fraction = proto.named_fraction();
  return d;
}

StatusOr<Domain> ParseDomain(const std::string& text) {
  tuner::SamplingDomain proto;
  google::protobuf::TextFormat::Parser parser;
  struct Collector : google::protobuf::io::ErrorCollector {
    std::string message;
    void AddError(int line, int column, const std::string& m) override {
      if (message.empty()) {
        message = "line " + std::to_string(line + 1) + ", column " +
                  std::to_string(column + 1) + ": " + m;
      }
    }
  } errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &proto)) {
    return InvalidArgument("domain: not a SamplingDomain in text format: " +
                           errors.message);
  }
  return CompileDomain(proto);
}

StatusOr<Domain> DefaultDomain(Op op) {
  return ParseDomain(op == Op::kGemm ? kGemmDomainText : kConvDomainText);
}

Candidate Materialize(const Domain& d, const Draw& draw) {
  Candidate c;
  auto v = [&](int p) { return d.values[p][draw.index[p]]; };
  c.xb = {v(0), v(1), v(2), v(3), v(4), v(5)};
  if (draw.named >= 0) {
    c.ctx = d.named[draw.named];
  } else if (d.op == Op::kGemm) {
    GemmContext g;
    g.m = v(6);
    g.n = v(7);
    g.k = v(8);
    const int64_t layout = v(9);
    g.layout_a = layout & 2 ? Layout::kT : Layout::kN;
    g.layout_b = layout & 1 ? Layout::kT : Layout::kN;
    c.ctx = g;
  } else {
    ConvContext cv;
    cv.n = v(6);
    cv.h = cv.w = v(7);
    cv.c = v(8);
    cv.k = v(9);
    cv.r = cv.s = v(10);
    cv.stride_h = cv.stride_w = v(11);
    cv.dilation_h = cv.dilation_w = v(12);
    cv.pad_h = cv.pad_w = cv.dilation_h * (cv.r - 1) / 2;
    c.ctx = cv;
  }
  return c;
}

// ---- Rng

Rng::Rng(uint64_t seed) {
  for (uint64_t& s : s_) {  // splitmix64
    uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    s = z ^ (z >> 31);
  }
}

uint64_t Rng::Next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

// ---- Rules

namespace {

int64_t WorkingSetBytes(const Context& ctx, const GemmShape& g,
                        const BlockShape& xb) {
  int64_t floats = g.m * g.n;  // C
  if (const auto* cv = std::get_if<ConvContext>(&ctx)) {
    floats += cv->n * cv->h * cv->w * cv->c + cv->k * cv->r * cv->s * cv->c;
  } else {
    floats += g.m * g.k + g.k * g.n;
  }
  if (xb.kg > 1) floats += xb.kg * g.m * g.n;
  return 4 * floats;
}

}  // namespace

int64_t WorkingSetBytes(const Context& ctx, const BlockShape& xb) {
  return WorkingSetBytes(ctx, ImplicitGemm(ctx), xb);
}

StatusOr<RuleSet> RuleSet::Make(const DeviceProfile& profile,
                                const std::vector<std::string>& sampling_rules,
                                double rho, double max_flops,
                                int64_t max_bytes) {
  if (!(rho > 0 && rho <= 64)) {
    return InvalidArgument("rho must be in (0, 64], got " + std::to_string(rho));
  }
  if (!(max_flops >= 1)) {
    return InvalidArgument("max_flops must be >= 1, got " +
                           std::to_string(max_flops));
  }
  BT_RETURN_IF_ERROR(CheckRange("max_bytes", max_bytes, 1, int64_t{1} << 50));
  constexpr int kCount = std::size(kSamplingRules);
  bool wanted[kCount] = {};
  for (const std::string& name : sampling_rules) {
    int i = 0;
    while (i < kCount && name != kSamplingRules[i]) ++i;
    if (i == kCount) {
      return InvalidArgument("unknown sampling rule '" + name +
                             "'; known: power_of_two, min_block_elements, "
                             "split_has_work, max_work, working_set, "
                             "occupancy");
    }
    wanted[i] = true;
  }
  RuleSet set;
  set.limits_ = profile.Limits();
  set.min_programs_ = static_cast<int64_t>(std::ceil(rho * profile.sm_count));
  set.max_flops_ = max_flops;
  set.max_bytes_ = max_bytes;
  auto add = [&](Kind kind, const std::string& name,
                 HardwareRule hw = HardwareRule::kNone) {
    set.rules_.push_back({kind, hw});
    set.names_.push_back(name);
  };
  add(Kind::kBlockShape, "block_shape");
  add(Kind::kContext, "context");
  if (wanted[0]) add(Kind::kPowerOfTwo, "power_of_two");
  if (wanted[1]) add(Kind::kMinBlockElements, "min_block_elements");
  if (wanted[2]) add(Kind::kSplitHasWork, "split_has_work");
  for (HardwareRule hw : kHardwareRules) add(Kind::kHardware, ToString(hw), hw);
  if (wanted[3]) add(Kind::kMaxWork, "max_work");
  if (wanted[4]) add(Kind::kWorkingSet, "working_set");
  if (wanted[5]) add(Kind::kOccupancy, "occupancy");
  return set;
}

RuleSet RuleSet::ForSampling(const DeviceProfile& profile) {
  return *Make(profile, {"power_of_two", "min_block_elements",
                         "split_has_work", "max_work", "working_set",
                         "occupancy"});
}

RuleSet RuleSet::HardwareOnly(const DeviceProfile& profile) {
  return *Make(profile, {});
}

int RuleSet::FirstFailing(const Candidate& c) const {
  const BlockShape& xb = c.xb;
  // The implicit GEMM's M, N, K, once, for the rules that need them.
  std::optional<GemmShape> shape;
  auto gemm = [&]() -> const GemmShape& {
    if (!shape) shape = ImplicitGemm(c.ctx);
    return *shape;
  };
  for (size_t i = 0; i < rules_.size(); ++i) {
    bool ok = true;
    switch (rules_[i].kind) {
      case Kind::kBlockShape:
        ok = xb.ms >= 1 && xb.ns >= 1 && xb.ms <= xb.ml && xb.ns <= xb.nl &&
             xb.ml % xb.ms == 0 && xb.nl % xb.ns == 0 && xb.u >= 1 &&
             xb.kg >= 1;
        break;
      case Kind::kContext:
        if (const auto* cv = std::get_if<ConvContext>(&c.ctx)) {
          ok = cv->P() >= 1 && cv->Q() >= 1;
        }
        break;
      case Kind::kPowerOfTwo:
        ok = IsPowerOfTwo(xb.ml) && IsPowerOfTwo(xb.nl) &&
             IsPowerOfTwo(xb.ms) && IsPowerOfTwo(xb.ns) &&
             IsPowerOfTwo(xb.u) && IsPowerOfTwo(xb.kg);
        break;
      case Kind::kMinBlockElements:
        ok = xb.ml * xb.nl >= 32;
        break;
      case Kind::kSplitHasWork:
        ok = xb.kg * xb.u <= gemm().k;
        break;
      case Kind::kHardware:
        ok = Passes(rules_[i].hardware, c.ctx, xb, limits_);
        break;
      case Kind::kMaxWork: {
        const GemmShape& g = gemm();
        ok = 2.0 * double(g.m) * double(g.n) * double(g.k) <= max_flops_;
        break;
      }
      case Kind::kWorkingSet:
        ok = WorkingSetBytes(c.ctx, gemm(), xb) <= max_bytes_;
        break;
      case Kind::kOccupancy:
        ok = ProgramsInGrid(c.ctx, xb) >= min_programs_;
        break;
    }
    if (!ok) return static_cast<int>(i);
  }
  return -1;
}

// ---- Samplers

void UniformSampler::Propose(Rng& rng, Draw* draw) const {
  const Domain& d = domain_;
  draw->named = -1;
  if (d.named_fraction > 0 && rng.Uniform01() < d.named_fraction)
    draw->named = static_cast<int>(rng.Below(d.named.size()));
  const size_t params = DrawnParameters(d, *draw);
  for (size_t p = 0; p < params; ++p)
    draw->index[p] = static_cast<int>(rng.Below(d.values[p].size()));
}

NaiveBayesSampler::NaiveBayesSampler(const Domain& domain, double alpha)
    : domain_(domain), alpha_(alpha) {
  for (const auto& values : domain.values)
    counts_.emplace_back(values.size(), alpha);
  named_counts_.assign(domain.named.size(), alpha);
  Fit();
}

void NaiveBayesSampler::Observe(const Draw& accepted) {
  const size_t params = DrawnParameters(domain_, accepted);
  for (size_t p = 0; p < params; ++p) counts_[p][accepted.index[p]] += 1;
  if (accepted.named >= 0) named_counts_[accepted.named] += 1;
}

void NaiveBayesSampler::Fit() {
  auto cumulate = [](const std::vector<double>& counts) {
    std::vector<double> c(counts.size());
    double sum = 0;
    for (size_t i = 0; i < counts.size(); ++i) c[i] = (sum += counts[i]);
    for (double& v : c) v /= sum;
    if (!c.empty()) c.back() = 1.0;
    return c;
  };
  cumulative_.clear();
  for (const auto& counts : counts_) cumulative_.push_back(cumulate(counts));
  named_cumulative_ = cumulate(named_counts_);
}

double NaiveBayesSampler::Probability(int p, int v) const {
  return cumulative_[p][v] - (v > 0 ? cumulative_[p][v - 1] : 0.0);
}

int NaiveBayesSampler::Pick(const std::vector<double>& cumulative,
                            Rng& rng) const {
  const double u = rng.Uniform01();
  int i = 0;
  const int last = static_cast<int>(cumulative.size()) - 1;
  while (i < last && u >= cumulative[i]) ++i;
  return i;
}

void NaiveBayesSampler::Propose(Rng& rng, Draw* draw) const {
  const Domain& d = domain_;
  draw->named = -1;
  if (d.named_fraction > 0 && rng.Uniform01() < d.named_fraction)
    draw->named = Pick(named_cumulative_, rng);
  const size_t params = DrawnParameters(d, *draw);
  for (size_t p = 0; p < params; ++p) draw->index[p] = Pick(cumulative_[p], rng);
}

// ---- Running

std::pair<int64_t, int64_t> WarmUp(const Domain& domain, const RuleSet& rules,
                                   int64_t wanted, int64_t max_draws, Rng& rng,
                                   NaiveBayesSampler* bayes) {
  UniformSampler uniform(domain);
  Draw draw;
  int64_t draws = 0, accepted = 0;
  while (accepted < wanted && draws < max_draws) {
    uniform.Propose(rng, &draw);
    ++draws;
    if (rules.FirstFailing(Materialize(domain, draw)) < 0) {
      bayes->Observe(draw);
      ++accepted;
    }
  }
  bayes->Fit();
  return {draws, accepted};
}

StatusOr<SamplingReport> RunSampling(const Domain& domain,
                                     const DeviceProfile& profile,
                                     const RuleSet& rules,
                                     const SamplingOptions& options,
                                     std::vector<Candidate>* accepted) {
  if (options.sampler != "uniform" && options.sampler != "bayes") {
    return InvalidArgument("sampler must be uniform or bayes, got '" +
                           options.sampler + "'");
  }
  BT_RETURN_IF_ERROR(CheckRange("count", options.count, 1, int64_t{1} << 40));
  if (!(options.alpha > 0)) {
    return InvalidArgument("alpha must be > 0, got " +
                           std::to_string(options.alpha));
  }
  SamplingReport report;
  report.op = ToString(domain.op);
  report.sampler = options.sampler;
  report.profile = profile.name;
  report.seed = options.seed;
  std::vector<int64_t> rejected(rules.names().size(), 0);
  std::vector<std::vector<int64_t>> marginal(domain.values.size());
  for (size_t p = 0; p < domain.values.size(); ++p)
    marginal[p].assign(domain.values[p].size(), 0);

  Rng rng(options.seed);
  UniformSampler uniform(domain);
  NaiveBayesSampler bayes(domain, options.alpha);
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  Draw draw;
  // Warm-up of the Naive Bayes generator: uniform draws until enough are
  // accepted, then fit. Rejections here are not counted in the report.
  if (options.sampler == "bayes") {
    const auto start = Clock::now();
    std::tie(report.warmup_draws, report.warmup_accepted) =
        WarmUp(domain, rules, options.warmup_accepted, options.max_draws, rng,
               &bayes);
    report.warmup_seconds = seconds(start);
  }
  const Sampler& sampler =
      options.sampler == "bayes" ? static_cast<const Sampler&>(bayes) : uniform;
  const auto start = Clock::now();
  while (report.accepted < options.count &&
         report.warmup_draws + report.draws < options.max_draws) {
    sampler.Propose(rng, &draw);
    ++report.draws;
    Candidate c = Materialize(domain, draw);
    const int failed = rules.FirstFailing(c);
    if (failed >= 0) {
      ++rejected[failed];
      continue;
    }
    ++report.accepted;
    report.accepted_named += draw.named >= 0;
    const size_t params = DrawnParameters(domain, draw);
    for (size_t p = 0; p < params; ++p) ++marginal[p][draw.index[p]];
    if (accepted) accepted->push_back(std::move(c));
  }
  report.seconds = seconds(start);
  for (size_t r = 0; r < rejected.size(); ++r)
    report.rejected_by_rule.emplace_back(rules.names()[r], rejected[r]);
  for (size_t p = 0; p < domain.values.size(); ++p) {
    std::map<int64_t, int64_t> m;
    for (size_t v = 0; v < domain.values[p].size(); ++v)
      m[domain.values[p][v]] = marginal[p][v];
    report.marginals.emplace_back(domain.names[p], std::move(m));
  }
  return report;
}

}  // namespace blocktune
