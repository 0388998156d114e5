// gemm.mma without a GPU: parameters, rules, generated text, and ptxas over
// sampled kernels per precision for sm_90 and sm_80 (no spills for any
// configuration CanImplementMma accepts). Skips the ptxas part where no
// ptxas is installed.
//
// Sample size: BLOCKTUNE_MMA_PTXAS_SAMPLES kernels per precision (default
// 100, each assembled for sm_90 and sm_80, ptxas on every core: about two
// minutes on a busy 2-core machine; 300 per precision took 300 s for bf16
// there, so the acceptance run of 300 is BLOCKTUNE_MMA_PTXAS_SAMPLES=300).
#include "kernels/gemm_mma.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

namespace blocktune {
namespace {

MmaProblem Problem(MmaPrecision prec, int64_t m, int64_t n, int64_t k,
                   Layout la, Layout lb) {
  MmaProblem p;
  p.precision = prec;
  p.ctx.m = m;
  p.ctx.n = n;
  p.ctx.k = k;
  p.ctx.layout_a = la;
  p.ctx.layout_b = lb;
  p.ctx.dtype = StorageType(prec);
  return p;
}

TEST(GemmMmaTest, ParamsRoundTripAndValidate) {
  MmaParams p;
  p.bm = 64;
  p.bn = 16;
  p.warps_m = 2;
  p.warps_n = 2;
  p.kg = 4;
  auto q = MmaParamsFromString(ToString(p));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, p);
  EXPECT_FALSE(MmaParamsFromString("bm=64 zz=3").ok());
  EXPECT_TRUE(ValidateMmaParams(p).ok());
  p.bm = 48;
  EXPECT_FALSE(ValidateMmaParams(p).ok());
  p.bm = 16;
  p.warps_m = 2;  // warp tile 8 rows: too small
  EXPECT_FALSE(ValidateMmaParams(p).ok());
  EXPECT_EQ(MmaParamDomains().size(), 9u);
}

TEST(GemmMmaTest, UnalignedLeadingDimensionsUseNarrowCopies) {
  MmaProblem p =
      Problem(MmaPrecision::kBf16, 1023, 4097, 515, Layout::kN, Layout::kN);
  MmaParams params;
  ASSERT_TRUE(CanImplementMma(p, params).ok());
  // lda 515, ldb 4097 (odd): 2-byte loads through registers for both.
  auto k = GenerateGemmMma(p, params);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->a_copy_bytes, 2);
  EXPECT_EQ(k->b_copy_bytes, 2);
  EXPECT_EQ(k->align_elements, 1);
  EXPECT_NE(k->ptx.find("ld.global.nc.b16"), std::string::npos);
  EXPECT_NE(k->ptx.find("st.shared.v4.b32"), std::string::npos);
  EXPECT_EQ(k->ptx.find("cp.async.cg"), std::string::npos);
  // Even, 4-element and 8-element multiples: 4-, 8- and 16-byte copies.
  const std::pair<int64_t, int> widths[] = {
      {514, 4}, {516, 8}, {520, 16}, {1026, 4}};
  for (const auto& [ld, bytes] : widths) {
    p.lda = ld;
    p.ldb = 4104;
    k = GenerateGemmMma(p, params);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ(k->a_copy_bytes, bytes) << "lda " << ld;
    EXPECT_EQ(k->b_copy_bytes, 16);
    if (bytes < 16) {
      EXPECT_NE(k->ptx.find("cp.async.ca.shared.global"), std::string::npos);
      EXPECT_NE(k->ptx.find("], " + std::to_string(bytes) + ", %szq;"),
                std::string::npos);
    }
  }
  // tf32: 4-byte elements, never narrower than 4-byte copies.
  MmaProblem t =
      Problem(MmaPrecision::kTf32, 64, 64, 1003, Layout::kN, Layout::kT);
  k = GenerateGemmMma(t, params);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->a_copy_bytes, 4);
  EXPECT_EQ(k->ptx.find("ld.global.nc.b16"), std::string::npos);
}

TEST(GemmMmaTest, PtxNamesTheAlgorithmsInstructions) {
  for (MmaPrecision prec :
       {MmaPrecision::kBf16, MmaPrecision::kFp16, MmaPrecision::kTf32}) {
    for (int l = 0; l < 4; ++l) {
      MmaProblem p =
          Problem(prec, 100, 100, 100, l / 2 ? Layout::kT : Layout::kN,
                  l % 2 ? Layout::kT : Layout::kN);
      p.lda = p.ldb = 104;  // rows of 16-byte multiples: cp.async.cg
      MmaParams params;
      params.kg = 2;
      auto k = GenerateGemmMma(p, params);
      ASSERT_TRUE(k.ok()) << k.status().ToString();
      EXPECT_NE(k->ptx.find("mma.sync.aligned"), std::string::npos);
      EXPECT_NE(k->ptx.find("cp.async.cg.shared.global"), std::string::npos);
      // tf32 TN reads both operands by words (ldmatrix.trans is 16-bit).
      if (!(prec == MmaPrecision::kTf32 && l == 2)) {
        EXPECT_NE(k->ptx.find("ldmatrix"), std::string::npos);
      }
      EXPECT_EQ(k->reduce_entry, "blocktune_gemm_mma_reduce");
      EXPECT_EQ(k->workspace_bytes, 2 * 100 * 100 * 4);
      // sm_90: the reduce entry is a programmatic dependent launch.
      EXPECT_NE(k->ptx.find("griddepcontrol.launch_dependents"),
                std::string::npos);
      EXPECT_NE(k->ptx.find("griddepcontrol.wait"), std::string::npos);
      EXPECT_EQ(GenerateGemmMma(p, params, "sm_80")
                    ->ptx.find("griddepcontrol"),
                std::string::npos);
      auto again = GenerateGemmMma(p, params);
      EXPECT_EQ(again->ptx, k->ptx);  // deterministic
      // The split-K tree: no reduce entry; tile-major partials and
      // K_G + 8 counters per tile.
      params.split_reduce = 1;
      params.kg = 20;  // two levels of radix 8
      auto tree = GenerateGemmMma(p, params);
      ASSERT_TRUE(tree.ok());
      EXPECT_TRUE(tree->reduce_entry.empty());
      const int64_t tiles = 1;  // 100 x 100 in one 128 x 128 tile
      EXPECT_EQ(tree->counter_offset, tiles * 20 * 128 * 128 * 4);
      EXPECT_EQ(tree->workspace_bytes, tree->counter_offset + tiles * 28 * 4);
      EXPECT_NE(tree->ptx.find("// level 1:"), std::string::npos);
      EXPECT_EQ(tree->ptx.find("// level 2:"), std::string::npos);
    }
  }
}

TEST(GemmMmaTest, WrongDtypeOrArchIsRefused) {
  MmaProblem p = Problem(MmaPrecision::kBf16, 8, 8, 8, Layout::kN, Layout::kN);
  p.ctx.dtype = DType::kFp32;
  EXPECT_EQ(GenerateGemmMma(p, MmaParams{}).status().code(),
            StatusCode::kInvalidArgument);
  p.ctx.dtype = DType::kBf16;
  EXPECT_EQ(GenerateGemmMma(p, MmaParams{}, "sm_75").status().code(),
            StatusCode::kInvalidArgument);
}

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

Assembled RunPtxas(const std::string& ptxas, const std::string& path,
                   const std::string& arch) {
  const std::string cmd = ptxas + " -arch=" + arch + " -v " + path + " -o " +
                          path + "." + arch + ".cubin 2>&1";
  Assembled out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.log.append(buf, n);
  out.ok = pclose(pipe) == 0;
  std::smatch m;
  static const std::regex used(
      "Function properties for blocktune_gemm_mma\\n.*?(\\d+) bytes spill "
      "stores, (\\d+) bytes spill loads\\n.*?Used (\\d+) registers");
  if (std::regex_search(out.log, m, used)) {
    out.spill_bytes = std::stoi(m[1]) + std::stoi(m[2]);
    out.registers = std::stoi(m[3]);
  }
  return out;
}

MmaParams SampleParams(std::mt19937& rng) {
  MmaParams p;
  for (const MmaParamDomain& d : MmaParamDomains()) {
    const int64_t v = d.values[rng() % d.values.size()];
    const std::string name = d.name;
    if (name == "bm") p.bm = v;
    if (name == "bn") p.bn = v;
    if (name == "bk") p.bk = v;
    if (name == "wm") p.warps_m = v;
    if (name == "wn") p.warps_n = v;
    if (name == "st") p.stages = v;
    if (name == "kg") p.kg = v;
    if (name == "gm") p.group_m = v;
    if (name == "sk") p.split_reduce = v;
  }
  return p;
}

void AssembleSampled(MmaPrecision prec, uint32_t seed) {
  const std::string ptxas = FindPtxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set BLOCKTUNE_PTXAS)";
  int samples = 100;
  if (const char* env = std::getenv("BLOCKTUNE_MMA_PTXAS_SAMPLES"))
    samples = std::max(1, std::atoi(env));
  const auto dir = std::filesystem::temp_directory_path() /
                   ("blocktune-mma-ptxas-" + std::to_string(getpid()) + "-" +
                    std::string(ToString(prec)));
  std::filesystem::create_directories(dir);
  std::mt19937 rng(seed);
  MmaLimits limits;
  limits.max_dynamic_shared_bytes = 163 * 1024;  // sm_80's opt-in
  struct Job {
    MmaProblem problem;
    MmaParams params;
    std::string path;
  };
  std::vector<Job> jobs;
  std::map<std::string, int> rejected;
  while (static_cast<int>(jobs.size()) < samples) {
    Job job;
    const int64_t align = 16 / ElementBytes(prec);
    job.problem = Problem(prec, 1 + rng() % 8192, 1 + rng() % 8192,
                          1 + rng() % 8192, rng() % 2 ? Layout::kT : Layout::kN,
                          rng() % 2 ? Layout::kT : Layout::kN);
    // Leading dimensions padded to 16 bytes (half the samples) or tight,
    // which takes the narrow copy paths where they are not multiples.
    const GemmContext& g = job.problem.ctx;
    const bool pad = rng() % 2;
    auto up = [&](int64_t v) {
      return pad ? (v + align - 1) / align * align : v;
    };
    job.problem.lda = up(g.layout_a == Layout::kT ? g.m : g.k);
    job.problem.ldb = up(g.layout_b == Layout::kT ? g.k : g.n);
    job.params = SampleParams(rng);
    if (!ValidateMmaParams(job.params).ok()) {
      ++rejected["params"];
      continue;
    }
    const MmaRule rule = FirstFailingMmaRule(job.problem, job.params, limits);
    if (rule != MmaRule::kNone) {
      ++rejected[ToString(rule)];
      continue;
    }
    job.path = (dir / ("k" + std::to_string(jobs.size()) + ".ptx")).string();
    jobs.push_back(job);
  }

  std::mutex mu;
  std::vector<std::string> failures;
  int max_registers = 0;
  int64_t max_gap = INT64_MIN, min_gap = INT64_MAX;
  std::string max_gap_what;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const Job& job = jobs[i];
      for (const char* arch : {"sm_90", "sm_80"}) {
        const std::string what = std::string(ToString(prec)) + " " +
                                 ToString(Context(job.problem.ctx)) + " " +
                                 ToString(job.params) + " " + arch;
        auto kernel = GenerateGemmMma(job.problem, job.params, arch);
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
          continue;
        }
        if (a.spill_bytes > 0) {
          failures.push_back(
              what + ": spills " + std::to_string(a.spill_bytes) +
              " bytes with " + std::to_string(a.registers) +
              " registers (estimate " +
              std::to_string(MmaRegisterEstimate(job.problem, job.params)) +
              ")");
        }
        max_registers = std::max(max_registers, a.registers);
        const int64_t gap =
            a.registers - MmaRegisterEstimate(job.problem, job.params);
        if (gap > max_gap) max_gap_what = what + " ld " +
            std::to_string(job.problem.Lda()) + "/" +
            std::to_string(job.problem.Ldb());
        max_gap = std::max(max_gap, gap);
        min_gap = std::min(min_gap, gap);
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::filesystem::remove_all(dir);
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::string why;
  for (const auto& [rule, count] : rejected)
    why += " " + rule + "=" + std::to_string(count);
  std::printf(
      "%s: %zu kernels x {sm_90, sm_80} assembled with %s; rejected:%s;"
      " max registers %d, registers - estimate in [%lld, %lld] (max: %s)\n",
      std::string(ToString(prec)).c_str(), jobs.size(), ptxas.c_str(),
      why.c_str(), max_registers, static_cast<long long>(min_gap),
      static_cast<long long>(max_gap), max_gap_what.c_str());
}

TEST(GemmMmaPtxasTest, Bf16SampledKernelsAssembleWithoutSpills) {
  AssembleSampled(MmaPrecision::kBf16, 1700);
}
TEST(GemmMmaPtxasTest, Fp16SampledKernelsAssembleWithoutSpills) {
  AssembleSampled(MmaPrecision::kFp16, 1701);
}
TEST(GemmMmaPtxasTest, Tf32SampledKernelsAssembleWithoutSpills) {
  AssembleSampled(MmaPrecision::kTf32, 1702);
}

}  // namespace
}  // namespace blocktune
