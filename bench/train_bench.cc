// Trains the surrogate on a dataset file and prints its metrics, then the
// scoring speed of exhaustive search with it (thesis §4.3-4.4). One row per
// architecture, so the table of architectures comes from one run:
//
//   train_bench --data models/pretrained/h100-sxm/gemm-samples.json.gz \
//       --op gemm --hidden 64,128,192,256,192,128,64 --hidden 64,64 ...
#include <CLI/CLI.hpp>

#include <cstdio>
#include <thread>

#include "bench/timing.h"
#include "models/search.h"
#include "models/train.h"
#include "proto/dataset_file.h"
#include "server/record_convert.h"

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{"surrogate training and scoring benchmark"};
  std::string data, op_text = "gemm";
  std::vector<std::string> hiddens;
  int epochs = 400, limit = 0;
  uint64_t seed = 1;
  bool cuda = true;
  app.add_option("--data", data, "dataset file (.json or .json.gz)")->required();
  app.add_option("--op", op_text, "gemm or conv");
  app.add_option("--hidden", hiddens, "hidden layers, repeatable");
  app.add_option("--epochs", epochs, "at most this many epochs");
  app.add_option("--limit", limit, "use the first N ok samples (0: all)");
  app.add_option("--seed", seed, "training seed");
  app.add_option("--cuda", cuda, "train and score on the GPU when there is one");
  CLI11_PARSE(app, argc, argv);
  if (hiddens.empty()) hiddens.push_back(ArchitectureString(kDefaultHidden));

  ConfigureCpuInference(0);
  auto op = OpFromString(op_text, "--op");
  auto dataset = ReadDatasetFile(data);
  if (!op.ok() || !dataset.ok()) {
    std::fprintf(stderr, "%s\n", (op.ok() ? dataset.status() : op.status()).ToString().c_str());
    return 2;
  }
  std::vector<TrainingRow> rows;
  for (int i = 0; i < dataset->samples_size(); ++i) {
    auto s = FromProto(dataset->samples(i), "samples");
    if (!s.ok() || OpOf(s->context) != *op ||
        s->measurement.status != SampleStatus::kOk) {
      continue;
    }
    rows.push_back({s->context, s->kernel.params, s->measurement.median_s});
    if (limit > 0 && static_cast<int>(rows.size()) >= limit) break;
  }
  std::printf("# %s: %zu ok %s samples; libtorch %s; %u hardware threads\n",
              data.c_str(), rows.size(), op_text.c_str(),
              LibtorchVersion().c_str(), std::thread::hardware_concurrency());
  std::printf("%-28s %8s %7s %6s %9s %9s %9s %8s %12s\n", "hidden", "params",
              "epochs", "best", "val_mse", "train_mse", "spearman",
              "train_s", "score_cfg/s");
  const DeviceProfile profile = *ProfileByName("h100");
  for (const std::string& h : hiddens) {
    TrainOptions o;
    auto hidden = ParseArchitecture(h, "--hidden");
    if (!hidden.ok()) {
      std::fprintf(stderr, "%s\n", hidden.status().ToString().c_str());
      return 2;
    }
    o.hidden = *hidden;
    o.epochs = epochs;
    o.seed = seed;
    o.use_cuda = cuda;
    const double t0 = bench::NowSeconds();
    auto trained = Train(*op, rows, o);
    const double train_s = bench::NowSeconds() - t0;
    if (!trained.ok()) {
      std::fprintf(stderr, "%s\n", trained.status().ToString().c_str());
      return 1;
    }
    Surrogate model = trained->surrogate;
    model.UseCuda(cuda);
    BlockSearch search(model, profile);
    // Scoring speed: exhaustive searches over the first contexts of the data.
    int64_t scored = 0;
    double seconds = 0;
    for (size_t i = 0; i < rows.size() && i < 40; ++i) {
      SearchStats stats;
      search.Top(rows[i].ctx, 10, &stats);
      if (i == 0) continue;  // warm-up
      scored += stats.candidates;
      seconds += stats.seconds;
    }
    std::printf("%-28s %8lld %7d %6s %9.4f %9.4f %9.3f %8.1f %12.0f\n",
                h.c_str(), static_cast<long long>(model.parameters()),
                trained->epochs_run, std::to_string(trained->best_epoch).c_str(),
                trained->validation_mse, trained->train_mse,
                trained->spearman_within_context, train_s, scored / seconds);
    std::printf("  %s\n", trained->metrics_json.c_str());
    std::fflush(stdout);
  }
  return 0;
}
