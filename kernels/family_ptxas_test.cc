// ptxas over sampled kernels of every family, precision and arch (CPU, no
// GPU): configurations drawn from the family's ParamSpecs with a fixed
// seed, contexts drawn over the op's space; the ones CanImplement accepts
// on that arch's device (sm_90: the H100's limits; sm_80: 163 KiB opt-in
// shared memory, compute capability 8.0, S_IC 12 KiB) are assembled with ptxas -v, and
// every function of every kernel must use at most 255 registers and spill
// nothing. Rejections are counted by the rule that refused them. An arch
// below a family's min_compute_capability is skipped (gemm.wgmma: sm_90
// only), and a kernel whose PTX needs an arch-specific target
// (GeneratedKernel::target: gemm.wgmma's sm_90a) is assembled for it.
//
// Samples: the full count per (family, precision, arch) is 300 (fewer for
// the families that reuse a base family's PTX, FullSamples).
// bench/results/cpu/family_ptxas.tsv records a passing full run of each
// target (scripts/ptxas_record.sh, BLOCKTUNE_PTXAS_SAMPLES=full) with the
// generator version and a digest (kernels/fnv1a.h) of the PTX of all the
// full run's kernels. CI generates the full set's PTX (fast) and requires
// the record's version and digest, so the recorded ptxas result is of
// exactly the kernels the generator emits now; it assembles only the first
// 10 per target itself, as a live check of ptxas and the harness. So a
// generator bump fails here until its full run is recorded, and so does a
// change to what a generator emits without a bump (the digest differs):
// the rule that such a change bumps the family's version is checked.
// BLOCKTUNE_PTXAS_SAMPLES=N assembles N per target. ptxas runs on 2
// threads. Skips with a message where ptxas is absent (BLOCKTUNE_PTXAS
// names one elsewhere).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "kernels/fnv1a.h"
#include "kernels/ptxas_harness.h"

namespace blocktune {
namespace {

constexpr int kDefaultSamples = 300;
constexpr int kThreads = 2;

struct Target {
  std::string family;
  DType precision;
  std::string arch;
};

std::string Name(const Target& t) {
  std::string s = t.family + "_" + std::string(ToString(t.precision)) + "_" +
                  t.arch;
  for (char& c : s)
    if (c == '.') c = '_';
  return s;
}

void PrintTo(const Target& t, std::ostream* os) { *os << Name(t); }

KernelLimits LimitsOf(const std::string& arch) {
  KernelLimits l;  // the H100's (sm_90, sm_90a)
  if (arch == "sm_80") {
    l.max_dynamic_shared_bytes = 163 * 1024;
    l.compute_capability = 80;
    l.instruction_cache_bytes = 12 * 1024;  // the a100 profile's S_IC
  }
  return l;
}

// The packed families' main entries are their base family's generator
// (sampled 300 times per precision in that family's own targets); what is
// theirs is the pack entry, which 100 kernels per precision cover. This
// keeps CI's ptxas time in bounds.
constexpr int kPackedSamples = 100;
// The persistent families emit gemm.wgmma's and conv.wgmma's PTX: a few
// kernels show they assemble under their own names.
constexpr int kPersistentSamples = 10;
// gemm.wgmma_ts: gemm.wgmma's tile code (sampled there) and the tail
// split's own epilogue and unit walk, which 100 kernels per precision
// cover; conv.wgmma_sk likewise (conv.wgmma's tile code; its own split
// start, partial sums and reduce entry), conv.wgmma_sc and gemm.wgmma_sc
// (their cluster epilogue). BLOCKTUNE_PTXAS_SAMPLES=300 ran 300 per
// precision for their first versions (bench/results/cpu/
// conv_wgmma_sk_ptxas.txt, conv_wgmma_sc_ptxas.txt, gemm_wgmma_sc_ptxas.txt).
constexpr int kTailSamples = 100;

// What CI assembles per target; the full count is recorded (see above) and
// its PTX digest compared.
constexpr int kCiSamples = 10;

int FullSamples(const std::string& family) {
  if (family == "gemm.mma_pk" || family == "gemm.wgmma_pk" ||
      family == "gemm.ffma_kpk")
    return kPackedSamples;
  // Their base family's PTX (family_test checks it byte for byte).
  if (family == "gemm.wgmma_ps" || family == "conv.wgmma_ps") return kPersistentSamples;
  if (family == "gemm.wgmma_ts" || family == "conv.wgmma_sk" ||
      family == "conv.wgmma_sc" || family == "gemm.wgmma_sc")
    return kTailSamples;
  return kDefaultSamples;
}

// How many of a target's `full` kernels this run assembles.
int Samples(int full) {
  if (const char* env = std::getenv("BLOCKTUNE_PTXAS_SAMPLES")) {
    if (std::string(env) == "full") return full;
    // 0: none assembled; the digest is still made and checked.
    return std::max(0, std::atoi(env));
  }
  return std::min(kCiSamples, full);
}

constexpr char kRecord[] = "bench/results/cpu/family_ptxas.tsv";

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The recorded full run of (family, precision, arch): an empty string if it
// is there, passed, is of `version` with at least `full` kernels and its
// PTX digest is `digest`, else what is wrong.
std::string CheckRecord(const Target& t, int version, int full, const std::string& digest) {
  const std::string path = std::string(BLOCKTUNE_SOURCE_DIR) + "/" + kRecord;
  std::ifstream in(path);
  if (!in) return std::string("cannot read ") + kRecord;
  const std::string key = t.family + "\t" + std::string(ToString(t.precision)) + "\t" + t.arch + "\t";
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream cols(line.substr(key.size()));
    int v = 0, kernels = 0, failed = -1, registers = 0;
    double seconds = 0;
    std::string commit, recorded_digest;
    cols >> v >> kernels >> failed >> registers >> seconds >> commit >> recorded_digest;
    if (v != version)
      return std::string(kRecord) + " records " + t.family + " v" + std::to_string(v) +
             "; the generator is v" + std::to_string(version);
    if (kernels < full || failed != 0)
      return std::string(kRecord) + " records " + std::to_string(kernels) + " kernels, " +
             std::to_string(failed) + " failed; a full run is " + std::to_string(full) +
             " kernels, none failed";
    if (recorded_digest != digest)
      return std::string(kRecord) + " records PTX digest '" + recorded_digest + "' for " +
             t.family + " v" + std::to_string(v) + "; the generator emits " + digest +
             " now: a change to what a generator emits bumps its version";
    return "";
  }
  return std::string(kRecord) + " has no line for " + Name(t);
}

Params SampleParams(const KernelFamily& f, std::mt19937& rng) {
  Params p;
  p.size = static_cast<int>(f.params().size());
  for (int i = 0; i < p.size; ++i) {
    const std::vector<int64_t>& values = f.params()[i].values;
    p[i] = values[rng() % values.size()];
  }
  return p;
}

// M, N, K over [1, 8192], every layout; three in four with leading
// dimensions padded to 16 bytes (the rest tight, so that families with an
// alignment rule show it).
Problem SampleGemm(std::mt19937& rng, DType dtype) {
  GemmContext g;
  g.m = 1 + rng() % 8192;
  g.n = 1 + rng() % 8192;
  g.k = 1 + rng() % 8192;
  g.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
  g.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
  g.dtype = dtype;
  Problem p(g);
  if (rng() % 4 != 0) {
    const int64_t align = 16 / SizeOf(dtype);
    auto up = [&](int64_t v) { return (v + align - 1) / align * align; };
    p.lda = up(g.layout_a == Layout::kN ? g.k : g.m);
    p.ldb = up(g.layout_b == Layout::kN ? g.n : g.k);
  }
  return p;
}

// gemm.gemv's contexts: SampleGemm's N over [1, 8192] and its four layouts
// would rarely draw one the family takes (N <= 128, NT or NN of one
// column). M and K over [1, 16384], N over [1, 16] three times in four and
// over [1, 140] (past 128: rule columns) else, NT with one in eight NN;
// three in four with rows padded to 16 bytes.
Problem SampleGemv(std::mt19937& rng, DType dtype) {
  GemmContext g;
  g.m = 1 + rng() % 16384;
  g.n = rng() % 4 ? 1 + rng() % 16 : 1 + rng() % 140;
  g.k = 1 + rng() % 16384;
  g.layout_a = Layout::kN;
  g.layout_b = rng() % 8 == 0 ? Layout::kN : Layout::kT;
  if (g.layout_b == Layout::kN) g.n = 1;
  g.dtype = dtype;
  Problem p(g);
  if (rng() % 4 != 0) {
    auto up = [](int64_t v) { return (v + 3) / 4 * 4; };
    p.lda = up(g.k);
    p.ldb = g.layout_b == Layout::kN ? 1 : up(g.k);
  }
  return p;
}

// gemm.ffma_k's contexts: NT only, rows of whole 16-byte units (its
// rules); M and K over [1, 16384], N over [1, 16] one time in four (the
// skinny shapes it is for), else over [1, 4096].
// `packed` (gemm.ffma_kpk): rows that are no multiple of 4 floats, A's,
// B's or both.
Problem SampleFfmaK(std::mt19937& rng, DType dtype, bool packed = false) {
  GemmContext g;
  g.m = 1 + rng() % 16384;
  g.n = rng() % 4 == 0 ? 1 + rng() % 16 : 1 + rng() % 4096;
  g.k = 1 + rng() % 16384;
  g.layout_a = Layout::kN;
  g.layout_b = Layout::kT;
  g.dtype = dtype;
  Problem p(g);
  auto up = [](int64_t v) { return (v + 3) / 4 * 4; };
  p.lda = up(g.k);
  p.ldb = up(g.k);
  if (packed) {
    const int which = rng() % 3;
    if (which != 1) p.lda = up(g.k) + 1 + rng() % 3;
    if (which != 0) p.ldb = up(g.k) + 1 + rng() % 3;
  }
  return p;
}

Problem SampleConv(std::mt19937& rng, DType dtype) {
  ConvContext c;
  c.n = 1 + rng() % 32;
  c.h = c.w = 7 << (rng() % 5);
  // Channels: a power of two, or (one in four) any count up to 48, so
  // that narrow copies (C = 3, 5, 6, 12, ...) are drawn too.
  c.c = rng() % 4 == 0 ? 1 + rng() % 48 : int64_t{1} << (rng() % 11);
  c.k = int64_t{1} << (rng() % 11);
  c.r = c.s = 1 + 2 * (rng() % 4);
  c.pad_h = c.pad_w = rng() % (c.r / 2 + 1);
  c.stride_h = c.stride_w = 1 + rng() % 2;
  c.dilation_h = c.dilation_w = 1 + rng() % 2;
  if (c.P() < 1 || c.Q() < 1) c.dilation_h = c.dilation_w = 1;
  if (c.P() < 1 || c.Q() < 1) c.r = c.s = 1;
  c.dtype = dtype;
  return Problem(Context(c));
}

struct Job {
  Problem problem;
  Params params;
};

// The digest of the first `n` jobs' kernels: each one's parameters,
// context, arch and PTX (or the generator's error), in order.
std::string PtxDigest(const KernelFamily& f, const std::vector<Job>& jobs, size_t n,
                      const std::string& arch) {
  Fnv1a fnv;
  for (size_t i = 0; i < n && i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    fnv.Add(f.Format(job.params) + " " + ToString(job.problem.ctx) + " " + arch);
    auto kernel = f.Generate(job.problem, job.params, arch);
    fnv.Add(kernel.ok() ? kernel->ptx : kernel.status().ToString());
  }
  return Hex(fnv.h);
}

// A run that assembles `samples` of a target's `full` kernels stands on the
// recorded full run of them: the record must be of this generator version
// and of exactly these kernels (their digest). `filter` is the
// scripts/ptxas_record.sh argument that records it again.
void ExpectRecordedFullRun(const Target& t, int version, int full, int samples,
                           const std::string& digest, const std::string& filter) {
  if (samples >= full) return;
  EXPECT_EQ(CheckRecord(t, version, full, digest), "")
      << "this run assembles " << samples << " of the full " << full
      << " kernels; record a full run of the current generator with "
         "scripts/ptxas_record.sh build '"
      << filter << "'";
}

// Generates and assembles every job's kernel for `arch` (ptxas on kThreads
// threads); returns what failed: a generator error, a ptxas error, or a
// function that spills or uses more than 255 registers.
std::vector<std::string> AssembleAll(const KernelFamily& f,
                                     const std::vector<Job>& jobs,
                                     const std::string& arch,
                                     const std::string& name,
                                     int* max_registers) {
  const std::string ptxas = FindPtxas();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("blocktune-ptxas-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::create_directories(dir);
  std::mutex mu;
  std::vector<std::string> failures;
  ParallelFor(jobs.size(), kThreads, [&](size_t i, int worker) {
    const Job& job = jobs[i];
    const std::string what =
        f.Format(job.params) + " " + ToString(job.problem.ctx) + " " + arch;
    auto kernel = f.Generate(job.problem, job.params, arch);
    if (!kernel.ok()) {
      std::lock_guard lock(mu);
      failures.push_back(what + ": " + kernel.status().ToString());
      return;
    }
    std::vector<std::string> entries = {kernel->entry};
    if (!kernel->reduce_entry.empty()) entries.push_back(kernel->reduce_entry);
    const PtxasReport r =
        RunPtxas(ptxas, kernel->ptx, TargetOf(*kernel, arch),
                 (dir / ("w" + std::to_string(worker))).string());
    std::lock_guard lock(mu);
    if (!r.ok(entries)) {
      failures.push_back(what + ": ptxas failed\n" + r.log.substr(0, 2000));
      return;
    }
    *max_registers = std::max(*max_registers, r.max_registers());
    for (const PtxasFunction& fn : r.functions) {
      if (fn.spill_bytes() > 0 || fn.registers > 255) {
        failures.push_back(what + ": " + fn.name + " spills " +
                           std::to_string(fn.spill_store_bytes) +
                           " bytes stored, " +
                           std::to_string(fn.spill_load_bytes) +
                           " bytes loaded, with " +
                           std::to_string(fn.registers) + " registers");
      }
    }
  });
  std::filesystem::remove_all(dir);
  return failures;
}

class FamilyPtxasTest : public ::testing::TestWithParam<Target> {};

TEST_P(FamilyPtxasTest, SampledKernelsAssembleWithoutSpills) {
  const Target& target = GetParam();
  const std::string ptxas = FindPtxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (set BLOCKTUNE_PTXAS)";
  auto found = FindFamily(target.family);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  const KernelFamily& f = **found;
  ASSERT_TRUE(f.Implements(target.precision));
  const KernelLimits limits = LimitsOf(target.arch);
  const int full = FullSamples(target.family);
  const int samples = Samples(full);
  const auto start = std::chrono::steady_clock::now();

  // Draw until the full count (or `samples`, if more) are accepted,
  // counting refusals by rule. Drawing is sequential from a fixed seed, so
  // a run of N assembles the first N of the full run's kernels.
  const std::string name = Name(target);
  std::seed_seq seed(name.begin(), name.end());
  std::mt19937 rng(seed);
  std::vector<Job> jobs;
  std::map<std::string, int> rejected;
  int drawn = 0;
  const int to_draw = std::max(samples, full);
  while (static_cast<int>(jobs.size()) < to_draw) {
    ASSERT_LT(++drawn, 1000 * to_draw) << "the rules refuse nearly everything";
    Job job;
    job.problem = f.name() == "gemm.gemv"
                      ? SampleGemv(rng, target.precision)
                  : f.name() == "gemm.ffma_k" || f.name() == "gemm.ffma_kpk"
                      ? SampleFfmaK(rng, target.precision,
                                    f.name() == "gemm.ffma_kpk")
                  : f.op() == Op::kGemm ? SampleGemm(rng, target.precision)
                                        : SampleConv(rng, target.precision);
    job.params = SampleParams(f, rng);
    if (!Validate(job.problem.ctx).ok()) {
      ++rejected["context"];
      continue;
    }
    if (!f.ValidateParams(job.params).ok()) {
      ++rejected["params"];
      continue;
    }
    const int rule = f.FirstFailingRule(job.problem, job.params, limits);
    const Status can = f.CanImplement(job.problem, job.params, limits);
    ASSERT_EQ(rule < 0, can.ok())
        << f.Format(job.params) << " " << ToString(job.problem.ctx)
        << ": the rules and CanImplement disagree: " << can.ToString();
    if (rule >= 0) {
      ++rejected[f.rules()[rule]];
      continue;
    }
    jobs.push_back(job);
  }

  const std::string digest = PtxDigest(f, jobs, full, target.arch);
  ExpectRecordedFullRun(target, f.version(), full, samples, digest, "*" + Name(target) + "*");
  jobs.resize(samples);

  int max_registers = 0;
  const std::vector<std::string> failures =
      AssembleAll(f, jobs, target.arch, Name(target), &max_registers);
  for (const std::string& failure : failures) ADD_FAILURE() << failure;

  std::string why;
  for (const auto& [rule, count] : rejected)
    why += " " + rule + "=" + std::to_string(count);
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  std::printf(
      "%s %s %s: %zu kernels assembled with %s (%d threads) in %.1f s, "
      "%zu failed; %d drawn, rejected:%s; max registers %d; ptx digest of %d: %s\n",
      target.family.c_str(), std::string(ToString(target.precision)).c_str(),
      target.arch.c_str(), jobs.size(), ptxas.c_str(), kThreads, seconds,
      failures.size(), drawn, why.c_str(), max_registers, full, digest.c_str());
}

// The ffma families' register estimate counts staged loads at the vector
// widths the generator chooses for the context, so the largest thread
// tiles (M_S*N_S = 128 and 256 accumulators) pass where the operands load
// as vectors and are refused where they load as scalars. The sampled test
// above rarely draws them (its largest kernels use ~200 registers): here
// every such tile the rules accept, on contexts with vector and with scalar
// loads, in every layout, with and without K_G and stages, must assemble
// for sm_90 without spilling. Recorded like the sampled targets (arch
// "sm_90-largest"; scripts/ptxas_record.sh build '*largest*'): CI checks
// the record's digest of every such kernel and assembles the first 10.
TEST(FfmaPtxasTest, LargestThreadTilesTheRulesAcceptDoNotSpill) {
  if (FindPtxas().empty()) GTEST_SKIP() << "no ptxas (set BLOCKTUNE_PTXAS)";
  const KernelLimits limits = LimitsOf("sm_90");
  for (const char* name : {"gemm.ffma", "conv.ffma"}) {
    auto found = FindFamily(name);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    const KernelFamily& f = **found;
    std::vector<Problem> problems;
    if (f.op() == Op::kGemm) {
      for (int64_t dim : {4096, 4095})
        for (Layout a : {Layout::kN, Layout::kT})
          for (Layout b : {Layout::kN, Layout::kT}) {
            GemmContext g;
            g.m = g.n = g.k = dim;
            g.layout_a = a;
            g.layout_b = b;
            problems.push_back(Problem(g));
          }
    } else {
      for (int64_t c : {64, 3}) {
        ConvContext cv;
        cv.n = 1;
        cv.h = cv.w = 56;
        cv.c = c;
        cv.k = 64;
        cv.r = cv.s = 3;
        cv.pad_h = cv.pad_w = 1;
        problems.push_back(Problem(Context(cv)));
      }
    }
    std::vector<Job> jobs;
    for (const Problem& problem : problems)
      for (int64_t ms : {8, 16})
        for (int64_t ns : {8, 16}) {
          if (ms * ns < 128) continue;
          for (int64_t ml : {64, 128, 256})
            for (int64_t nl : {64, 128, 256})
              for (int64_t u : {4, 8, 16})
                for (int64_t kg : {1, 4})
                  for (int64_t st : {1, 3}) {
                    auto p = f.Parse("ML=" + std::to_string(ml) +
                                     " NL=" + std::to_string(nl) +
                                     " MS=" + std::to_string(ms) +
                                     " NS=" + std::to_string(ns) +
                                     " U=" + std::to_string(u) +
                                     " KG=" + std::to_string(kg) +
                                     " ST=" + std::to_string(st));
                    ASSERT_TRUE(p.ok()) << p.status().ToString();
                    if (f.CanImplement(problem, *p, limits).ok())
                      jobs.push_back({problem, *p});
                  }
        }
    // conv.ffma's gathered A loads as scalars: its rules refuse these tiles.
    if (f.op() == Op::kGemm) {
      EXPECT_GE(jobs.size(), 8u) << name << ": the rules accept no large tile";
    }
    if (jobs.empty()) continue;
    const int full = static_cast<int>(jobs.size());
    const int samples = std::min(full, Samples(full));  // no more than there are
    const std::string digest = PtxDigest(f, jobs, full, "sm_90");
    ExpectRecordedFullRun({name, DType::kFp32, "sm_90-largest"}, f.version(), full, samples,
                          digest, "*largest*");
    jobs.resize(samples);
    const auto start = std::chrono::steady_clock::now();
    int max_registers = 0;
    const std::vector<std::string> failures =
        AssembleAll(f, jobs, "sm_90", std::string(name) + "-large", &max_registers);
    for (const std::string& failure : failures) ADD_FAILURE() << failure;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s fp32 sm_90-largest: %zu kernels assembled with %s (%d threads) in %.1f s, "
                "%zu failed; %d accepted tiles of 128 or 256 accumulators; max registers %d; "
                "ptx digest of %d: %s\n",
                name, jobs.size(), FindPtxas().c_str(), kThreads, seconds, failures.size(), full,
                max_registers, full, digest.c_str());
  }
}

// Every registered family, every precision it implements, both archs where
// the family runs on them. A family whose kernels need an arch-specific
// target is named by it (gemm_wgmma_bf16_sm_90a): the arch the test gives
// Generate, and the one ptxas assembles for.
std::vector<Target> Targets() {
  std::vector<Target> out;
  for (const KernelFamily* f : Families())
    for (DType d : f->precisions())
      for (const char* arch : {"sm_90", "sm_80"}) {
        if (std::atoi(arch + 3) < f->min_compute_capability()) continue;
        std::string name = arch;
        // The target of the family's default kernel for a small GEMM or
        // convolution of this precision.
        Problem probe;
        if (f->op() == Op::kGemm) {
          GemmContext g;
          g.m = g.n = g.k = 64;
          g.layout_a = Layout::kN;
          g.layout_b = Layout::kT;
          g.dtype = d;
          probe = Problem(g);
        } else {
          ConvContext c;
          c.n = 1;
          c.h = c.w = 8;
          c.c = c.k = 16;
          // 3x3: nine k tiles, so that conv.wgmma_sk's default split works.
          c.r = c.s = 3;
          c.pad_h = c.pad_w = 1;
          c.dtype = d;
          probe = Problem(Context(c));
        }
        auto k = f->Generate(probe, f->DefaultCandidates().front(), arch);
        if (!k.ok() && f->op() == Op::kGemm) {
          // A family that refuses NT (gemm.wgmma_rs takes tf32 NN and TT).
          std::get<GemmContext>(probe.ctx).layout_b = Layout::kN;
          k = f->Generate(probe, f->DefaultCandidates().front(), arch);
        }
        if (k.ok()) name = TargetOf(*k, arch);
        out.push_back({std::string(f->name()), d, name});
      }
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    EveryFamily, FamilyPtxasTest, ::testing::ValuesIn(Targets()),
    [](const ::testing::TestParamInfo<Target>& info) {
      return Name(info.param);
    });

}  // namespace
}  // namespace blocktune
