// Step one of the evaluation (issues 8 and 20): blocktune's answers for the
// evaluation's shapes, from its own query path. Starts blocktuned on a fresh
// database, imports the shipped models (and nothing measured, so every
// answer comes from the surrogate alone), and asks one BatchQuery for the
// top --top configurations of every shape, over every family that
// implements its precision. bench/kernels/eval_bench times the plan on the
// GPU.
//
//   eval_plan --blocktuned build/server/blocktuned
//       --models models/pretrained/h100-sxm/models-gemm-bf16.json.gz
//       [--models ...] --shapes bench/eval/shapes.txt [--dtype bf16]
//       --out plan.tsv [--top 10] [--family-top 3 --family-out F.tsv]
// A shapes line: "group | context" (kernels ToString form); --dtype sets
// every context's precision.
// A plan line: group \t context \t rank \t configuration \t predicted
// seconds, the configuration as "gemm.mma v3 bm=128 bn=128 ...".
// --family-top N also asks each family with a model for its own top N of
// every shape (a query with --family), written to --family-out in the
// plan's form: candidates that eval_bench --extra times beside the top 10,
// so that another ranking over the families (one that keeps a place for
// each family's best) can be scored offline on the same measurements.
#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <variant>

#include "bench/flags.h"
#include "bench/timing.h"
#include "kernels/family.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"

namespace {

// "gemm.mma v3 bm=128 bn=128 ...": what eval_bench reads back.
std::string ConfigText(const blocktune::v1::KernelConfig& k) {
  std::string out = k.family() + " v" + std::to_string(k.generator_version());
  for (const blocktune::v1::ConfigParam& p : k.params())
    out += " " + p.name() + "=" + std::to_string(p.value());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{"blocktune's answers for the evaluation's shapes"};
  std::string daemon_path, shapes_path, out_path, dtype_text;
  std::vector<std::string> models;
  int top = 10;
  app.add_option("--blocktuned", daemon_path)->required();
  app.add_option("--models", models, "datasets with the models")->required();
  app.add_option("--dtype", dtype_text, "every context's precision");
  app.add_option("--shapes", shapes_path, "family | context lines")->required();
  app.add_option("--out", out_path, "the plan")->required();
  app.add_option("--top", top, "answers per shape")->check(CLI::Range(1, 100));
  int family_top = 0;
  std::string family_out;
  app.add_option("--family-top", family_top, "each family's answers per shape")
      ->check(CLI::Range(0, 100));
  app.add_option("--family-out", family_out, "where --family-top's go");
  std::string risk;
  app.add_option("--ensemble-risk", risk,
                 "blocktuned --ensemble-risk (default: the daemon's)");
  CLI11_PARSE(app, argc, argv);
  if (family_top > 0 && family_out.empty()) {
    std::fprintf(stderr, "--family-top %d: where to? (--family-out)\n", family_top);
    return 2;
  }
  std::optional<DType> dtype;
  if (!bench::ParseDTypeFlag(dtype_text, &dtype)) return 2;

  std::vector<std::string> families;
  v1::BatchQueryRequest batch, family_batch;
  std::vector<std::string> family_group;  // of family_batch's queries
  {
    std::ifstream in(shapes_path);
    if (!in) {
      std::fprintf(stderr, "cannot read --shapes %s\n", shapes_path.c_str());
      return 2;
    }
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
      if (line.empty() || line[0] == '#') continue;
      const size_t bar = line.find(" | ");
      auto ctx = bar == std::string::npos
                     ? StatusOr<Context>(
                           InvalidArgument("expected 'family | context'"))
                     : ContextFromString(line.substr(bar + 3));
      if (!ctx.ok()) {
        std::fprintf(stderr, "%s:%d: %s\n", shapes_path.c_str(), line_no,
                     ctx.status().ToString().c_str());
        return 2;
      }
      families.push_back(line.substr(0, bar));
      if (dtype)
        std::visit([&](auto& c) { c.dtype = *dtype; }, *ctx);
      v1::QueryRequest* q = batch.add_queries();
      ToProto(*ctx, q->mutable_context());
      q->set_top(top);
      if (family_top == 0) continue;
      for (const KernelFamily* f : FamiliesFor(OpOf(*ctx), DTypeOf(*ctx))) {
        v1::QueryRequest* fq = family_batch.add_queries();
        ToProto(*ctx, fq->mutable_context());
        fq->set_top(family_top);
        fq->set_family(std::string(f->name()));
        family_group.push_back(families.back());
      }
    }
  }
  testing::TempDir dir;
  std::vector<std::string> daemon_args = {"--listen", "127.0.0.1:0", "--db",
                                          dir.path() + "/eval.db", "--gpus",
                                          "none"};
  if (!risk.empty()) {
    daemon_args.push_back("--ensemble-risk");
    daemon_args.push_back(risk);
  }
  testing::DaemonProcess d(daemon_path, daemon_args,
                           dir.path() + "/blocktuned.log");
  if (!d.ok()) {
    std::fprintf(stderr, "blocktuned did not start:\n%s\n", d.Log().c_str());
    return 1;
  }
  auto stub = v1::Blocktune::NewStub(
      grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  for (const std::string& path : models) {
    auto dataset = ReadDatasetFile(path);
    if (!dataset.ok()) {
      std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
      return 2;
    }
    dataset->clear_samples();
    v1::ImportResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = ImportDataset(*stub, &ctx, std::move(*dataset), &resp);
    if (!s.ok() || resp.models() == 0) {
      std::fprintf(stderr, "import %s: %s\n", path.c_str(),
                   s.ok() ? "no models" : s.error_message().c_str());
      return 1;
    }
  }
  v1::BatchQueryResponse resp;
  grpc::ClientContext ctx;
  const double t0 = bench::NowSeconds();
  grpc::Status s = stub->BatchQuery(&ctx, batch, &resp);
  const double seconds = bench::NowSeconds() - t0;
  if (!s.ok()) {
    std::fprintf(stderr, "BatchQuery: %s\n", s.error_message().c_str());
    return 1;
  }
  std::ofstream out(out_path);
  out << "# eval_plan";
  for (const std::string& m : models) out << " --models " << m;
  out << " --shapes " << shapes_path;
  if (dtype) out << " --dtype " << ToString(*dtype);
  out << " --top " << top << "\n";
  int failed = 0;
  for (int i = 0; i < resp.results_size(); ++i) {
    const v1::BatchQueryResult& r = resp.results(i);
    const std::string text =
        ToString(*FromProto(batch.queries(i).context(), "context"));
    // The database starts empty and holds no measurements: a cached answer
    // is the surrogate's, stored when a shape came up earlier in the batch.
    const v1::QuerySource source = r.response().source();
    if (r.code() != 0 || r.response().answers_size() == 0 ||
        (source != v1::QUERY_SOURCE_PREDICTED &&
         source != v1::QUERY_SOURCE_CACHED)) {
      std::fprintf(stderr, "%s: no predicted answer (%d: %s)\n", text.c_str(),
                   r.code(), r.message().c_str());
      ++failed;
      continue;
    }
    for (int j = 0; j < r.response().answers_size(); ++j) {
      const v1::TunedAnswer& a = r.response().answers(j);
      out << families[i] << "\t" << text << "\t" << j + 1 << "\t"
          << ConfigText(a.kernel()) << "\t" << a.predicted_seconds() << "\n";
    }
    std::printf(
        "%-12s %-80s %6lld configurations scored, top 1 %s (%.1f us "
        "predicted)\n",
        families[i].c_str(), text.c_str(),
        static_cast<long long>(r.response().candidates()),
        ConfigText(r.response().answers(0).kernel()).c_str(),
        r.response().answers(0).predicted_seconds() * 1e6);
  }
  std::printf(
      "# %d shapes answered in %.2f s through one BatchQuery; %d failed\n",
      resp.results_size() - failed, seconds, failed);
  if (family_top > 0) {
    // After the plan's batch, as a second query of a shape: its answers
    // come from the same models (a family without one answers nothing).
    v1::BatchQueryResponse fresp;
    grpc::ClientContext fctx;
    s = stub->BatchQuery(&fctx, family_batch, &fresp);
    if (!s.ok()) {
      std::fprintf(stderr, "BatchQuery (--family-top): %s\n",
                   s.error_message().c_str());
      return 1;
    }
    std::ofstream fout(family_out);
    fout << "# eval_plan --family-top " << family_top << " of " << out_path
         << "\n";
    int rows = 0;
    for (int i = 0; i < fresp.results_size(); ++i) {
      const v1::BatchQueryResult& r = fresp.results(i);
      if (r.code() != 0) continue;
      const std::string text =
          ToString(*FromProto(family_batch.queries(i).context(), "context"));
      for (int j = 0; j < r.response().answers_size(); ++j) {
        const v1::TunedAnswer& a = r.response().answers(j);
        fout << family_group[i] << "\t" << text << "\t" << j + 1 << "\t"
             << ConfigText(a.kernel()) << "\t" << a.predicted_seconds() << "\n";
        ++rows;
      }
    }
    std::printf("# --family-top %d: %d answers of %d family queries in %s\n",
                family_top, rows, family_batch.queries_size(),
                family_out.c_str());
  }
  d.Stop(SIGTERM);
  return failed == 0 ? 0 : 1;
}
