// The oracle evaluation of the surrogates (issues 6 and 20), for every
// family and precision, in three steps:
//
//   oracle_eval plan --contexts bench/oracle/gemm.txt --dtype bf16
//       --models M.json.gz... [--data D.json.gz...] --count 2000 --out plan.txt
//     For each context, the configurations the query path would search (each
//     family model's search range under the hardware rules of its device),
//     up to --count drawn without replacement, split evenly over the
//     families that have a model. Every context draws from one random order
//     of each family's grid, so contexts share configurations and a kernel
//     compiles once for all of them; the list is written configuration by
//     configuration for the same reason. With --data, a context that is in
//     the training data is refused.
//   oracle_run (on the GPU host) measures the plan.
//   oracle_eval top --models ... --out top.txt
//     The query path's top k over the whole range, to be measured too.
//   oracle_eval eval --models ... --results R.tsv... [--top-results T.tsv]
//     Per context, over the measured set: the measured speed of the
//     models' top 1 (the cross-family argmin of the time the query path
//     ranks by, RankedSeconds: an ensemble's mean charged its members'
//     spread) and of the best of their top 10, over the best measured
//     speed; whether the top 1 is of the fastest family; Spearman of
//     predicted and measured speed; the predicted / measured time of the
//     top 1. With --top-results, the same for the whole range.
//     --risk R ranks as an ensemble with R instead of kEnsembleRisk (0: by
//     the mean), for comparing rankings on the same measurements.
//     --dump writes every measured configuration with its prediction by
//     each ensemble member, for analysis elsewhere. Issue 6's fp32 results
//     (models/pretrained/h100-sxm/oracle, bench/oracle/fp32-issue6.txt),
//     which name block shapes alone, read as gemm.ffma / conv.ffma.
//   oracle_eval coverage --contexts C --dtype D --results R.tsv...
//       [--device-profile h100] [--within 0.05]
//     Per context, whether its fastest measured configuration (and those
//     within --within of it) could have been drawn by a campaign: the first
//     sampling rule that refuses it (RuleSet::ForSampling less the family
//     domain's skip_rules, the default work bounds), or a parameter value
//     its family's domain never draws. A configuration no campaign draws
//     is one no model learned; the model can only guess at it. No models
//     needed (issue 20: gemm.gemv's R = 1 at N = 1, refused by
//     min_block_elements, was the decode shapes' fastest).
//
// A plan line is a Candidate::ToString: "<context> | <family> <params>".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <variant>

#include "bench/flags.h"
#include "models/search.h"
#include "models/train.h"
#include "proto/dataset_file.h"
#include "server/record_convert.h"
#include "server/surrogates.h"
#include "tuner/device_profile.h"
#include "tuner/sampler.h"

namespace blocktune {
namespace {

StatusOr<std::vector<Context>> ReadContexts(const std::string& path,
                                            std::optional<DType> dtype) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::vector<Context> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    BT_ASSIGN_OR_RETURN(Context c, ContextFromString(line));
    if (dtype) std::visit([&](auto& x) { x.dtype = *dtype; }, c);
    BT_RETURN_IF_ERROR(std::visit([](const auto& x) { return Validate(x); }, c));
    out.push_back(c);
  }
  return out;
}

// One family model, ready to score.
struct FamilyModel {
  std::shared_ptr<const BlockSearch> search;
  const KernelFamily* family() const { return &search->family(); }
  DType precision() const { return search->model().precision(); }
};

// The newest current model per (op, precision, family) in the datasets.
StatusOr<std::vector<FamilyModel>> ReadModels(
    const std::vector<std::string>& paths, double risk) {
  std::map<std::tuple<Op, DType, std::string>, ModelRecord> newest;
  for (const std::string& p : paths) {
    BT_ASSIGN_OR_RETURN(v1::Dataset d, ReadDatasetFile(p));
    for (int i = 0; i < d.models_size(); ++i) {
      BT_ASSIGN_OR_RETURN(ModelRecord r, FromProto(d.models(i), "models"));
      if (!r.IsCurrent()) {
        std::fprintf(stderr, "%s: skipping a stale %s model (v%d)\n", p.c_str(),
                     r.family.c_str(), r.generator_version);
        continue;
      }
      auto key = std::make_tuple(r.op, r.precision, r.family);
      auto it = newest.find(key);
      if (it == newest.end() || r.created_unix >= it->second.created_unix)
        newest[key] = r;
    }
  }
  std::vector<FamilyModel> out;
  for (const auto& [key, r] : newest) {
    // As the daemon loads it.
    BT_ASSIGN_OR_RETURN(LoadedModel loaded,
                        SurrogateRegistry::Load(r, /*use_cuda=*/false));
    if (risk == loaded.search->risk()) {
      out.push_back(FamilyModel{loaded.search});
      continue;
    }
    auto search = std::make_shared<BlockSearch>(*loaded.search);
    search->set_risk(risk);
    out.push_back(FamilyModel{std::move(search)});
  }
  return out;
}

std::vector<const FamilyModel*> ModelsFor(const std::vector<FamilyModel>& all,
                                          const Context& ctx) {
  std::vector<const FamilyModel*> out;
  for (const FamilyModel& m : all)
    if (m.family()->op() == OpOf(ctx) && m.precision() == DTypeOf(ctx))
      out.push_back(&m);
  return out;
}

int Plan(const std::vector<Context>& contexts,
         const std::vector<FamilyModel>& models,
         const std::vector<std::string>& data, int count, uint64_t seed,
         const std::string& out_path) {
  std::set<std::string> trained;
  for (const std::string& p : data) {
    auto d = ReadDatasetFile(p);
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      return 2;
    }
    for (int i = 0; i < d->samples_size(); ++i) {
      auto s = FromProto(d->samples(i), "samples");
      if (s.ok()) trained.insert(ToString(s->context));
    }
  }
  int in_data = 0;
  for (const Context& ctx : contexts) {
    if (trained.count(ToString(ctx))) {
      std::fprintf(stderr, "%s is in the training data; choose another\n",
                   ToString(ctx).c_str());
      ++in_data;
    }
  }
  if (in_data > 0) return 2;
  // One random order of each family's grid, shared by every context.
  Rng rng(seed);
  std::map<const FamilyModel*, std::vector<int32_t>> order;
  for (const FamilyModel& m : models) {
    std::vector<int32_t>& o = order[&m];
    for (int32_t i = 0; i < static_cast<int32_t>(m.search->grid_size()); ++i)
      o.push_back(i);
    for (size_t i = 0; i + 1 < o.size(); ++i)
      std::swap(o[i], o[i + rng.Below(static_cast<uint32_t>(o.size() - i))]);
  }
  // (family, grid position in the random order) -> the contexts drawing it.
  std::map<std::pair<const FamilyModel*, size_t>, std::vector<size_t>> drawn;
  for (size_t c = 0; c < contexts.size(); ++c) {
    const Context& ctx = contexts[c];
    std::vector<const FamilyModel*> fams = ModelsFor(models, ctx);
    if (fams.empty()) {
      std::fprintf(stderr, "no model for %s\n", ToString(ctx).c_str());
      return 2;
    }
    // rank[f]: the positions, in f's random order, of f's candidates here.
    std::vector<std::vector<size_t>> rank(fams.size());
    for (size_t f = 0; f < fams.size(); ++f) {
      std::vector<bool> ok(fams[f]->search->grid_size(), false);
      for (int32_t g : fams[f]->search->range().CandidateIndices(ctx))
        ok[g] = true;
      const std::vector<int32_t>& o = order[fams[f]];
      for (size_t i = 0; i < o.size(); ++i)
        if (ok[o[i]]) rank[f].push_back(i);
    }
    // An even split; what a small family cannot use goes to the others.
    std::vector<size_t> take(fams.size(), 0);
    size_t left = static_cast<size_t>(count);
    for (bool more = true; left > 0 && more;) {
      more = false;
      for (size_t f = 0; f < fams.size() && left > 0; ++f) {
        if (take[f] < rank[f].size()) {
          ++take[f];
          --left;
          more = true;
        }
      }
    }
    std::printf("%-80s", ToString(ctx).c_str());
    for (size_t f = 0; f < fams.size(); ++f) {
      for (size_t i = 0; i < take[f]; ++i) drawn[{fams[f], rank[f][i]}].push_back(c);
      std::printf("  %s %zu of %zu", std::string(fams[f]->family()->name()).c_str(),
                  take[f], rank[f].size());
    }
    std::printf("\n");
  }
  std::ofstream out(out_path);
  size_t lines = 0, configs = 0;
  for (const auto& [key, ctxs] : drawn) {
    const FamilyModel* m = key.first;
    const Params p = m->search->range().grid(order[m][key.second]);
    ++configs;
    for (size_t c : ctxs) {
      Candidate cand{m->family(), contexts[c], p};
      out << cand.ToString() << "\n";
      ++lines;
    }
  }
  std::printf("# %zu measurements of %zu configurations\n", lines, configs);
  return 0;
}


// The query path's answer: each family's top k by its model, merged by
// the time each was ranked by (RankedSeconds), as the service merges them.
std::vector<std::pair<const FamilyModel*, ScoredConfig>> QueryTop(
    const std::vector<const FamilyModel*>& fams, const Context& ctx, int k) {
  std::vector<std::pair<const FamilyModel*, ScoredConfig>> all;
  for (const FamilyModel* m : fams)
    for (const ScoredConfig& s : m->search->Top(ctx, k)) all.push_back({m, s});
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return RankedSeconds(a.second) < RankedSeconds(b.second);
  });
  if (all.size() > static_cast<size_t>(k)) all.resize(k);
  return all;
}

std::string ConfigText(const KernelFamily& f, const Params& p) {
  return std::string(f.name()) + " " + f.Format(p);
}

int Top(const std::vector<Context>& contexts,
        const std::vector<FamilyModel>& models, int k,
        const std::string& out_path) {
  std::ofstream out(out_path);
  for (const Context& ctx : contexts) {
    std::vector<const FamilyModel*> fams = ModelsFor(models, ctx);
    if (fams.empty()) {
      std::fprintf(stderr, "no model for %s\n", ToString(ctx).c_str());
      return 2;
    }
    for (const auto& [m, s] : QueryTop(fams, ctx, k))
      out << ToString(ctx) << " | " << ConfigText(*m->family(), s.params) << "\n";
  }
  return 0;
}

// Measured seconds per configuration text ("family params"), ok only.
struct Measured {
  std::map<std::string, double> seconds;
  int failed = 0;
};

bool ReadResults(const std::vector<std::string>& paths,
                 std::map<std::string, Measured>* into) {
  for (const std::string& p : paths) {
    auto text = ReadMaybeGzip(p);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
      return false;
    }
    size_t pos = 0;
    while (pos < text->size()) {
      size_t end = text->find('\n', pos);
      if (end == std::string::npos) end = text->size();
      const std::string line = text->substr(pos, end - pos);
      pos = end + 1;
      std::vector<std::string> f;
      size_t a = 0;
      for (size_t b; (b = line.find('\t', a)) != std::string::npos; a = b + 1)
        f.push_back(line.substr(a, b - a));
      f.push_back(line.substr(a));
      if (f.size() < 4) continue;
      // Issue 6's files name a block shape alone ("ML=16 NL=64 ..."): of
      // the op's block-shape family.
      if (f[1].find('.') == std::string::npos || f[1].find('.') > f[1].find(' ')) {
        auto ctx = ContextFromString(f[0]);
        if (!ctx.ok()) continue;
        f[1] = std::string(BlockShapeFamily(OpOf(*ctx)).name()) + " " + f[1];
      }
      Measured& m = (*into)[f[0]];
      if (f[2] == "ok") m.seconds[f[1]] = std::stod(f[3]);
      else ++m.failed;
    }
  }
  return true;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Predicted seconds of `configs` (of m's family) in `ctx` by one network.
std::vector<double> PredictWith(const Surrogate& s, const Context& ctx,
                                const std::vector<Params>& configs) {
  const Problem problem(ctx);
  std::vector<float> x;
  for (const Params& p : configs) s.Features(problem, p, &x);
  std::vector<float> y(configs.size());
  if (!configs.empty()) s.Predict(x.data(), static_cast<int64_t>(configs.size()), y.data());
  std::vector<double> out;
  for (float v : y) out.push_back(Flops(ctx) / std::exp(static_cast<double>(v)));
  return out;
}

int Eval(const std::vector<Context>& contexts,
         const std::vector<FamilyModel>& models,
         const std::vector<std::string>& plan_results,
         const std::vector<std::string>& top_results, int k,
         const std::string& dump_path) {
  std::map<std::string, Measured> planned, picked;
  if (!ReadResults(plan_results, &planned) || !ReadResults(top_results, &picked))
    return 2;
  std::unique_ptr<std::ofstream> dump;
  if (!dump_path.empty()) {
    dump = std::make_unique<std::ofstream>(dump_path);
    *dump << "context\tfamily\tparams\tmeasured_s\tpredicted_s\tmembers_s\n";
  }
  std::printf("%-70s %5s %4s %8s %-11s | %6s %6s %3s %6s %6s | %6s %6s\n",
              "context", "ok", "fail", "best_TF", "best_family", "set_t1",
              "t10", "fam", "rho", "p/m", "full1", "full10");
  std::vector<double> set_t1, set_t10, full_t1, full_t10, rhos, optimism;
  int family_right = 0, contexts_scored = 0;
  for (const Context& ctx : contexts) {
    const std::string text = ToString(ctx);
    std::vector<const FamilyModel*> fams = ModelsFor(models, ctx);
    const Measured& m = planned[text];
    if (m.seconds.empty() || fams.empty()) {
      std::printf("%-70s %s\n", text.c_str(),
                  fams.empty() ? "no model" : "not measured");
      continue;
    }
    // The measured set with each configuration's ensemble prediction.
    struct Row {
      const FamilyModel* model;
      std::string config;
      double measured, predicted, ranked;
    };
    std::vector<Row> rows;
    for (const FamilyModel* fm : fams) {
      std::vector<Params> configs;
      std::vector<std::string> texts;
      std::vector<double> seconds;
      const std::string prefix = std::string(fm->family()->name()) + " ";
      for (const auto& [config, s] : m.seconds) {
        if (config.compare(0, prefix.size(), prefix) != 0) continue;
        auto p = fm->family()->Parse(config.substr(prefix.size()));
        if (!p.ok()) continue;
        configs.push_back(*p);
        texts.push_back(config);
        seconds.push_back(s);
      }
      std::vector<double> ranked;
      const std::vector<double> pred =
          fm->search->PredictSeconds(ctx, configs, &ranked);
      std::vector<std::vector<double>> member;
      if (dump)
        for (int j = 0; j < fm->search->model().members(); ++j)
          member.push_back(PredictWith(fm->search->model().Member(j), ctx, configs));
      for (size_t i = 0; i < configs.size(); ++i) {
        rows.push_back({fm, texts[i], seconds[i], pred[i], ranked[i]});
        if (!dump) continue;
        *dump << text << "\t" << fm->family()->name() << "\t"
              << texts[i].substr(prefix.size()) << "\t" << seconds[i] << "\t"
              << pred[i] << "\t";
        for (size_t j = 0; j < member.size(); ++j)
          *dump << (j ? "," : "") << member[j][i];
        *dump << "\n";
      }
    }
    if (rows.empty()) continue;
    ++contexts_scored;
    std::vector<size_t> order(rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    // Ranked as the query path ranks (an ensemble's spread charged).
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return rows[a].ranked < rows[b].ranked;
    });
    size_t best_i = 0;
    for (size_t i = 1; i < rows.size(); ++i)
      if (rows[i].measured < rows[best_i].measured) best_i = i;
    const double best = rows[best_i].measured;
    const Row& pick = rows[order[0]];
    const double t1 = best / pick.measured;
    double b10 = INFINITY;
    for (size_t i = 0; i < order.size() && i < static_cast<size_t>(k); ++i)
      b10 = std::min(b10, rows[order[i]].measured);
    const bool fam_ok = pick.model == rows[best_i].model;
    family_right += fam_ok;
    std::vector<double> neg_pred, neg_meas;
    for (const Row& r : rows) {
      neg_pred.push_back(-r.predicted);
      neg_meas.push_back(-r.measured);
    }
    const double rho = Spearman(neg_pred, neg_meas);
    set_t1.push_back(t1);
    set_t10.push_back(best / b10);
    rhos.push_back(rho);
    optimism.push_back(pick.predicted / pick.measured);
    // Over the whole range: the query path's top k, measured.
    std::string full = "     -      -";
    auto pk = picked.find(text);
    if (pk != picked.end() && !pk->second.seconds.empty()) {
      double all_best = best;
      for (const auto& [x, s] : pk->second.seconds) all_best = std::min(all_best, s);
      const auto top = QueryTop(fams, ctx, k);
      double f1 = 0, f10 = INFINITY;
      for (size_t i = 0; i < top.size(); ++i) {
        auto it = pk->second.seconds.find(
            ConfigText(*top[i].first->family(), top[i].second.params));
        if (it == pk->second.seconds.end()) continue;
        if (i == 0) f1 = all_best / it->second;
        f10 = std::min(f10, it->second);
      }
      full_t1.push_back(f1);
      full_t10.push_back(std::isfinite(f10) ? all_best / f10 : 0);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%6.3f %6.3f", f1, full_t10.back());
      full = buf;
    }
    std::printf("%-70s %5zu %4d %8.2f %-11s | %6.3f %6.3f %3s %6.3f %6.3f | %s\n",
                text.c_str(), rows.size(), m.failed, Flops(ctx) / best / 1e12,
                std::string(rows[best_i].model->family()->name()).c_str(), t1,
                best / b10, fam_ok ? "yes" : "no", rho, pick.predicted / pick.measured,
                full.c_str());
  }
  auto share = [](const std::vector<double>& v, double at_least) {
    return v.empty() ? 0.0
                     : static_cast<double>(std::count_if(
                           v.begin(), v.end(), [&](double x) { return x >= at_least; })) /
                           v.size();
  };
  std::printf(
      "\nover the measured set of %d contexts: median top-1 %.3f, top-%d %.3f; "
      "top-1 within 5%% on %.0f%%; top-1 of the fastest family on %d; "
      "median Spearman %.3f; median predicted/measured of the top 1 %.3f; "
      "minimum top-1 %.3f\n",
      contexts_scored, Median(set_t1), k, Median(set_t10),
      100 * share(set_t1, 1 / 1.05), family_right, Median(rhos), Median(optimism),
      set_t1.empty() ? 0 : *std::min_element(set_t1.begin(), set_t1.end()));
  if (!full_t1.empty()) {
    std::printf(
        "over the whole range (%zu contexts): median top-1 %.3f, top-%d %.3f; "
        "top-1 within 5%% on %.0f%%\n",
        full_t1.size(), Median(full_t1), k, Median(full_t10),
        100 * share(full_t1, 1 / 1.05));
  }
  return 0;
}

// Why a campaign could not have drawn `c`: the first sampling rule that
// refuses it, "domain P=v" for a value its family's domain never draws,
// or "" when a campaign could have.
struct SamplingCheck {
  Domain domain;
  RuleSet rules;
  std::string Verdict(const Candidate& c) const {
    for (int i = 0; i < domain.family_params; ++i) {
      const std::vector<int64_t>& v = domain.values[i];
      if (std::find(v.begin(), v.end(), c.params[i]) == v.end())
        return "domain " + std::string(c.family->params()[i].name) + "=" +
               std::to_string(c.params[i]);
    }
    const int failed = rules.FirstFailing(c);
    return failed < 0 ? "" : rules.names()[failed];
  }
};

int Coverage(const std::vector<Context>& contexts,
             const std::vector<std::string>& results,
             const DeviceProfile& profile, double within) {
  std::map<std::string, Measured> measured;
  if (!ReadResults(results, &measured)) return 2;
  std::map<const KernelFamily*, std::unique_ptr<SamplingCheck>> checks;
  auto check_of = [&](const KernelFamily* f) -> const SamplingCheck* {
    auto it = checks.find(f);
    if (it != checks.end()) return it->second.get();
    auto domain = DefaultDomain(*f);
    auto rules = domain.ok() ? RuleSet::ForSampling(*domain, profile)
                             : StatusOr<RuleSet>(domain.status());
    if (!rules.ok()) {
      std::fprintf(stderr, "%s: %s\n", std::string(f->name()).c_str(),
                   rules.status().ToString().c_str());
      checks[f] = nullptr;
      return nullptr;
    }
    checks[f] = std::make_unique<SamplingCheck>(SamplingCheck{*domain, *rules});
    return checks[f].get();
  };
  std::map<std::string, int> best_refused;  // rule -> contexts
  int scored = 0, best_drawable = 0, some_drawable = 0;
  for (const Context& ctx : contexts) {
    auto it = measured.find(ToString(ctx));
    if (it == measured.end() || it->second.seconds.empty()) continue;
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [cfg, sec] : it->second.seconds) order.push_back({sec, cfg});
    std::sort(order.begin(), order.end());
    const double best = order.front().first;
    std::string best_verdict;
    int window = 0, drawable = 0;
    for (size_t i = 0; i < order.size() && order[i].first <= best * (1 + within); ++i) {
      auto parsed = ParseFamilyConfig(order[i].second);
      const SamplingCheck* check = parsed.ok() ? check_of(parsed->family) : nullptr;
      const std::string verdict =
          !parsed.ok() ? "unreadable: " + parsed.status().message()
          : check == nullptr
              ? "no sampling domain"
              : check->Verdict(Candidate{parsed->family, ctx, parsed->params});
      if (i == 0) best_verdict = verdict;
      ++window;
      drawable += verdict.empty();
    }
    ++scored;
    best_drawable += best_verdict.empty();
    some_drawable += drawable > 0;
    if (!best_verdict.empty()) ++best_refused[best_verdict.substr(0, best_verdict.find(' '))];
    std::printf("%-64s %-10s %3d of %3d within %.0f%% drawable  best %s: %s\n",
                ToString(ctx).c_str(), best_verdict.empty() ? "drawn" : "REFUSED",
                drawable, window, 100 * within, order.front().second.c_str(),
                best_verdict.empty() ? "a campaign draws it" : best_verdict.c_str());
  }
  std::printf("# %d contexts (%s): the fastest measured configuration drawable by a "
              "campaign on %d; some configuration within %.0f%% of it on %d\n",
              scored, profile.name.c_str(), best_drawable, 100 * within, some_drawable);
  for (const auto& [rule, n] : best_refused)
    std::printf("# the fastest refused by %s: %d\n", rule.c_str(), n);
  return 0;
}

}  // namespace
}  // namespace blocktune

int main(int argc, char** argv) {
  using namespace blocktune;
  ConfigureCpuInference(0);
  CLI::App app{"the surrogates against an oracle of measurements"};
  app.require_subcommand(1);
  std::string contexts_path, dtype_text, out, dump;
  std::vector<std::string> data, model_files, results, top_results;
  int count = 2000, k = 10;
  double risk = kEnsembleRisk;
  uint64_t seed = 1;
  auto* plan = app.add_subcommand("plan", "draw the configurations to measure");
  plan->add_option("--data", data, "training datasets (refuse their contexts)");
  plan->add_option("--count", count, "configurations per context")
      ->check(CLI::Range(1, 1000000));
  plan->add_option("--seed", seed, "draw seed");
  plan->add_option("--out", out)->required();
  auto* top = app.add_subcommand("top", "the query path's top k over the range");
  top->add_option("--k", k)->check(CLI::Range(1, 100));
  top->add_option("--out", out)->required();
  auto* eval = app.add_subcommand("eval", "score the models");
  eval->add_option("--results", results, "oracle_run output of the plan")->required();
  eval->add_option("--top-results", top_results, "oracle_run output of top");
  eval->add_option("--k", k)->check(CLI::Range(1, 100));
  eval->add_option("--dump", dump, "every measured configuration with predictions (TSV)");
  std::string profile_name = "h100";
  double within = 0.05;
  auto* coverage = app.add_subcommand(
      "coverage", "whether campaigns could draw each context's fastest measured configurations");
  coverage->add_option("--contexts", contexts_path, "one context per line")->required();
  coverage->add_option("--dtype", dtype_text, "every context's precision");
  coverage->add_option("--results", results, "measured configurations (oracle_run format)")
      ->required();
  coverage->add_option("--device-profile", profile_name,
                       "the sampling rules' device: h100, h200, a100 or v100")
      ->capture_default_str();
  coverage->add_option("--within", within, "also check those this much slower than the best")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  for (auto* c : {plan, top, eval}) {
    c->add_option("--contexts", contexts_path, "one context per line")->required();
    c->add_option("--dtype", dtype_text, "every context's precision");
    c->add_option("--models", model_files, "datasets with models")->required();
    c->add_option("--risk", risk,
                  "the members' spread an ensemble's ranking charges, in "
                  "standard deviations of ln(flop/s) (the query path's "
                  "kEnsembleRisk unless given; 0 ranks by the mean)")
        ->check(CLI::Range(0.0, 10.0));
  }
  CLI11_PARSE(app, argc, argv);

  std::optional<DType> dtype;
  if (!bench::ParseDTypeFlag(dtype_text, &dtype)) return 2;
  auto contexts = ReadContexts(contexts_path, dtype);
  if (!contexts.ok()) {
    std::fprintf(stderr, "%s\n", contexts.status().ToString().c_str());
    return 2;
  }
  if (*coverage) {
    auto profile = ProfileByName(profile_name);
    if (!profile.ok()) {
      std::fprintf(stderr, "--device-profile: %s\n", profile.status().ToString().c_str());
      return 2;
    }
    return Coverage(*contexts, results, *profile, within);
  }
  auto models = ReadModels(model_files, risk);
  if (!models.ok()) {
    std::fprintf(stderr, "%s\n", models.status().ToString().c_str());
    return 2;
  }
  if (*plan) return Plan(*contexts, *models, data, count, seed, out);
  if (*top) return Top(*contexts, *models, k, out);
  return Eval(*contexts, *models, results, top_results, k, dump);
}
