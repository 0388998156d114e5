// Where a campaign's CPU time goes (issue 20): the candidates of a real
// campaign stream (the H100 profile, the built-in domain of one family and
// precision, the Naive Bayes sampler) are generated and assembled with
// nvJitLink, as the worker does, on one thread; the program prints the mean
// time per kernel of each step, the PTX size, and how often a PTX text
// repeats. No GPU is needed.
//
//   compile_bench [kernels per row] [family[:dtype] ...]
//   (default 60 kernels; gemm.mma, gemm.wgmma, conv.mma in bf16 and tf32,
//   gemm.ffma and conv.ffma in fp32)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "kernels/ptx_compiler.h"
#include "tuner/candidate_stream.h"
#include "tuner/device_profile.h"
#include "tuner/sampler.h"

namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace blocktune;
  const int count = argc > 1 ? std::max(1, std::atoi(argv[1])) : 60;
  std::vector<std::string> rows;
  for (int i = 2; i < argc; ++i) rows.push_back(argv[i]);
  if (rows.empty())
    rows = {"gemm.mma:bf16", "gemm.wgmma:bf16", "conv.mma:bf16",
            "gemm.mma:tf32", "gemm.wgmma:tf32", "gemm.ffma:fp32",
            "conv.ffma:fp32"};
  auto compiler = PtxCompiler::Get();
  if (!compiler.ok()) {
    std::fprintf(stderr, "%s\n", compiler.status().ToString().c_str());
    return 1;
  }
  const DeviceProfile profile = *ProfileByName("h100");
  // BLOCKTUNE_DUMP_PTX=DIR writes every kernel's PTX there, to time ptxas.
  const char* dump = std::getenv("BLOCKTUNE_DUMP_PTX");
  std::printf("# %s, %s, %d kernels per row, one thread\n",
              Describe(profile).c_str(), (*compiler)->version().c_str(), count);
  std::printf("%-16s %10s %10s %10s %10s %8s\n", "family:dtype", "draw_ms",
              "gen_ms", "compile_ms", "ptx_kB", "unique");
  for (const std::string& row : rows) {
    const size_t colon = row.find(':');
    auto family = FindFamily(row.substr(0, colon));
    if (!family.ok()) {
      std::fprintf(stderr, "%s\n", family.status().ToString().c_str());
      return 1;
    }
    auto domain = DefaultDomain(**family);
    if (!domain.ok()) return 1;
    if (colon != std::string::npos) {
      auto dtype = DTypeFromString(row.substr(colon + 1), "dtype");
      if (!dtype.ok() || !SetPrecision(&*domain, *dtype).ok()) {
        std::fprintf(stderr, "%s: unknown precision\n", row.c_str());
        return 1;
      }
    }
    auto stream = CandidateStream::Make(*domain, profile, "bayes", 1);
    if (!stream.ok()) {
      std::fprintf(stderr, "%s\n", stream.status().ToString().c_str());
      return 1;
    }
    double draw_s = 0, gen_s = 0, compile_s = 0, bytes = 0;
    std::set<std::string> texts;
    for (int i = 0; i < count; ++i) {
      auto t = Clock::now();
      auto c = (*stream)->Next();
      draw_s += Since(t);
      if (!c.ok()) return 1;
      t = Clock::now();
      auto kernel = c->family->Generate(c->problem(), c->params, "sm_90");
      gen_s += Since(t);
      if (!kernel.ok()) {
        std::fprintf(stderr, "%s: %s\n", c->ToString().c_str(),
                     kernel.status().ToString().c_str());
        return 1;
      }
      bytes += kernel->ptx.size();
      if (dump != nullptr) {
        std::string name = std::string(dump) + "/" + row + "_" +
                           std::to_string(i) + ".ptx";
        for (char& ch : name)
          if (ch == ':') ch = '_';
        if (FILE* f = std::fopen(name.c_str(), "w")) {
          std::fputs(kernel->ptx.c_str(), f);
          std::fclose(f);
        }
      }
      texts.insert(kernel->ptx);
      t = Clock::now();
      auto cubin = (*compiler)->Compile(kernel->ptx, TargetOf(*kernel, "sm_90"));
      compile_s += Since(t);
      if (!cubin.ok()) {
        std::fprintf(stderr, "%s: %s\n", c->ToString().c_str(),
                     cubin.status().ToString().c_str());
        return 1;
      }
    }
    std::printf("%-16s %10.3f %10.3f %10.1f %10.1f %8zu\n", row.c_str(),
                1e3 * draw_s / count, 1e3 * gen_s / count,
                1e3 * compile_s / count, bytes / count / 1e3, texts.size());
    std::fflush(stdout);
  }
  return 0;
}
