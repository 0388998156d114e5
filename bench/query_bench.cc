// Query latency through gRPC on loopback (issue 6 targets), in one run:
// starts blocktuned on a fresh database, imports the shipped models, then
//   cold:   queries of contexts never asked before (exhaustive search over
//           the surrogate), one at a time: p50 / p99 / max latency;
//   cached: the same contexts again from several client threads: queries
//           per second, p50 / p99 latency.
//
//   query_bench --blocktuned build/server/blocktuned \
//       --models models/pretrained/h100-sxm/models.json.gz [--cold 40]
//       [--threads 4] [--seconds 5] [--score-device cpu]
#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include <csignal>

#include <atomic>
#include <cstdio>
#include <thread>

#include "bench/timing.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"
#include "tuner/sampler.h"

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{"query latency through gRPC on loopback"};
  std::string daemon_path, models, score_device = "cpu", listen = "127.0.0.1:0";
  int cold = 40, threads = 4;
  double seconds = 5;
  app.add_option("--blocktuned", daemon_path)->required();
  app.add_option("--models", models, "dataset with the models")->required();
  app.add_option("--cold", cold, "cold queries");
  app.add_option("--threads", threads, "client threads for cached queries");
  app.add_option("--seconds", seconds, "of cached queries");
  app.add_option("--score-device", score_device);
  CLI11_PARSE(app, argc, argv);

  testing::TempDir dir;
  testing::DaemonProcess d(daemon_path,
                           {"--listen", listen, "--db", dir.path() + "/q.db",
                            "--gpus", "none", "--score-device", score_device},
                           dir.path() + "/blocktuned.log");
  if (!d.ok()) {
    std::fprintf(stderr, "blocktuned did not start:\n%s\n", d.Log().c_str());
    return 1;
  }
  auto dataset = ReadDatasetFile(models);
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 2;
  }
  auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Blocktune::NewStub(channel);
  {
    v1::ImportResponse resp;
    grpc::ClientContext ctx;
    if (!ImportDataset(*stub, &ctx, *dataset, &resp).ok() || resp.models() == 0) {
      std::fprintf(stderr, "import failed\n");
      return 1;
    }
  }
  // Contexts: log-uniform GEMMs, every one new to the store.
  Rng rng(7);
  std::vector<v1::QueryRequest> queries;
  for (int i = 0; i < cold + 1; ++i) {
    v1::QueryRequest q;
    auto* g = q.mutable_context()->mutable_gemm();
    g->set_m(int64_t{64} << rng.Below(8));
    g->set_n(int64_t{16} << rng.Below(9));
    g->set_k(int64_t{64} << rng.Below(10));
    g->set_m(g->m() + rng.Below(64));  // rarely a power of two
    g->set_layout_a(v1::LAYOUT_N);
    g->set_layout_b(rng.Below(2) ? v1::LAYOUT_T : v1::LAYOUT_N);
    g->set_dtype(v1::DTYPE_FP32);
    queries.push_back(q);
  }
  auto ask = [&](const v1::QueryRequest& q, v1::QueryResponse* r) {
    grpc::ClientContext ctx;
    return stub->Query(&ctx, q, r);
  };
  // Cold: the first one warms the daemon's threads and is not counted.
  std::vector<double> cold_ms;
  int64_t candidates = 0;
  double search_ms = 0;
  for (int i = 0; i <= cold; ++i) {
    v1::QueryResponse r;
    const double t0 = bench::NowSeconds();
    grpc::Status s = ask(queries[i], &r);
    const double ms = 1e3 * (bench::NowSeconds() - t0);
    if (!s.ok() || r.source() != v1::QUERY_SOURCE_PREDICTED) {
      std::fprintf(stderr, "cold query %d: %s\n", i, s.error_message().c_str());
      return 1;
    }
    if (i == 0) continue;
    cold_ms.push_back(ms);
    candidates += r.candidates();
    search_ms += 1e3 * r.search_seconds();
  }
  // Cached, from several threads.
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(threads);
  std::vector<std::thread> pool;
  std::atomic<int> bad{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      size_t i = t;
      while (!stop) {
        v1::QueryResponse r;
        const double t0 = bench::NowSeconds();
        grpc::Status s = ask(queries[1 + i % cold], &r);
        lat[t].push_back(1e3 * (bench::NowSeconds() - t0));
        if (!s.ok() || r.source() != v1::QUERY_SOURCE_CACHED) ++bad;
        ++i;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : pool) t.join();
  std::vector<double> cached;
  for (auto& l : lat) cached.insert(cached.end(), l.begin(), l.end());
  const double qps = cached.size() / seconds;

  std::vector<double> c = cold_ms;
  const double cold_p50 = bench::Quantile(c, 0.5), cold_p99 = bench::Quantile(c, 0.99);
  const double cold_max = *std::max_element(cold_ms.begin(), cold_ms.end());
  const double p50 = bench::Quantile(cached, 0.5), p99 = bench::Quantile(cached, 0.99);
  std::printf("# blocktuned on %s, %u hardware threads, scoring on %s\n",
              d.address().c_str(), std::thread::hardware_concurrency(),
              score_device.c_str());
  std::printf("cold:   %d queries, %.0f block shapes each; latency p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms (search alone %.1f ms mean); "
              "target <= 100 ms: p50 ratio %.2f\n",
              cold, double(candidates) / cold, cold_p50, cold_p99, cold_max,
              search_ms / cold, cold_p50 / 100);
  std::printf("cached: %zu queries from %d threads in %.1f s = %.0f q/s; "
              "latency p50 %.3f ms, p99 %.3f ms; %d not cached; targets p99 <= 1 ms "
              "(ratio %.2f) at >= 5000 q/s (ratio %.2f)\n",
              cached.size(), threads, seconds, qps, p50, p99, bad.load(), p99 / 1.0,
              qps / 5000);
  d.Stop(SIGTERM);
  return 0;
}
