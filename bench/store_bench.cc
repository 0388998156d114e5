// How fast the store takes a campaign's batches, and how fast a query is
// answered: from the store alone, and through gRPC to an in-process service
// on a unix socket. Prints one line per figure.
//
//   store_bench [--db-dir DIR]   (default: a temporary folder)
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "bench/timing.h"
#include "proto/convert.h"
#include "server/service.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

DeviceFingerprint H100() {
  DeviceFingerprint d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = int64_t{80} << 30;
  d.sm_clock_mhz = 1980;
  d.memory_clock_mhz = 2619;
  d.driver_version = d.cuda_version = "13.0";
  d.ptxas_version = "13.0.88";
  return d;
}

GemmContext Gemm(int64_t i) {
  GemmContext g;
  g.m = 64 * (1 + i % 64);
  g.n = 16 * (1 + (i / 64) % 32);
  g.k = 4096;
  return g;
}

BlockShape Shape(int64_t j) {
  BlockShape xb;
  xb.ml = 16 << (j % 4);
  xb.nl = 16 << ((j / 4) % 3);
  xb.ms = xb.ns = 4;
  xb.u = 8;
  xb.kg = 1 << (j % 3);
  return xb;
}

int Main(int argc, char** argv) {
  std::string dir = argc > 2 && std::string(argv[1]) == "--db-dir"
                        ? argv[2]
                        : std::filesystem::temp_directory_path() /
                              ("blocktune-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto opened = OpenSqliteStore(dir + "/bench.db");
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  TuningStore& store = **opened;

  // 1. Campaign-sized batches of samples.
  constexpr int kBatches = 100, kBatchSize = 1000;
  std::vector<double> commit_s;
  for (int b = 0; b < kBatches; ++b) {
    WriteBatch batch;
    for (int i = 0; i < kBatchSize; ++i) {
      SampleRecord s;
      s.device = H100();
      s.context = Gemm(b * kBatchSize + i);
      s.kernel = KernelConfig::OfBlockShape(Op::kGemm, Shape(i));
      s.measurement.median_s = 1e-4;
      s.measurement.repetitions = 50;
      batch.samples.push_back(s);
    }
    double t0 = bench::NowSeconds();
    if (!store.Commit(batch).ok()) return 1;
    commit_s.push_back(bench::NowSeconds() - t0);
  }
  double total = 0;
  for (double s : commit_s) total += s;
  std::printf("commit   %d batches x %d samples: median %.2f ms/batch, "
              "%.0f samples/s\n",
              kBatches, kBatchSize, bench::Quantile(commit_s, 0.5) * 1e3,
              kBatches * kBatchSize / total);

  // 2. 2048 contexts x 12 tuned answers each.
  constexpr int kContexts = 2048, kPerContext = 12;
  WriteBatch tuned;
  for (int i = 0; i < kContexts; ++i) {
    for (int j = 0; j < kPerContext; ++j) {
      TunedRecord t;
      t.device = H100();
      t.context = Gemm(i);
      t.kernel = KernelConfig::OfBlockShape(Op::kGemm, Shape(j));
      t.measured_s = 1e-4 * (1 + j);
      tuned.tuned.push_back(t);
    }
  }
  if (!store.Commit(tuned).ok()) return 1;

  std::mt19937 rng(1);
  constexpr int kQueries = 5000;
  std::vector<double> lookup_s;
  for (int q = 0; q < kQueries; ++q) {
    Context ctx = Gemm(rng() % kContexts);
    double t0 = bench::NowSeconds();
    auto found = store.FindTuned(ctx, "", 10);
    lookup_s.push_back(bench::NowSeconds() - t0);
    if (!found.ok() || found->size() != 10) return 1;
  }
  std::printf("lookup   store.FindTuned top-10 over %d answers: median %.1f "
              "us, p99 %.1f us\n",
              kContexts * kPerContext, bench::Quantile(lookup_s, 0.5) * 1e6,
              bench::Quantile(lookup_s, 0.99) * 1e6);

  // 3. The same through gRPC.
  TokenAuth no_auth;
  BlocktuneService service(&store, &no_auth);
  grpc::ServerBuilder builder;
  const std::string address = "unix:" + dir + "/bench.sock";
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  auto stub = v1::Blocktune::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::vector<double> rpc_s;
  for (int q = 0; q < kQueries; ++q) {
    v1::QueryRequest req;
    ToProto(Context(Gemm(rng() % kContexts)), req.mutable_context());
    req.set_top(10);
    v1::QueryResponse resp;
    grpc::ClientContext ctx;
    double t0 = bench::NowSeconds();
    grpc::Status s = stub->Query(&ctx, req, &resp);
    rpc_s.push_back(bench::NowSeconds() - t0);
    if (!s.ok() || resp.answers_size() != 10) return 1;
  }
  std::printf("query    gRPC Query top-10 over a unix socket: median %.1f us, "
              "p99 %.1f us\n",
              bench::Quantile(rpc_s, 0.5) * 1e6,
              bench::Quantile(rpc_s, 0.99) * 1e6);
  server->Shutdown();
  opened->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace blocktune

int main(int argc, char** argv) { return blocktune::Main(argc, argv); }
