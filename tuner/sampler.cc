#include "tuner/sampler.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iterator>

#include "kernels/validate.h"
#include "tuner/domain.pb.h"

namespace blocktune {

// tuner/domains/*.textproto, embedded at build time (domains_embedded.cc):
// {family name, text} pairs, ending with {nullptr, nullptr}.
struct EmbeddedDomain {
  const char* family;
  const char* text;
};
extern const EmbeddedDomain kEmbeddedDomains[];

namespace {

constexpr const char* kGemmContextNames[] = {"m", "n", "k", "layout"};
constexpr const char* kConvContextNames[] = {"n",  "hw",     "c",       "k",
                                             "rs", "stride", "dilation"};
// The largest value of each context parameter: what a context can hold at
// all (Validate), so the rules' products of a draw's values stay far from
// int64 overflow. The family's parameters are bounded by its domains.
constexpr int64_t kGemmContextMax[] = {kMaxDim, kMaxDim, kMaxDim, 3};
constexpr int64_t kConvContextMax[] = {kMaxDim,    kMaxDim,    kMaxDim,
                                       kMaxDim,    kMaxWindow, kMaxWindow,
                                       kMaxWindow};
constexpr int64_t kMaxValue = int64_t{1} << 40;

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string Lower(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

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

// One parameter to find in a repeated field: its name, its range.
struct Wanted {
  std::string name;
  int64_t lo, hi;
  // A family parameter a domain may leave out (ParamSpec::absent_means):
  // then it takes only this value.
  std::optional<int64_t> absent_means = std::nullopt;
};

// Finds the parameters `wanted` in `params` (names case-insensitive), in
// that order.
Status Collect(const google::protobuf::RepeatedPtrField<tuner::Parameter>& params,
               const std::string& field, const std::vector<Wanted>& wanted,
               Domain* out) {
  int optional = 0;
  for (const Wanted& w : wanted) optional += w.absent_means.has_value();
  if (params.size() > static_cast<int>(wanted.size()) ||
      params.size() < static_cast<int>(wanted.size()) - optional) {
    std::string want;
    for (size_t i = 0; i < wanted.size(); ++i)
      want += std::string(i ? ", " : "") + wanted[i].name;
    return InvalidArgument(field + " must have exactly the parameters " + want +
                           "; got " + std::to_string(params.size()));
  }
  for (const Wanted& w : wanted) {
    int found = -1;
    for (int j = 0; j < params.size(); ++j)
      if (EqualsIgnoreCase(params[j].name(), w.name)) found = j;
    if (found < 0 && w.absent_means) {
      out->names.push_back(w.name);
      out->values.push_back({*w.absent_means});
      continue;
    }
    if (found < 0) {
      return InvalidArgument(field + ": missing parameter '" + w.name + "'");
    }
    const std::string f = field + "[" + std::to_string(found) + "]";
    BT_ASSIGN_OR_RETURN(auto values, Expand(params[found], f));
    for (int64_t v : values) {
      if (v < w.lo || v > w.hi) {
        return InvalidArgument(f + " ('" + w.name + "') values must be in [" +
                               std::to_string(w.lo) + ", " +
                               std::to_string(w.hi) + "], got " +
                               std::to_string(v));
      }
    }
    out->names.push_back(w.name);
    out->values.push_back(std::move(values));
  }
  return OkStatus();
}

// The rules compute sizes of every draw (the implicit GEMM, FLOPs, bytes)
// before any of them could reject it, so the largest draw's tensors must
// be within Validate's bound; smaller draws then are too. A convolution's
// output P x Q is at most H x W.
Status CheckLargestDraw(const Domain& d) {
  const int base = d.family_params;
  auto largest = [&](int p) { return d.values[base + p].back(); };
  struct Tensor {
    const char* what;
    std::array<int64_t, 4> dims;
  };
  std::vector<Tensor> tensors;
  if (d.op == Op::kGemm) {
    const int64_t m = largest(0), n = largest(1), k = largest(2);
    tensors = {{"A (m*k)", {m, k, 1, 1}},
               {"B (k*n)", {k, n, 1, 1}},
               {"C (m*n)", {m, n, 1, 1}}};
  } else {
    const int64_t n = largest(0), hw = largest(1), c = largest(2),
                  k = largest(3), rs = largest(4);
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

void SetDType(Context* ctx, DType dtype) {
  std::visit([&](auto& c) { c.dtype = dtype; }, *ctx);
}

}  // namespace

StatusOr<Domain> CompileDomain(const tuner::SamplingDomain& proto) {
  Domain d;
  // The family: named, or (files from before families) op's fp32 family.
  if (!proto.family().empty()) {
    auto family = FindFamily(proto.family());
    if (!family.ok()) {
      return InvalidArgument("domain." + family.status().message());
    }
    d.family = *family;
    d.op = d.family->op();
    if (!proto.op().empty() && proto.op() != ToString(d.op)) {
      return InvalidArgument("domain.op is '" + proto.op() + "' but family " +
                             std::string(d.family->name()) + " computes " +
                             std::string(ToString(d.op)));
    }
  } else if (proto.op() == "gemm" || proto.op() == "conv") {
    d.op = proto.op() == "gemm" ? Op::kGemm : Op::kConv;
    d.family = &FfmaFamily(d.op);
  } else {
    return InvalidArgument("domain.op must be gemm or conv, got '" +
                           proto.op() + "' (or name a family)");
  }
  d.dtype = d.family->precisions().front();
  if (!proto.dtype().empty()) {
    BT_ASSIGN_OR_RETURN(d.dtype, DTypeFromString(proto.dtype(), "domain.dtype"));
    if (!d.family->Implements(d.dtype)) {
      return InvalidArgument("domain.dtype: family " +
                             std::string(d.family->name()) +
                             " does not implement " + proto.dtype());
    }
  }

  // The family's parameters, by its names; block_shape is their older
  // spelling (files written for gemm.ffma and conv.ffma).
  if (proto.params_size() > 0 && proto.block_shape_size() > 0) {
    return InvalidArgument(
        "domain: give the family's parameters as params or (older files) "
        "block_shape, not both");
  }
  const bool old_spelling = proto.block_shape_size() > 0;
  std::vector<Wanted> wanted;
  for (const ParamSpec& spec : d.family->params()) {
    wanted.push_back({Lower(spec.name), spec.values.front(), spec.values.back(),
                      spec.absent_means});
  }
  BT_RETURN_IF_ERROR(Collect(old_spelling ? proto.block_shape() : proto.params(),
                             old_spelling ? "domain.block_shape" : "domain.params",
                             wanted, &d));
  d.family_params = static_cast<int>(wanted.size());

  wanted.clear();
  const char* const* names = d.op == Op::kGemm ? kGemmContextNames : kConvContextNames;
  const int64_t* max = d.op == Op::kGemm ? kGemmContextMax : kConvContextMax;
  const int count = d.op == Op::kGemm ? 4 : 7;
  for (int i = 0; i < count; ++i) {
    wanted.push_back({names[i], std::string(names[i]) == "layout" ? 0 : 1, max[i]});
  }
  BT_RETURN_IF_ERROR(Collect(proto.context(), "domain.context", wanted, &d));
  if (d.values.size() > kMaxParameters) {
    return InvalidArgument("domain: at most " + std::to_string(kMaxParameters) +
                           " parameters in all, got " +
                           std::to_string(d.values.size()));
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
    // A named context is a shape; its precision is the domain's.
    SetDType(&*ctx, d.dtype);
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
  for (int i = 0; i < proto.skip_rules_size(); ++i) {
    BT_RETURN_IF_ERROR(RuleSet::CheckSamplingRule(
        proto.skip_rules(i), "domain.skip_rules[" + std::to_string(i) + "]"));
    d.skip_rules.push_back(proto.skip_rules(i));
  }
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

StatusOr<Domain> DefaultDomain(const KernelFamily& family) {
  std::string have;
  for (const EmbeddedDomain* e = kEmbeddedDomains; e->family != nullptr; ++e) {
    if (family.name() == e->family) {
      BT_ASSIGN_OR_RETURN(Domain d, ParseDomain(e->text));
      if (d.family != &family) {
        return Internal(std::string("the built-in domain of ") + e->family +
                        " names family " + std::string(d.family->name()));
      }
      return d;
    }
    have += (have.empty() ? "" : ", ") + std::string(e->family);
  }
  return NotFound("family " + std::string(family.name()) +
                  " has no built-in sampling domain; built in: " + have);
}

StatusOr<Domain> DefaultDomain(Op op) { return DefaultDomain(FfmaFamily(op)); }

StatusOr<Domain> DefaultDomain(Op op, DType precision) {
  BT_ASSIGN_OR_RETURN(const KernelFamily* family, DefaultFamily(op, precision));
  BT_ASSIGN_OR_RETURN(Domain d, DefaultDomain(*family));
  BT_RETURN_IF_ERROR(SetPrecision(&d, precision));
  return d;
}

Status SetPrecision(Domain* d, DType dtype) {
  if (!d->family->Implements(dtype)) {
    std::string have;
    for (DType p : d->family->precisions())
      have += (have.empty() ? "" : ", ") + std::string(ToString(p));
    return InvalidArgument("dtype " + std::string(ToString(dtype)) +
                           ": family " + std::string(d->family->name()) +
                           " implements " + have);
  }
  d->dtype = dtype;
  for (Context& ctx : d->named) SetDType(&ctx, dtype);
  return OkStatus();
}

Candidate Materialize(const Domain& d, const Draw& draw) {
  Candidate c;
  c.family = d.family;
  auto v = [&](int p) { return d.values[p][draw.index[p]]; };
  c.params.size = d.family_params;
  for (int p = 0; p < d.family_params; ++p) c.params[p] = v(p);
  const int b = d.family_params;
  if (draw.named >= 0) {
    c.ctx = d.named[draw.named];
  } else if (d.op == Op::kGemm) {
    GemmContext g;
    g.m = v(b + 0);
    g.n = v(b + 1);
    g.k = v(b + 2);
    const int64_t layout = v(b + 3);
    g.layout_a = layout & 2 ? Layout::kT : Layout::kN;
    g.layout_b = layout & 1 ? Layout::kT : Layout::kN;
    g.dtype = d.dtype;
    c.ctx = g;
  } else {
    ConvContext cv;
    cv.n = v(b + 0);
    cv.h = cv.w = v(b + 1);
    cv.c = v(b + 2);
    cv.k = v(b + 3);
    cv.r = cv.s = v(b + 4);
    cv.stride_h = cv.stride_w = v(b + 5);
    cv.dilation_h = cv.dilation_w = v(b + 6);
    cv.pad_h = cv.pad_w = cv.dilation_h * (cv.r - 1) / 2;
    cv.dtype = d.dtype;
    c.ctx = cv;
  }
  return c;
}

std::string Candidate::ToString() const {
  return blocktune::ToString(ctx) + " | " + std::string(family->name()) + " " +
         family->Format(params);
}

const KernelFamily& FfmaFamily(Op op) {
  static const KernelFamily* gemm = *FindFamily("gemm.ffma");
  static const KernelFamily* conv = *FindFamily("conv.ffma");
  return op == Op::kGemm ? *gemm : *conv;
}

bool HasBlockShape(const KernelFamily& family) {
  return &family == &FfmaFamily(Op::kGemm) || &family == &FfmaFamily(Op::kConv);
}

StatusOr<BlockShape> BlockShapeOf(const Candidate& c) {
  if (c.family == nullptr || !HasBlockShape(*c.family) ||
      c.params.size != kBlockParameters) {
    return FailedPrecondition(
        "family " +
        std::string(c.family ? c.family->name() : std::string_view("(none)")) +
        " has no block shape: only gemm.ffma and conv.ffma candidates go "
        "where a BlockShape is stored or sent (families through the store "
        "and the API are issue 19)");
  }
  return ToBlockShape(c.params);
}

Candidate FfmaCandidate(const Context& ctx, const BlockShape& xb) {
  Candidate c;
  c.family = &FfmaFamily(OpOf(ctx));
  c.ctx = ctx;
  c.params = ToParams(xb);
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

int64_t WorkingSetBytes(const Context& ctx, const BlockShape& xb) {
  const Candidate c = FfmaCandidate(ctx, xb);
  const Problem problem = c.problem();
  return WorkingSetBytes(problem, c.family->Shape(problem, c.params));
}

StatusOr<RuleSet> RuleSet::Make(const KernelFamily& family,
                                const DeviceProfile& profile,
                                const std::vector<std::string>& sampling_rules,
                                double rho, double max_flops,
                                int64_t max_bytes, double min_flops) {
  if (!(rho > 0 && rho <= 64)) {
    return InvalidArgument("rho must be in (0, 64], got " + std::to_string(rho));
  }
  if (!(max_flops >= 1 && max_flops <= kMaxCampaignFlops)) {
    return InvalidArgument("max_flops must be in [1, 2^50], got " +
                           std::to_string(max_flops));
  }
  if (!(min_flops >= 0 && min_flops < max_flops)) {
    return InvalidArgument("min_flops must be in [0, max_flops = " +
                           std::to_string(max_flops) + "), got " +
                           std::to_string(min_flops));
  }
  BT_RETURN_IF_ERROR(CheckRange("max_bytes", max_bytes, 1, int64_t{1} << 50));
  constexpr int kCount = std::size(kSamplingRules);
  bool wanted[kCount] = {};
  for (size_t r = 0; r < sampling_rules.size(); ++r) {
    const std::string& name = sampling_rules[r];
    BT_RETURN_IF_ERROR(
        CheckSamplingRule(name, "sampling_rules[" + std::to_string(r) + "]"));
    int i = 0;
    while (name != kSamplingRules[i]) ++i;
    wanted[i] = true;
  }
  RuleSet set;
  set.family_ = &family;
  set.limits_ = profile.Limits();
  if (set.limits_.compute_capability < family.min_compute_capability()) {
    const int need = family.min_compute_capability();
    return FailedPrecondition(
        "family " + std::string(family.name()) + " needs compute capability " +
        std::to_string(need / 10) + "." + std::to_string(need % 10) +
        " or later; device profile " + profile.name + " has " +
        std::to_string(profile.cc_major) + "." +
        std::to_string(profile.cc_minor));
  }
  set.min_programs_ = static_cast<int64_t>(std::ceil(rho * profile.sm_count));
  set.max_flops_ = max_flops;
  set.min_flops_ = min_flops;
  set.max_bytes_ = max_bytes;
  const std::vector<ParamSpec>& specs = family.params();
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].power_of_two) set.power_of_two_params_.push_back(static_cast<int>(i));
  auto add = [&](Kind kind, const std::string& name, int hardware = -1) {
    set.rules_.push_back({kind, hardware});
    set.names_.push_back(name);
  };
  // power_of_two reads the values alone, and rejects most uniform draws
  // of the ffma domains (their multiples of 3 are for query-time search)
  // without the cost of the family's ValidateParams.
  if (wanted[0]) add(Kind::kPowerOfTwo, "power_of_two");
  add(Kind::kParams, "params");
  add(Kind::kContext, "context");
  if (wanted[1]) add(Kind::kMinBlockElements, "min_block_elements");
  if (wanted[2]) add(Kind::kSplitHasWork, "split_has_work");
  const std::vector<std::string>& hardware = family.rules();
  for (size_t i = 0; i < hardware.size(); ++i)
    add(Kind::kHardware, hardware[i], static_cast<int>(i));
  if (wanted[3]) add(Kind::kMaxWork, "max_work");
  // With no lower bound the rule would pass everything: not listed.
  if (wanted[4] && min_flops > 0) add(Kind::kMinWork, "min_work");
  if (wanted[5]) add(Kind::kWorkingSet, "working_set");
  if (wanted[6]) add(Kind::kOccupancy, "occupancy");
  return set;
}

Status RuleSet::CheckSamplingRule(const std::string& name,
                                  const std::string& field) {
  std::string known;
  for (const char* rule : kSamplingRules) {
    if (name == rule) return OkStatus();
    known += (known.empty() ? "" : ", ") + std::string(rule);
  }
  return InvalidArgument(field + ": unknown sampling rule '" + name +
                         "'; known: " + known);
}

StatusOr<RuleSet> RuleSet::ForSampling(const KernelFamily& family,
                                       const DeviceProfile& profile,
                                       const WorkBounds& work) {
  return Make(family, profile,
              std::vector<std::string>(std::begin(kSamplingRules),
                                       std::end(kSamplingRules)),
              0.5, work.max_flops, kDefaultMaxBytes, work.min_flops);
}

StatusOr<RuleSet> RuleSet::ForSampling(const Domain& domain,
                                       const DeviceProfile& profile,
                                       const WorkBounds& work) {
  std::vector<std::string> rules;
  for (const char* name : kSamplingRules) {
    const auto& skip = domain.skip_rules;
    if (std::find(skip.begin(), skip.end(), name) == skip.end())
      rules.push_back(name);
  }
  return Make(*domain.family, profile, rules, 0.5, work.max_flops,
              kDefaultMaxBytes, work.min_flops);
}

StatusOr<RuleSet> RuleSet::HardwareOnly(const KernelFamily& family,
                                        const DeviceProfile& profile) {
  return Make(family, profile, {});
}

int RuleSet::FirstFailing(const Candidate& c) const {
  const Problem problem = c.problem();
  // What the generic rules need of the configuration, once: valid only
  // after the params rule (the first) has passed.
  ConfigShape shape;
  bool have_shape = false;
  auto config = [&]() -> const ConfigShape& {
    if (!have_shape) {
      shape = family_->Shape(problem, c.params);
      have_shape = true;
    }
    return shape;
  };
  // 2*M*N*K of the (implicit) GEMM, once for max_work and min_work.
  double flops = -1;
  auto work = [&]() {
    if (flops < 0) {
      const GemmShape g = ImplicitGemm(c.ctx);
      flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    }
    return flops;
  };
  for (size_t i = 0; i < rules_.size(); ++i) {
    bool ok = true;
    switch (rules_[i].kind) {
      case Kind::kParams:
        ok = family_->ValidateParams(c.params).ok();
        break;
      case Kind::kContext:
        if (const auto* cv = std::get_if<ConvContext>(&c.ctx)) {
          ok = cv->P() >= 1 && cv->Q() >= 1;
        }
        break;
      case Kind::kPowerOfTwo:
        for (int p : power_of_two_params_) ok = ok && IsPowerOfTwo(c.params[p]);
        break;
      case Kind::kMinBlockElements:
        ok = config().tile_m * config().tile_n >= 32;
        break;
      case Kind::kSplitHasWork:
        ok = SplitHasWork(problem, config());
        break;
      case Kind::kHardware:
        ok = family_->Passes(rules_[i].hardware, problem, c.params, limits_);
        break;
      case Kind::kMaxWork:
        ok = work() <= max_flops_;
        break;
      case Kind::kMinWork:
        ok = work() >= min_flops_;
        break;
      case Kind::kWorkingSet:
        ok = WorkingSetBytes(problem, config()) <= max_bytes_;
        break;
      case Kind::kOccupancy:
        ok = config().programs >= min_programs_;
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
  // A parameter of one value takes no randomness, so pinning a new
  // parameter to its old value keeps a domain's draws (ffma's ST = 1).
  for (size_t p = 0; p < params; ++p)
    draw->index[p] = d.values[p].size() == 1
                         ? 0
                         : static_cast<int>(rng.Below(d.values[p].size()));
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
  for (size_t p = 0; p < params; ++p)
    draw->index[p] = cumulative_[p].size() == 1 ? 0 : Pick(cumulative_[p], rng);
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
  if (&rules.family() != domain.family) {
    return InvalidArgument("the rules are family " +
                           std::string(rules.family().name()) +
                           "'s, the domain is family " +
                           std::string(domain.family->name()) + "'s");
  }
  SamplingReport report;
  report.op = ToString(domain.op);
  report.family = std::string(domain.family->name());
  report.dtype = std::string(ToString(domain.dtype));
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
