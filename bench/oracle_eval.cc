// The oracle evaluation of issue 6, in three steps:
//
//   oracle_eval plan --contexts bench/oracle/contexts.txt --data D.json.gz...
//       --count 2000 --out plan.txt
//     Each context's search range (the x_B values of the training data, the
//     hardware rules), checked absent from the training data; up to
//     --count block shapes per context drawn uniformly without replacement.
//   oracle_run (on the GPU host) measures the plan.
//   oracle_eval top --models M.json.gz --contexts ... --k 10 --out top.txt
//     The surrogate's top k over the whole range, to be measured too.
//   oracle_eval eval --models M.json.gz --results R.tsv...
//     Per context: the measured speed of the model's top-1 (and the best of
//     its top 10) over the best measured speed, over the measured set and
//     over the whole range.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "models/search.h"
#include "models/train.h"
#include "proto/dataset_file.h"
#include "server/record_convert.h"
#include "server/surrogates.h"

namespace blocktune {
namespace {

StatusOr<std::vector<Context>> ReadContexts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::vector<Context> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    BT_ASSIGN_OR_RETURN(Context c, ContextFromString(line));
    out.push_back(c);
  }
  return out;
}

struct Models {
  std::map<Op, ModelRecord> newest;
};

StatusOr<Models> ReadModels(const std::vector<std::string>& paths) {
  Models m;
  for (const std::string& p : paths) {
    BT_ASSIGN_OR_RETURN(v1::Dataset d, ReadDatasetFile(p));
    for (int i = 0; i < d.models_size(); ++i) {
      BT_ASSIGN_OR_RETURN(ModelRecord r, FromProto(d.models(i), "models"));
      r.id = d.models(i).id();
      auto it = m.newest.find(r.op);
      if (it == m.newest.end() || r.created_unix >= it->second.created_unix)
        m.newest[r.op] = r;
    }
  }
  return m;
}

StatusOr<std::unique_ptr<BlockSearch>> SearchFor(const Models& models, Op op) {
  auto it = models.newest.find(op);
  if (it == models.newest.end())
    return NotFound("no " + std::string(ToString(op)) + " model in --models");
  const ModelRecord& r = it->second;
  BT_ASSIGN_OR_RETURN(Surrogate s, Surrogate::Load(r.op, r.architecture,
                                                   r.weights, r.normalization));
  BT_ASSIGN_OR_RETURN(DeviceProfile profile, ProfileForFingerprint(r.device));
  return std::make_unique<BlockSearch>(s, profile);
}

int Plan(const std::vector<Context>& contexts,
         const std::vector<std::string>& data, int count, uint64_t seed,
         const std::string& out_path) {
  std::set<std::string> trained_contexts;
  std::map<Op, SearchValues> values;
  std::map<Op, std::array<std::set<int64_t>, kBlockParameters>> seen;
  for (const std::string& p : data) {
    auto d = ReadDatasetFile(p);
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      return 2;
    }
    for (int i = 0; i < d->samples_size(); ++i) {
      auto s = FromProto(d->samples(i), "samples");
      if (!s.ok()) continue;
      trained_contexts.insert(ToString(s->context));
      const BlockShape xb = *s->kernel.block_shape();
      const int64_t v[] = {xb.ml, xb.nl, xb.ms, xb.ns, xb.u, xb.kg};
      for (int j = 0; j < kBlockParameters; ++j)
        seen[OpOf(s->context)][j].insert(v[j]);
    }
  }
  for (auto& [op, sets] : seen)
    for (int j = 0; j < kBlockParameters; ++j)
      values[op].emplace_back(sets[j].begin(), sets[j].end());
  int in_data = 0;
  for (const Context& ctx : contexts) {
    if (trained_contexts.count(ToString(ctx))) {
      std::fprintf(stderr, "%s is in the training data; choose another\n",
                   ToString(ctx).c_str());
      ++in_data;
    }
  }
  if (in_data > 0) return 2;
  const DeviceProfile profile = *ProfileByName("h100");
  std::ofstream out(out_path);
  Rng rng(seed);
  for (const Context& ctx : contexts) {
    const std::string text = ToString(ctx);
    SearchRange range(BlockShapeFamily(OpOf(ctx)), values[OpOf(ctx)], profile);
    std::vector<BlockShape> all;
    for (const Params& c : range.Candidates(ctx)) all.push_back(ToBlockShape(c));
    const size_t keep = std::min(all.size(), static_cast<size_t>(count));
    for (size_t i = 0; i < keep; ++i) {
      std::swap(all[i], all[i + rng.Below(static_cast<uint32_t>(all.size() - i))]);
      out << text << " | " << ToString(all[i]) << "\n";
    }
    std::printf("%-80s range %6zu  planned %5zu\n", text.c_str(), all.size(), keep);
  }
  return 0;
}

int Top(const std::vector<Context>& contexts, const Models& models, int k,
        const std::string& out_path) {
  std::ofstream out(out_path);
  for (const Context& ctx : contexts) {
    auto search = SearchFor(models, OpOf(ctx));
    if (!search.ok()) {
      std::fprintf(stderr, "%s\n", search.status().ToString().c_str());
      return 2;
    }
    for (const ScoredConfig& s : (*search)->Top(ctx, k))
      out << ToString(ctx) << " | " << ToString(ToBlockShape(s.params)) << "\n";
  }
  return 0;
}

struct Measured {
  std::map<std::string, double> seconds;  // block shape -> median, ok only
  int failed = 0;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int Eval(const std::vector<Context>& contexts, const Models& models,
         const std::vector<std::string>& plan_results,
         const std::vector<std::string>& top_results, int k) {
  // context -> measurements, for the planned set and for the model's picks.
  auto read = [](const std::vector<std::string>& paths,
                 std::map<std::string, Measured>* into) {
    for (const std::string& p : paths) {
      auto text = ReadMaybeGzip(p);
      if (!text.ok()) return false;
      size_t pos = 0;
      while (pos < text->size()) {
        size_t end = text->find('\n', pos);
        if (end == std::string::npos) end = text->size();
        std::string line = text->substr(pos, end - pos);
        pos = end + 1;
        std::vector<std::string> f;
        size_t a = 0;
        for (size_t b; (b = line.find('\t', a)) != std::string::npos; a = b + 1)
          f.push_back(line.substr(a, b - a));
        f.push_back(line.substr(a));
        if (f.size() < 4) continue;
        Measured& m = (*into)[f[0]];
        if (f[2] == "ok") m.seconds[f[1]] = std::stod(f[3]);
        else ++m.failed;
      }
    }
    return true;
  };
  std::map<std::string, Measured> planned, picked;
  if (!read(plan_results, &planned) || !read(top_results, &picked)) {
    std::fprintf(stderr, "cannot read the results\n");
    return 2;
  }
  std::printf("%-72s %5s %4s %8s | %7s %7s %6s | %7s %7s\n", "context",
              "ok", "fail", "best_TF", "set_t1", "set_t10", "rho", "full_t1",
              "full_t10");
  std::vector<double> set_t1, set_t10, full_t1, full_t10, rhos;
  for (const Context& ctx : contexts) {
    const std::string text = ToString(ctx);
    auto search = SearchFor(models, OpOf(ctx));
    if (!search.ok()) {
      std::fprintf(stderr, "%s\n", search.status().ToString().c_str());
      return 2;
    }
    const Measured& m = planned[text];
    if (m.seconds.empty()) {
      std::printf("%-72s not measured\n", text.c_str());
      continue;
    }
    std::vector<BlockShape> shapes;
    std::vector<double> measured;
    for (const auto& [xb_text, s] : m.seconds) {
      shapes.push_back(*BlockShapeFromString(xb_text));
      measured.push_back(s);
    }
    std::vector<Params> configs;
    for (const BlockShape& xb : shapes) configs.push_back(ToParams(xb));
    std::vector<double> predicted = (*search)->PredictSeconds(ctx, configs);
    std::vector<size_t> order(shapes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
    double best = *std::min_element(measured.begin(), measured.end());
    // Over the measured set.
    const double t1 = best / measured[order[0]];
    double b10 = INFINITY;
    for (size_t i = 0; i < order.size() && i < static_cast<size_t>(k); ++i)
      b10 = std::min(b10, measured[order[i]]);
    const double t10 = best / b10;
    std::vector<double> neg_pred, neg_meas;
    for (size_t i = 0; i < shapes.size(); ++i) {
      neg_pred.push_back(-predicted[i]);
      neg_meas.push_back(-measured[i]);
    }
    const double rho = Spearman(neg_pred, neg_meas);
    set_t1.push_back(t1);
    set_t10.push_back(t10);
    rhos.push_back(rho);
    // Over the whole range: the model's own top k, measured.
    std::string full = "      -       -";
    auto pk = picked.find(text);
    if (pk != picked.end() && !pk->second.seconds.empty()) {
      std::vector<ScoredConfig> top = (*search)->Top(ctx, k);
      double all_best = best;
      for (const auto& [x, s] : pk->second.seconds) all_best = std::min(all_best, s);
      auto it = pk->second.seconds.find(ToString(ToBlockShape(top[0].params)));
      double f10 = INFINITY;
      for (const ScoredConfig& s : top) {
        auto jt = pk->second.seconds.find(ToString(ToBlockShape(s.params)));
        if (jt != pk->second.seconds.end()) f10 = std::min(f10, jt->second);
      }
      const double f1 = it != pk->second.seconds.end() ? all_best / it->second : 0;
      full_t1.push_back(f1);
      full_t10.push_back(std::isfinite(f10) ? all_best / f10 : 0);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%7.3f %7.3f", f1, full_t10.back());
      full = buf;
    }
    std::printf("%-72s %5zu %4d %8.2f | %7.3f %7.3f %6.3f | %s\n", text.c_str(),
                m.seconds.size(), m.failed, Flops(ctx) / best / 1e12, t1, t10,
                rho, full.c_str());
  }
  std::printf("\nmedian over %zu contexts: set top-1 %.3f, set top-%d %.3f, "
              "Spearman %.3f",
              set_t1.size(), Median(set_t1), k, Median(set_t10), Median(rhos));
  if (!full_t1.empty()) {
    std::printf("; whole range (%zu contexts): top-1 %.3f, top-%d %.3f",
                full_t1.size(), Median(full_t1), k, Median(full_t10));
  }
  std::printf("\nminimum: set top-1 %.3f, set top-%d %.3f\n",
              set_t1.empty() ? 0 : *std::min_element(set_t1.begin(), set_t1.end()), k,
              set_t10.empty() ? 0 : *std::min_element(set_t10.begin(), set_t10.end()));
  return 0;
}

}  // namespace
}  // namespace blocktune

int main(int argc, char** argv) {
  using namespace blocktune;
  ConfigureCpuInference(0);
  CLI::App app{"the surrogate against an oracle of measurements"};
  app.require_subcommand(1);
  std::string contexts_path = "bench/oracle/contexts.txt", out;
  std::vector<std::string> data, model_files, results, top_results;
  int count = 2000, k = 10;
  uint64_t seed = 1;
  auto* plan = app.add_subcommand("plan", "draw the block shapes to measure");
  plan->add_option("--data", data, "training datasets")->required();
  plan->add_option("--count", count, "block shapes per context");
  plan->add_option("--seed", seed, "draw seed");
  plan->add_option("--out", out)->required();
  auto* top = app.add_subcommand("top", "the models' top k over the range");
  top->add_option("--models", model_files, "datasets with models")->required();
  top->add_option("--k", k);
  top->add_option("--out", out)->required();
  auto* eval = app.add_subcommand("eval", "score the models");
  eval->add_option("--models", model_files, "datasets with models")->required();
  eval->add_option("--results", results, "oracle_run output of the plan")->required();
  eval->add_option("--top-results", top_results, "oracle_run output of top");
  eval->add_option("--k", k);
  for (auto* c : {plan, top, eval})
    c->add_option("--contexts", contexts_path, "one context per line");
  CLI11_PARSE(app, argc, argv);

  auto contexts = ReadContexts(contexts_path);
  if (!contexts.ok()) {
    std::fprintf(stderr, "%s\n", contexts.status().ToString().c_str());
    return 2;
  }
  if (*plan) return Plan(*contexts, data, count, seed, out);
  auto models = ReadModels(model_files);
  if (!models.ok()) {
    std::fprintf(stderr, "%s\n", models.status().ToString().c_str());
    return 2;
  }
  if (*top) return Top(*contexts, *models, k, out);
  return Eval(*contexts, *models, results, top_results, k);
}
