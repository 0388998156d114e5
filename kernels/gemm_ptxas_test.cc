// Assembles 300 GEMM and 300 convolution kernels sampled across the
// block-shape and context spaces with ptxas, for sm_90 and sm_80, and
// checks that every configuration CanImplement accepts assembles without
// spilling. Runs in CI (no GPU
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
                   const std::string& arch, const std::string& entry) {
  std::string cmd = ptxas + " -arch=" + arch + " -v " + ptx_path + " -o " +
                    ptx_path + "." + arch + ".cubin 2>&1";
  Assembled out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.log.append(buf, n);
  out.ok = pclose(pipe) == 0;
  // The main entry's report.
  std::smatch m;
  std::regex used("Function properties for " + entry +
                  "\\n.*?(\\d+) bytes "
                  "spill stores, (\\d+) bytes spill loads\\n.*?Used (\\d+) "
                  "registers");
  if (std::regex_search(out.log, m, used)) {
    out.spill_bytes = std::stoi(m[1]) + std::stoi(m[2]);
    out.registers = std::stoi(m[3]);
  }
  return out;
}

// Powers of two as the sampler draws them, plus the K_G axis.
BlockShape SampleBlockShape(std::mt19937& rng) {
  auto pow2 = [&](int lo, int hi) {
    return int64_t{1} << (lo + rng() % (hi - lo + 1));
  };
  return {pow2(0, 8), pow2(0, 8), pow2(0, 4),
          pow2(0, 4), pow2(0, 5), pow2(0, 4)};
}

Context SampleGemm(std::mt19937& rng) {
  GemmContext g;
  g.m = 1 + rng() % 8192;
  g.n = 1 + rng() % 8192;
  g.k = 1 + rng() % 8192;
  g.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
  g.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
  return g;
}

Context SampleConv(std::mt19937& rng) {
  ConvContext c;
  c.n = 1 + rng() % 32;
  c.h = c.w = 7 << (rng() % 5);
  c.c = int64_t{1} << (rng() % 11);
  c.k = int64_t{1} << (rng() % 11);
  c.r = c.s = 1 + 2 * (rng() % 4);
  c.pad_h = c.pad_w = rng() % (c.r / 2 + 1);
  c.stride_h = c.stride_w = 1 + rng() % 2;
  c.dilation_h = c.dilation_w = 1 + rng() % 2;
  if (c.P() < 1 || c.Q() < 1) c.dilation_h = c.dilation_w = 1;
  if (c.P() < 1 || c.Q() < 1) c.r = c.s = 1;
  return c;
}

void AssembleSampled(Op op, uint32_t seed) {
  const std::string ptxas = FindPtxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set BLOCKTUNE_PTXAS)";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("blocktune-ptxas-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);

  std::mt19937 rng(seed);
  KernelLimits limits;
  struct Job {
    Context ctx;
    BlockShape xb;
    std::string path;
  };
  std::vector<Job> jobs;
  int rejected = 0;
  while (jobs.size() < 300) {
    Job job;
    job.ctx = op == Op::kGemm ? SampleGemm(rng) : SampleConv(rng);
    job.xb = SampleBlockShape(rng);
    if (!Validate(job.ctx).ok() || !Validate(job.xb).ok()) continue;
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
        auto kernel = GenerateKernel(job.ctx, job.xb, arch);
        std::string what =
            ToString(job.xb) + " " + ToString(job.ctx) + " " + arch;
        if (!kernel.ok()) {
          std::lock_guard lock(mu);
          failures.push_back(what + ": " + kernel.status().ToString());
          continue;
        }
        std::ofstream(job.path) << kernel->ptx;
        Assembled a = RunPtxas(ptxas, job.path, arch, kernel->entry);
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
            max_estimate_gap,
            a.registers - KernelRegisterEstimate(job.ctx, job.xb));
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::filesystem::remove_all(dir);

  for (const auto& f : failures) ADD_FAILURE() << f;
  std::cout << jobs.size() << " " << ToString(op)
            << " kernels x 2 archs assembled with " << ptxas
            << "; " << rejected << " sampled shapes rejected by CanImplement; "
            << "max registers " << max_registers
            << ", max (registers - estimate) " << max_estimate_gap << "\n";
}

TEST(KernelPtxasTest, SampledGemmKernelsAssembleWithoutSpills) {
  AssembleSampled(Op::kGemm, 300);
}

TEST(KernelPtxasTest, SampledConvKernelsAssembleWithoutSpills) {
  AssembleSampled(Op::kConv, 301);
}

}  // namespace
}  // namespace blocktune
