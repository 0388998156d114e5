// Benchmarks a list of (context, block shape) pairs on GPU 0 through a
// blocktune-worker process (the campaign measurement protocol) and appends
// one line per result to --out, as results arrive, so a run cut short keeps
// everything measured so far and --resume carries on from there.
//
//   oracle_run --list plan.txt --out oracle.tsv --worker build/server/blocktune-worker
//
// A list line: "<context> | <family> <params>" (Candidate::ToString, as
// oracle_eval plan writes it).
// An output line: context \t family params \t status \t median_s \t spread
//   \t repetitions \t sm_clock_mhz \t verified \t error
// Needs no gRPC, SQLite or libtorch, so it is built here and carried to a
// GPU host.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "server/bench_list.h"

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{"benchmark a list of (context, block shape) on GPU 0"};
  std::string list_path, out_path, worker;
  double timeout = 20;
  bool resume = false;
  app.add_option("--list", list_path, "candidates, one per line")->required();
  app.add_option("--out", out_path, "results (appended)")->required();
  app.add_option("--worker", worker, "blocktune-worker")->required();
  app.add_option("--kernel-timeout", timeout, "seconds per sample");
  app.add_flag("--resume", resume, "skip candidates already in --out");
  CLI11_PARSE(app, argc, argv);

  std::set<std::string> done;
  if (resume) {
    std::ifstream in(out_path);
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find('\t');
      const size_t b = line.find('\t', a + 1);
      if (b != std::string::npos) done.insert(line.substr(0, b));
    }
  }
  std::vector<Candidate> list;
  std::vector<std::string> keys;
  std::ifstream in(list_path);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find(" | ");
    if (bar == std::string::npos) {
      std::fprintf(stderr, "%s:%d: expected '<context> | <family> <params>'\n",
                   list_path.c_str(), line_no);
      return 2;
    }
    auto ctx = ContextFromString(line.substr(0, bar));
    const std::string config = line.substr(bar + 3);
    auto parsed = ParseFamilyConfig(config);
    if (!ctx.ok() || !parsed.ok()) {
      std::fprintf(stderr, "%s:%d: %s\n", list_path.c_str(), line_no,
                   (ctx.ok() ? parsed.status() : ctx.status()).ToString().c_str());
      return 2;
    }
    const KernelFamily* family = parsed->family;
    Candidate c{family, *ctx, parsed->params};
    std::string key = ToString(*ctx) + "\t" + std::string(family->name()) +
                      " " + family->Format(parsed->params);
    if (done.count(key)) continue;
    list.push_back(c);
    keys.push_back(std::move(key));
  }
  std::fprintf(stderr, "oracle_run: %zu to measure (%zu already done)\n",
               list.size(), done.size());
  if (list.empty()) return 0;

  FILE* out = std::fopen(out_path.c_str(), "a");
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
    return 2;
  }
  BenchListOptions o;
  o.worker_path = worker;
  o.kernel_timeout_s = timeout;
  size_t n = 0;
  auto result = BenchmarkList(o, list, [&](size_t i, const Measurement& m,
                                           bool verified) {
    std::string error = m.error;
    for (char& c : error)
      if (c == '\t' || c == '\n') c = ' ';
    std::fprintf(out, "%s\t%s\t%.9g\t%.4g\t%lld\t%.0f\t%d\t%s\n",
                 keys[i].c_str(), std::string(ToString(m.status)).c_str(),
                 m.median_s, m.spread, static_cast<long long>(m.repetitions),
                 m.sm_clock_mhz, verified ? 1 : 0, error.substr(0, 200).c_str());
    std::fflush(out);
    if (++n % 500 == 0) std::fprintf(stderr, "oracle_run: %zu/%zu\n", n, list.size());
  });
  std::fclose(out);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "oracle_run: %zu measured on %s, %d worker restarts\n",
               n, result->device.name.c_str(), result->restarts);
  return 0;
}
