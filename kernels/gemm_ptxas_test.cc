// Assembles 300 GEMM kernels sampled across the block-shape space with
// ptxas, for sm_90 and sm_80, and checks that every configuration
// CanImplement accepts assembles without spilling. Runs in CI (no GPU
// needed); skips with a message where no ptxas is installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "kernels/gemm_ptx.h"

namespace blocktune {
namespace {

std::string FindPtxas() {
  if (const char* env = std::getenv("BLOCKTUNE_PTXAS")) return env;
  for (const char* path : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (access(path, X_OK) == 0) return path;
  return "";
}

struct Assembled {
  bool ok = false;
  int registers = -1;
  int spill_bytes = 0;
  std::string log;
};

Assembled RunPtxas(const std::string& ptxas, const std::string& ptx_path,
                   const std::string& arch) {
  std::string cmd = ptxas + " -arch=" + arch + " -v " + ptx_path + " -o " +
                    ptx_path + "." + arch + ".cubin 2>&1";
  Assembled out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.log.append(buf, n);
  out.ok = pclose(pipe) == 0;
  // The main entry's report comes first in the log for blocktune_gemm.
  std::smatch m;
  std::regex used("Function properties for blocktune_gemm\\n.*?(\\d+) bytes "
                  "spill stores, (\\d+) bytes spill loads\\n.*?Used (\\d+) "
                  "registers");
  if (std::regex_search(out.log, m, used)) {
    out.spill_bytes = std::stoi(m[1]) + std::stoi(m[2]);
    out.registers = std::stoi(m[3]);
  }
  return out;
}

TEST(GemmPtxasTest, SampledKernelsAssembleWithoutSpills) {
  const std::string ptxas = FindPtxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set BLOCKTUNE_PTXAS)";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("blocktune-ptxas-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);

  // Powers of two as the sampler draws them, plus the K_G and layout axes.
  std::mt19937 rng(300);
  auto pow2 = [&](int lo, int hi) { return int64_t{1} << (lo + rng() % (hi - lo + 1)); };
  KernelLimits limits;
  struct Job {
    GemmContext ctx;
    BlockShape xb;
    std::string path;
  };
  std::vector<Job> jobs;
  int rejected = 0;
  while (jobs.size() < 300) {
    Job job;
    job.ctx.m = 1 + rng() % 8192;
    job.ctx.n = 1 + rng() % 8192;
    job.ctx.k = 1 + rng() % 8192;
    job.ctx.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
    job.ctx.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
    job.xb = {pow2(0, 8), pow2(0, 8), pow2(0, 4), pow2(0, 4), pow2(0, 5),
              pow2(0, 4)};
    if (!Validate(job.xb).ok()) continue;
    if (!CanImplement(job.ctx, job.xb, limits).ok()) {
      ++rejected;
      continue;
    }
    job.path = (dir / ("k" + std::to_string(jobs.size()) + ".ptx")).string();
    jobs.push_back(job);
  }

  std::mutex mu;
  std::vector<std::string> failures;
  int max_registers = 0;
  int64_t max_estimate_gap = INT64_MIN;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const Job& job = jobs[i];
      for (const char* arch : {"sm_90", "sm_80"}) {
        auto kernel = GenerateGemm(job.ctx, job.xb, arch);
        std::string what = ToString(job.xb) + " " +
                           std::string(ToString(job.ctx.layout_a)) +
                           std::string(ToString(job.ctx.layout_b)) + " " + arch;
        if (!kernel.ok()) {
          std::lock_guard lock(mu);
          failures.push_back(what + ": " + kernel.status().ToString());
          continue;
        }
        std::ofstream(job.path) << kernel->ptx;
        Assembled a = RunPtxas(ptxas, job.path, arch);
        std::lock_guard lock(mu);
        if (!a.ok || a.registers < 0) {
          failures.push_back(what + ": ptxas failed\n" + a.log.substr(0, 2000));
        } else if (a.spill_bytes > 0) {
          failures.push_back(what + ": spills " + std::to_string(a.spill_bytes) +
                             " bytes with " + std::to_string(a.registers) +
                             " registers");
        }
        max_registers = std::max(max_registers, a.registers);
        max_estimate_gap = std::max<int64_t>(
            max_estimate_gap, a.registers - GemmRegisterEstimate(job.xb));
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::filesystem::remove_all(dir);

  for (const auto& f : failures) ADD_FAILURE() << f;
  std::cout << jobs.size() << " kernels x 2 archs assembled with " << ptxas
            << "; " << rejected << " sampled shapes rejected by CanImplement; "
            << "max registers " << max_registers
            << ", max (registers - estimate) " << max_estimate_gap << "\n";
}

}  // namespace
}  // namespace blocktune
