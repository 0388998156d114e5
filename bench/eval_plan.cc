// Step one of the thesis evaluation (issue 8): blocktune's answers for the
// evaluation's shapes, from its own query path. Starts blocktuned on a fresh
// database, imports the shipped models (and nothing measured, so every
// answer comes from the surrogate alone), and asks one BatchQuery for the
// top --top block shapes of every shape. bench/kernels/eval_bench times the
// plan on the GPU.
//
//   eval_plan --blocktuned build/server/blocktuned
//       --models models/pretrained/h100-sxm/models.json.gz
//       --shapes bench/eval/shapes.txt --out plan.tsv [--top 10]
// A shapes line: "family | context" (kernels ToString form).
// A plan line: family \t context \t rank \t block shape \t predicted seconds.
#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstdio>
#include <fstream>

#include "bench/timing.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{"blocktune's answers for the evaluation's shapes"};
  std::string daemon_path, models, shapes_path, out_path;
  int top = 10;
  app.add_option("--blocktuned", daemon_path)->required();
  app.add_option("--models", models, "dataset with the models")->required();
  app.add_option("--shapes", shapes_path, "family | context lines")->required();
  app.add_option("--out", out_path, "the plan")->required();
  app.add_option("--top", top, "answers per shape")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> families;
  v1::BatchQueryRequest batch;
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
      v1::QueryRequest* q = batch.add_queries();
      ToProto(*ctx, q->mutable_context());
      q->set_top(top);
    }
  }
  auto dataset = ReadDatasetFile(models);
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 2;
  }
  testing::TempDir dir;
  testing::DaemonProcess d(daemon_path,
                           {"--listen", "127.0.0.1:0", "--db",
                            dir.path() + "/eval.db", "--gpus", "none"},
                           dir.path() + "/blocktuned.log");
  if (!d.ok()) {
    std::fprintf(stderr, "blocktuned did not start:\n%s\n", d.Log().c_str());
    return 1;
  }
  auto stub = v1::Blocktune::NewStub(
      grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  {
    v1::Dataset models_only = *dataset;
    models_only.clear_samples();
    v1::ImportResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = ImportDataset(*stub, &ctx, std::move(models_only), &resp);
    if (!s.ok() || resp.models() == 0) {
      std::fprintf(stderr, "import: %s\n", s.error_message().c_str());
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
  out << "# eval_plan --models " << models << " --shapes " << shapes_path
      << " --top " << top << "\n";
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
          << ToString(*FromProto(a.block_shape(), "block_shape")) << "\t"
          << a.predicted_seconds() << "\n";
    }
    std::printf(
        "%-12s %-80s %6lld shapes scored, top 1 %s (%.1f us predicted)\n",
        families[i].c_str(), text.c_str(),
        static_cast<long long>(r.response().candidates()),
        ToString(
            *FromProto(r.response().answers(0).block_shape(), "block_shape"))
            .c_str(),
        r.response().answers(0).predicted_seconds() * 1e6);
  }
  std::printf(
      "# %d shapes answered in %.2f s through one BatchQuery; %d failed\n",
      resp.results_size() - failed, seconds, failed);
  d.Stop(SIGTERM);
  return failed == 0 ? 0 : 1;
}
