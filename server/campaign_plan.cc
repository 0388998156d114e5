#include "server/campaign_plan.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "kernels/validate.h"

namespace blocktune {
namespace {

std::string CcText(int cc) {
  return std::to_string(cc / 10) + "." + std::to_string(cc % 10);
}

int ProfileCc(const DeviceProfile& p) { return p.cc_major * 10 + p.cc_minor; }

std::string WhatRuns(const DeviceProfile& p) {
  return p.name + " (compute capability " + std::to_string(p.cc_major) + "." +
         std::to_string(p.cc_minor) + ")";
}

bool ContextLess(const Context& a, const Context& b) {
  if (a.index() != b.index()) return a.index() < b.index();
  if (const auto* ga = std::get_if<GemmContext>(&a))
    return ga->Tie() < std::get<GemmContext>(b).Tie();
  return std::get<ConvContext>(a).Tie() < std::get<ConvContext>(b).Tie();
}

// A configuration: what a retune measures once.
struct Key {
  std::string family;
  Context context;
  Params params;

  friend bool operator<(const Key& a, const Key& b) {
    if (a.family != b.family) return a.family < b.family;
    if (ContextLess(a.context, b.context)) return true;
    if (ContextLess(b.context, a.context)) return false;
    return a.params < b.params;
  }
};

std::string Plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

StatusOr<std::vector<const KernelFamily*>> CampaignFamilies(
    const CampaignSpec& spec, const DeviceProfile& profile) {
  const int cc = ProfileCc(profile);
  const std::vector<const KernelFamily*> implementing =
      FamiliesFor(spec.op, spec.dtype);
  if (implementing.empty()) {
    // DefaultFamily's error lists the precisions the op has.
    Status why = DefaultFamily(spec.op, spec.dtype).status();
    return InvalidArgument("spec.dtype: " + why.message());
  }
  std::vector<const KernelFamily*> out;
  if (!spec.families.empty()) {
    // Each names a family of the op that implements the dtype.
    BT_RETURN_IF_ERROR(Validate(spec));
    for (size_t i = 0; i < spec.families.size(); ++i) {
      const std::string field = "spec.families[" + std::to_string(i) + "]";
      BT_ASSIGN_OR_RETURN(const KernelFamily* f, FindFamily(spec.families[i]));
      if (cc < f->min_compute_capability()) {
        return FailedPrecondition(field + " is " + std::string(f->name()) +
                                  ", which needs compute capability " +
                                  CcText(f->min_compute_capability()) +
                                  " or later; the campaign's GPU is " +
                                  WhatRuns(profile));
      }
      if (!spec.retune_stale) {
        if (Status s = DefaultDomain(*f).status(); !s.ok()) {
          return FailedPrecondition(field + ": " + s.message());
        }
      }
      out.push_back(f);
    }
    return out;
  }
  std::string refused;
  for (const KernelFamily* f : implementing) {
    std::string why;
    if (cc < f->min_compute_capability()) {
      why = "needs compute capability " + CcText(f->min_compute_capability());
    } else if (!spec.retune_stale && !DefaultDomain(*f).ok()) {
      why = "has no built-in sampling domain";
    } else {
      out.push_back(f);
      continue;
    }
    refused +=
        (refused.empty() ? "" : "; ") + std::string(f->name()) + " " + why;
  }
  if (out.empty()) {
    return FailedPrecondition(
        "no " + std::string(ToString(spec.op)) + " kernel family in " +
        std::string(ToString(spec.dtype)) + " runs on the campaign's GPU " +
        WhatRuns(profile) + ": " + refused);
  }
  return out;
}

uint64_t FamilySeed(uint64_t seed, size_t index) {
  if (index == 0) return seed;
  // splitmix64 of (seed + index * golden ratio): unrelated streams.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

StatusOr<std::unique_ptr<FamilyRotation>> FamilyRotation::Make(
    const std::vector<const KernelFamily*>& families, DType dtype,
    const DeviceProfile& profile, const std::string& sampler, uint64_t seed,
    const WorkBounds& work) {
  if (families.empty()) return InvalidArgument("a campaign needs a family");
  std::unique_ptr<FamilyRotation> r(new FamilyRotation());
  r->seed_ = seed;
  for (size_t i = 0; i < families.size(); ++i) {
    BT_ASSIGN_OR_RETURN(Domain domain, DefaultDomain(*families[i]));
    BT_RETURN_IF_ERROR(SetPrecision(&domain, dtype));
    BT_ASSIGN_OR_RETURN(
        auto stream, CandidateStream::Make(std::move(domain), profile, sampler,
                                           FamilySeed(seed, i), work));
    r->families_.push_back(families[i]);
    r->base_.emplace_back();
    r->base_.back().rng = stream->rng_state();
    r->streams_.push_back(std::move(stream));
  }
  return r;
}

void FamilyRotation::Restore(size_t i, const State& state) {
  // The stream's own counters start at 0 in this process.
  base_[i] = state;
  base_[i].draws -= streams_[i]->draws();
  base_[i].accepted -= streams_[i]->accepted();
  streams_[i]->set_rng_state(state.rng);
}

FamilyRotation::State FamilyRotation::state(size_t i) const {
  State s;
  s.rng = streams_[i]->rng_state();
  s.draws = base_[i].draws + streams_[i]->draws();
  s.accepted = base_[i].accepted + streams_[i]->accepted();
  return s;
}

StatusOr<Candidate> FamilyRotation::Next(int64_t seq) {
  CandidateStream& stream = *streams_[FamilyOf(seq)];
  const int64_t local = seq / static_cast<int64_t>(streams_.size());
  if (contexts_per_kernel_ > 1 && local % contexts_per_kernel_ != 0) {
    // Not the campaign's family seeds: FamilySeed of a far-off index.
    const uint64_t seed =
        FamilySeed(seed_ ^ 0x636F6E7465787473ull, static_cast<size_t>(seq) + 1);
    if (std::optional<Candidate> c = stream.Another(seed)) return *c;
  }
  return stream.Next();
}

std::string RetunePlan::Summary(const CampaignSpec& spec,
                                std::string_view device_name) const {
  std::string what =
      std::string(ToString(spec.op)) + " " + std::string(ToString(spec.dtype));
  if (!spec.families.empty()) {
    std::string names;
    for (const std::string& f : spec.families)
      names += (names.empty() ? "" : ", ") + f;
    what += " (" + names + ")";
  }
  const std::string where =
      device_name.empty() ? "" : " on " + std::string(device_name);
  if (stale_samples == 0) {
    return "no stale samples of " + what + where + ": nothing to re-measure";
  }
  std::string out = "retune of " + what + where + ": " +
                    Plural(stale_samples, "stale sample", "stale samples") +
                    ": " +
                    Plural(static_cast<int64_t>(candidates.size()),
                           "configuration", "configurations") +
                    " to re-measure";
  if (duplicates > 0)
    out += ", " + Plural(duplicates, "duplicate", "duplicates");
  if (already_current > 0)
    out += ", " + std::to_string(already_current) + " already re-measured";
  if (skipped > 0) {
    std::string reasons;
    for (const auto& [reason, n] : skipped_by_reason)
      reasons +=
          (reasons.empty() ? "" : ", ") + reason + ": " + std::to_string(n);
    out += ", " + std::to_string(skipped) +
           " skipped: today's generators refuse them on this device (" +
           reasons + ")";
  }
  return out;
}

StatusOr<RetunePlan> PlanRetune(TuningStore& store, const CampaignSpec& spec,
                                std::string_view device_name,
                                const DeviceProfile& profile) {
  auto wanted = [&](const SampleRecord& s) {
    if (DTypeOf(s.context) != spec.dtype) return false;
    if (spec.families.empty()) return true;
    for (const std::string& f : spec.families)
      if (EqualsIgnoreCase(f, s.kernel.family)) return true;
    return false;
  };
  StoreFilter filter;
  filter.device_name = std::string(device_name);
  filter.op = spec.op;
  filter.versions = VersionFilter::kCurrent;
  BT_ASSIGN_OR_RETURN(std::vector<SampleRecord> current,
                      store.ListSamples(filter));
  std::set<Key> measured;
  for (const SampleRecord& s : current) {
    if (wanted(s))
      measured.insert({s.kernel.family, s.context, s.kernel.params});
  }
  current.clear();
  filter.versions = VersionFilter::kStale;
  BT_ASSIGN_OR_RETURN(std::vector<SampleRecord> stale,
                      store.ListSamples(filter));

  RetunePlan plan;
  std::set<Key> seen;
  const KernelLimits limits = profile.Limits();
  for (const SampleRecord& s : stale) {
    if (!wanted(s)) continue;
    ++plan.stale_samples;
    Key key{s.kernel.family, s.context, s.kernel.params};
    if (!seen.insert(key).second) {
      ++plan.duplicates;
      continue;
    }
    if (measured.count(key)) {
      ++plan.already_current;
      continue;
    }
    const KernelFamily* family = s.kernel.Family();
    if (family == nullptr) {
      ++plan.skipped;
      ++plan.skipped_by_reason[s.kernel.family + " unknown family"];
      continue;
    }
    Status ok = family->ValidateParams(s.kernel.params);
    std::string reason = "params";
    if (ok.ok()) {
      const Problem problem(s.context);
      ok = family->CanImplement(problem, s.kernel.params, limits);
      if (!ok.ok()) {
        const int rule =
            family->CheckProblem(problem).ok()
                ? family->FirstFailingRule(problem, s.kernel.params, limits)
                : -1;
        reason = rule >= 0 ? family->rules()[rule] : "context";
      }
    }
    if (!ok.ok()) {
      ++plan.skipped;
      ++plan.skipped_by_reason[std::string(family->name()) + " " + reason];
      continue;
    }
    Candidate c;
    c.family = family;
    c.ctx = s.context;
    c.params = s.kernel.params;
    plan.candidates.push_back(std::move(c));
  }
  std::sort(plan.candidates.begin(), plan.candidates.end(),
            [](const Candidate& a, const Candidate& b) {
              return Key{std::string(a.family->name()), a.ctx, a.params} <
                     Key{std::string(b.family->name()), b.ctx, b.params};
            });
  return plan;
}

namespace {

// Keeps of `ranked` (a model's configurations, fastest predicted first) the
// first kGuidedTopK - kGuidedExplore and kGuidedExplore of the others,
// drawn uniformly without replacement and kept in rank order, by an Rng of
// `seed` and the context's place `j`; all of them when there are no more
// than kGuidedTopK.
void ExploreRanks(uint64_t seed, size_t j, std::vector<Params>* ranked) {
  constexpr size_t kTop = kGuidedTopK - kGuidedExplore;
  if (ranked->size() <= static_cast<size_t>(kGuidedTopK)) return;
  std::vector<size_t> rest(ranked->size() - kTop);
  for (size_t i = 0; i < rest.size(); ++i) rest[i] = kTop + i;
  Rng rng(seed * 0x9E3779B97F4A7C15ull + j + 1);
  for (size_t i = 0; i < static_cast<size_t>(kGuidedExplore); ++i) {
    const size_t pick =
        i + rng.Below(static_cast<uint32_t>(rest.size() - i));
    std::swap(rest[i], rest[pick]);
  }
  rest.resize(kGuidedExplore);
  std::sort(rest.begin(), rest.end());
  std::vector<Params> kept(ranked->begin(), ranked->begin() + kTop);
  for (size_t r : rest) kept.push_back((*ranked)[r]);
  *ranked = std::move(kept);
}

}  // namespace

StatusOr<std::unique_ptr<GuidedPlanner>> GuidedPlanner::Make(
    const CampaignSpec& spec, const DeviceProfile& profile,
    const std::string& device_name, const GuideFinder& find) {
  BT_RETURN_IF_ERROR(Validate(spec));
  if (!IsGuided(spec)) {
    return InvalidArgument("spec.sampler must be guided to plan a guided "
                           "campaign, got " + spec.sampler);
  }
  BT_ASSIGN_OR_RETURN(auto families, CampaignFamilies(spec, profile));
  std::unique_ptr<GuidedPlanner> planner(new GuidedPlanner());
  planner->seed_ = spec.seed;
  std::vector<std::unique_ptr<CandidateStream>> streams;
  for (size_t i = 0; i < families.size(); ++i) {
    const KernelFamily* f = families[i];
    auto model = find(*f, spec.dtype, device_name);
    if (!model.ok()) {
      planner->unguided_.push_back(std::string(f->name()) + ": " +
                                   model.status().message());
      continue;
    }
    BT_ASSIGN_OR_RETURN(Domain domain, DefaultDomain(*f));
    BT_RETURN_IF_ERROR(SetPrecision(&domain, spec.dtype));
    BT_ASSIGN_OR_RETURN(auto stream,
                        CandidateStream::Make(std::move(domain), profile,
                                              "uniform", FamilySeed(spec.seed, i),
                                              WorkOf(spec)));
    std::string& ids = planner->ids_;
    ids += (ids.empty() ? "" : ", ") + std::to_string(model->id) + " (" +
           std::string(f->name()) + ")";
    planner->guided_.push_back({f, std::move(*model)});
    streams.push_back(std::move(stream));
  }
  if (planner->guided_.empty()) {
    std::string why;
    for (const std::string& u : planner->unguided_)
      why += (why.empty() ? "" : "; ") + u;
    return FailedPrecondition(
        "a guided " + std::string(ToString(spec.op)) + " " +
        std::string(ToString(spec.dtype)) +
        " campaign needs a trained model of the device '" + device_name +
        "' to guide it, and there is none (" + why +
        "): train one on sampled data first (blocktune train --op " +
        std::string(ToString(spec.op)) + " --dtype " +
        std::string(ToString(spec.dtype)) + "), or import one");
  }
  // The contexts, family by family in rotation, each new to its family.
  const int64_t n_contexts =
      (spec.max_samples + kGuidedTopK - 1) / kGuidedTopK;
  std::vector<std::set<std::string>> seen(streams.size());
  for (int64_t j = 0; j < n_contexts; ++j) {
    const size_t g = static_cast<size_t>(j) % streams.size();
    for (int tries = 0;; ++tries) {
      BT_ASSIGN_OR_RETURN(Candidate c, streams[g]->Next());
      if (seen[g].insert(ToString(c.ctx)).second) {
        planner->jobs_.push_back({g, c.ctx});
        break;
      }
      if (tries == 10000) {
        return FailedPrecondition(
            std::string(planner->guided_[g].family->name()) +
            "'s domain gave no new context in 10,000 draws after " +
            std::to_string(seen[g].size()) + "; ask for fewer samples");
      }
    }
  }
  return planner;
}

std::vector<Candidate> GuidedPlanner::Search(int64_t begin, int64_t end,
                                             int threads, int64_t* answered,
                                             const std::atomic<bool>* stop) const {
  begin = std::clamp<int64_t>(begin, 0, contexts());
  end = std::clamp<int64_t>(end, begin, contexts());
  // The searches, on `threads` threads; each job's answer has its slot.
  std::vector<std::vector<Params>> tops(static_cast<size_t>(end - begin));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < tops.size();) {
      if (stop && stop->load()) return;
      const Job& job = jobs_[static_cast<size_t>(begin) + i];
      tops[i] = guided_[job.family].model.top(job.ctx, kGuidedExploreRanks);
    }
  };
  std::vector<std::thread> pool;
  const int n_threads =
      std::clamp(threads, 1, std::max(1, static_cast<int>(tops.size())));
  for (int t = 1; t < std::min(n_threads, 64); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::vector<Candidate> out;
  int64_t with_answers = 0;
  for (size_t i = 0; i < tops.size(); ++i) {
    const size_t j = static_cast<size_t>(begin) + i;
    if (!tops[i].empty()) ++with_answers;
    ExploreRanks(seed_, j, &tops[i]);
    for (Params& p : tops[i])
      out.push_back({guided_[jobs_[j].family].family, jobs_[j].ctx, std::move(p)});
  }
  if (answered) *answered = with_answers;
  return out;
}

std::string GuidedPlanner::Summary(int64_t answered, int64_t candidates) const {
  std::string s =
      "guided by model" + std::string(guided_.size() > 1 ? "s " : " ") +
      ids_ + ": " + Plural(answered, "context", "contexts") + " x (top " +
      std::to_string(kGuidedTopK - kGuidedExplore) + " + " +
      std::to_string(kGuidedExplore) + " of ranks " +
      std::to_string(kGuidedTopK - kGuidedExplore + 1) + "-" +
      std::to_string(kGuidedExploreRanks) + ") = " +
      Plural(candidates, "candidate", "candidates");
  for (const std::string& u : unguided_) s += "; not guided: " + u;
  return s;
}

StatusOr<GuidedPlan> PlanGuided(const CampaignSpec& spec,
                                const DeviceProfile& profile,
                                const std::string& device_name,
                                const GuideFinder& find, int threads) {
  BT_ASSIGN_OR_RETURN(auto planner,
                      GuidedPlanner::Make(spec, profile, device_name, find));
  GuidedPlan plan;
  plan.candidates = planner->Search(0, planner->contexts(), threads, &plan.contexts);
  if (static_cast<int64_t>(plan.candidates.size()) > spec.max_samples)
    plan.candidates.resize(static_cast<size_t>(spec.max_samples));
  plan.unguided = planner->unguided();
  plan.summary = planner->Summary(
      plan.contexts, static_cast<int64_t>(plan.candidates.size()));
  return plan;
}

}  // namespace blocktune
