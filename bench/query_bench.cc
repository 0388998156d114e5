// Query latency and load through gRPC on loopback (issue 6 and 21 targets),
// in one run: starts blocktuned on a fresh database with fake GPUs, imports
// the shipped models, then
//   cold:   queries of contexts never asked before (exhaustive search over
//           the surrogate), one at a time: p50 / p99 / max latency;
//   cached: the same contexts again, for each --threads count of client
//           threads, first with the daemon idle, then while a campaign on
//           its fake GPUs writes samples into the same store: queries per
//           second, p50 / p99 / max latency, errors, and the daemon's RSS,
//           threads and CPU per query, so unbounded growth shows.
// The output is the results file: it names the command, the machine, the
// date and the load average.
//
//   query_bench --blocktuned build/server/blocktuned
//       --models models/pretrained/h100-sxm/models.json.gz [--cold 30]
//       [--threads 1,4,16,64] [--seconds 5] [--campaign both|off|on]
//       [--fake-gpus 2] [--fake-worker measure_us=2000,compile_us=1000]
#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/timing.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"
#include "tuner/sampler.h"

namespace blocktune {
namespace {

using Stub = v1::Blocktune::Stub;

std::unique_ptr<grpc::ClientContext> Ctx(double seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(int64_t(seconds * 1e6)));
  return ctx;
}

// The only use of the Import RPC: the models the queries are answered with.
Status ImportModels(Stub& stub, const std::string& path) {
  BT_ASSIGN_OR_RETURN(v1::Dataset dataset, ReadDatasetFile(path));
  v1::ImportResponse resp;
  grpc::Status s = ImportDataset(stub, Ctx(120).get(), std::move(dataset), &resp);
  if (!s.ok()) return Internal("import: " + s.error_message());
  if (resp.models() == 0) return Internal("import: " + path + " has no model");
  return OkStatus();
}

// What /proc says about a process: resident memory and threads now.
struct ProcessState {
  double rss_mb = 0, peak_rss_mb = 0;
  int threads = 0;
  double cpu_s = 0;  // user + system
};
ProcessState ReadProcess(pid_t pid) {
  ProcessState p;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") status >> p.rss_mb, p.rss_mb /= 1024;
    if (key == "VmHWM:") status >> p.peak_rss_mb, p.peak_rss_mb /= 1024;
    if (key == "Threads:") status >> p.threads;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  // Fields after the parenthesised name: state is 3rd, utime 14th, stime 15th.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::vector<std::string> f(13);
  for (auto& x : f) rest >> x;
  const double tick = double(sysconf(_SC_CLK_TCK));
  p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / tick;
  return p;
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  in >> a >> b >> c;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", a, b, c);
  return buf;
}

std::string Machine() {
  utsname u{};
  uname(&u);
  std::string cpu = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  return std::string(u.nodename) + ", " + cpu + ", " +
         std::to_string(std::thread::hardware_concurrency()) +
         " hardware threads, " + u.sysname + " " + u.release;
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

// One row of the table: `threads` clients asking cached contexts for
// `seconds` after a warm-up.
struct Row {
  bool campaign = false;
  int threads = 0;
  size_t queries = 0;
  double qps = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
  int errors = 0, not_cached = 0;
  ProcessState before, after;
  double client_cpu_us = 0, daemon_cpu_us = 0;  // per query
  double samples_per_s = -1;                    // campaign rows only
};

struct Campaigning {
  int64_t id = 0;
  int64_t Samples(Stub& stub) const {
    v1::ListCampaignsResponse resp;
    if (!stub.ListCampaigns(Ctx(10).get(), {}, &resp).ok()) return -1;
    for (const auto& c : resp.campaigns()) {
      if (c.id() != id) continue;
      if (c.state() != v1::CAMPAIGN_STATE_RUNNING) return -1;
      return c.samples_ok() + c.samples_failed();
    }
    return -1;
  }
};

Row RunRow(const std::vector<std::unique_ptr<Stub>>& stubs,
           const std::vector<v1::QueryRequest>& queries, int threads,
           double seconds, pid_t daemon, const Campaigning* campaign) {
  Row row;
  row.campaign = campaign != nullptr;
  row.threads = threads;
  const double warm_up = 0.5;
  std::atomic<bool> stop{false};
  const double start = bench::NowSeconds() + warm_up;
  std::vector<std::vector<double>> lat(threads);
  std::vector<int> errors(threads), not_cached(threads);
  std::vector<std::string> first_error(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    lat[t].reserve(size_t(seconds * 20000 / threads) + 1024);
    pool.emplace_back([&, t] {
      Stub& stub = *stubs[t % stubs.size()];
      size_t i = t;
      while (!stop) {
        v1::QueryResponse r;
        const double t0 = bench::NowSeconds();
        grpc::Status s = stub.Query(Ctx(10).get(), queries[i++ % queries.size()], &r);
        const double t1 = bench::NowSeconds();
        if (t0 < start) continue;  // warm-up
        lat[t].push_back(1e3 * (t1 - t0));
        if (!s.ok()) {
          if (errors[t]++ == 0) first_error[t] = s.error_message();
        } else if (r.source() != v1::QUERY_SOURCE_CACHED) {
          ++not_cached[t];
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warm_up));
  row.before = ReadProcess(daemon);
  const double cpu0 = SelfCpuSeconds();
  const int64_t samples0 = campaign ? campaign->Samples(*stubs[0]) : 0;
  const double t0 = bench::NowSeconds();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  const double elapsed = bench::NowSeconds() - t0;
  row.after = ReadProcess(daemon);
  const double client_cpu = SelfCpuSeconds() - cpu0;
  if (campaign) {
    const int64_t samples1 = campaign->Samples(*stubs[0]);
    if (samples0 >= 0 && samples1 >= 0)
      row.samples_per_s = (samples1 - samples0) / elapsed;
  }
  for (auto& t : pool) t.join();
  std::vector<double> all;
  for (int t = 0; t < threads; ++t) {
    all.insert(all.end(), lat[t].begin(), lat[t].end());
    row.errors += errors[t];
    row.not_cached += not_cached[t];
    if (!first_error[t].empty())
      std::fprintf(stderr, "thread %d: first error: %s\n", t, first_error[t].c_str());
  }
  row.queries = all.size();
  row.qps = all.size() / elapsed;
  if (!all.empty()) {
    row.max_ms = *std::max_element(all.begin(), all.end());
    row.p50_ms = bench::Quantile(all, 0.5);
    row.p99_ms = bench::Quantile(all, 0.99);
    row.client_cpu_us = 1e6 * client_cpu / all.size();
    row.daemon_cpu_us = 1e6 * (row.after.cpu_s - row.before.cpu_s) / all.size();
  }
  return row;
}

void PrintRow(const Row& r) {
  char samples[32] = "-";
  if (r.campaign) {
    if (r.samples_per_s >= 0) std::snprintf(samples, sizeof(samples), "%.0f", r.samples_per_s);
    else std::snprintf(samples, sizeof(samples), "stopped");
  }
  std::printf("| %-8s | %7d | %9.0f | %6.3f | %6.3f | %6.1f | %6d | %10d | "
              "%6.1f -> %6.1f | %7d | %8.0f | %8.0f | %9s |\n",
              r.campaign ? "writing" : "idle", r.threads, r.qps, r.p50_ms,
              r.p99_ms, r.max_ms, r.errors, r.not_cached, r.before.rss_mb,
              r.after.rss_mb, r.after.threads, r.client_cpu_us,
              r.daemon_cpu_us, samples);
  std::fflush(stdout);
}

}  // namespace
}  // namespace blocktune

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{"query latency and load through gRPC on loopback"};
  std::string daemon_path, models, score_device = "cpu", listen = "127.0.0.1:0";
  std::string campaign_mode = "both",
              fake_worker = "measure_us=2000,compile_us=1000";
  int cold = 30, fake_gpus = 2, channels = 1;
  std::vector<int> thread_counts = {1, 4, 16, 64};
  double seconds = 5;
  app.add_option("--blocktuned", daemon_path)->required();
  app.add_option("--models", models, "dataset with the models")->required();
  app.add_option("--cold", cold, "cold queries (their contexts are the cached ones)");
  app.add_option("--threads", thread_counts, "client thread counts, one row each")
      ->delimiter(',');
  app.add_option("--seconds", seconds, "each row measures this long");
  app.add_option("--campaign", campaign_mode, "rows without (off), with (on) a "
                 "campaign writing into the store, or both")
      ->check(CLI::IsMember({"both", "off", "on"}));
  app.add_option("--fake-gpus", fake_gpus, "the campaign's fake GPUs");
  app.add_option("--fake-worker", fake_worker, "their behaviour (tuner/worker.h)");
  app.add_option("--channels", channels, "client channels (connections); "
                 "thread t uses channel t % channels");
  app.add_option("--listen", listen, "the daemon's address: 127.0.0.1:0 (TCP "
                 "loopback, a free port) or unix:PATH");
  app.add_option("--score-device", score_device);
  CLI11_PARSE(app, argc, argv);
  if (cold < 1 || channels < 1 || fake_gpus < 1) {
    std::fprintf(stderr, "--cold, --channels and --fake-gpus must be >= 1\n");
    return 2;
  }

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  const std::string load_before = LoadAverage();

  testing::TempDir dir;
  testing::DaemonProcess d(
      daemon_path,
      {"--listen", listen, "--db", dir.path() + "/q.db", "--gpus", "none",
       "--score-device", score_device, "--fake-gpus", std::to_string(fake_gpus),
       "--fake-worker", fake_worker},
      dir.path() + "/blocktuned.log");
  if (!d.ok()) {
    std::fprintf(stderr, "blocktuned did not start:\n%s\n", d.Log().c_str());
    return 1;
  }
  // Separate connections need separate subchannel pools.
  std::vector<std::unique_ptr<v1::Blocktune::Stub>> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    if (channels > 1) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stubs.push_back(v1::Blocktune::NewStub(grpc::CreateCustomChannel(
        d.address(), grpc::InsecureChannelCredentials(), args)));
  }
  v1::Blocktune::Stub& stub = *stubs[0];
  if (Status s = ImportModels(stub, models); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
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
  // Cold: the first one warms the daemon's threads and is not counted.
  std::vector<double> cold_ms;
  int64_t candidates = 0;
  double search_ms = 0;
  for (int i = 0; i <= cold; ++i) {
    v1::QueryResponse r;
    const double t0 = bench::NowSeconds();
    grpc::Status s = stub.Query(Ctx(60).get(), queries[i], &r);
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
  queries.erase(queries.begin());  // cached rows ask the cold phase's contexts
  const ProcessState at_start = ReadProcess(d.pid());

  std::printf("# query_bench, %s; %s\n", UtcNow().c_str(), Machine().c_str());
  std::printf("# command: %s\n", command.c_str());
  std::printf("# blocktuned on %s, scoring on %s; %d fake GPU(s) "
              "(%s); %d client channel(s); load average at start %s\n",
              d.address().c_str(), score_device.c_str(), fake_gpus,
              fake_worker.c_str(), channels, load_before.c_str());
  std::vector<double> c = cold_ms;
  std::printf("cold:   %d queries, %.0f block shapes each; latency p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms (search alone %.1f ms mean)\n",
              cold, double(candidates) / cold, bench::Quantile(c, 0.5),
              bench::Quantile(c, 0.99),
              *std::max_element(cold_ms.begin(), cold_ms.end()), search_ms / cold);
  std::printf("cached: %d contexts asked round-robin, %.1f s per row after 0.5 s "
              "of warm-up; daemon RSS %.1f MB before the first row\n\n",
              cold, seconds, at_start.rss_mb);
  std::printf("| campaign | clients | queries/s | p50 ms | p99 ms | max ms | errors "
              "| not cached | daemon RSS MB   | threads | client CPU us/q | daemon "
              "CPU us/q | samples/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);

  std::vector<Row> rows;
  auto run_rows = [&](const Campaigning* campaign) {
    for (int threads : thread_counts) {
      rows.push_back(RunRow(stubs, queries, threads, seconds, d.pid(), campaign));
      PrintRow(rows.back());
    }
  };
  if (campaign_mode != "on") run_rows(nullptr);
  if (campaign_mode != "off") {
    v1::StartCampaignRequest req;
    req.mutable_spec()->set_op(v1::OP_GEMM);
    req.mutable_spec()->set_dtype(v1::DTYPE_FP32);
    req.mutable_spec()->set_max_samples(1000000000);  // the most allowed; cancelled below
    req.mutable_spec()->set_seed(11);
    req.mutable_spec()->set_label("query_bench");
    v1::StartCampaignResponse resp;
    grpc::Status s = stub.StartCampaign(Ctx(30).get(), req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "campaign: %s\n", s.error_message().c_str());
      return 1;
    }
    Campaigning campaign{resp.campaign().id()};
    // Rows start once the campaign commits samples.
    const double until = bench::NowSeconds() + 30;
    while (campaign.Samples(stub) <= 0 && bench::NowSeconds() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    run_rows(&campaign);
    const int64_t samples = campaign.Samples(stub);
    v1::CancelCampaignResponse cancelled;
    v1::CancelCampaignRequest cancel;
    cancel.set_id(campaign.id);
    stub.CancelCampaign(Ctx(30).get(), cancel, &cancelled);
    std::printf("\ncampaign %lld: %lld samples stored while the rows ran%s, then "
                "cancelled\n", static_cast<long long>(campaign.id),
                static_cast<long long>(samples),
                samples < 0 ? " (it had stopped before the last row: see the log)" : "");
  }
  const ProcessState at_end = ReadProcess(d.pid());
  std::printf("daemon: RSS %.1f MB at the end (%.1f MB before the first row, "
              "peak %.1f MB), %d threads\n",
              at_end.rss_mb, at_start.rss_mb, at_end.peak_rss_mb, at_end.threads);
  for (const Row& r : rows) {
    if (r.campaign || r.threads != 4) continue;
    std::printf("target at 4 clients, idle: >= 5000 queries/s (ratio %.2f), "
                "p99 <= 1 ms (ratio %.2f)\n", r.qps / 5000, r.p99_ms / 1.0);
  }
  int errors = 0;
  for (const Row& r : rows) errors += r.errors + r.not_cached;
  std::printf("errors and uncached answers over all rows: %d; load average at "
              "the end %s\n", errors, LoadAverage().c_str());
  d.Stop(SIGTERM);
  return errors == 0 ? 0 : 1;
}
