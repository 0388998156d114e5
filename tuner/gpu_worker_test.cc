// The real worker backend on a real GPU (label gpu): generated kernels of
// every family measure ok and pass the float64 check with their
// precision's bound (tuner/check_ptx.h CheckBoundFor); a kernel that
// computes the wrong thing is a wrong_result with no time. Skips where
// there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "kernels/cuda_driver.h"
#include "tuner/check_ptx.h"
#include "tuner/device_profile.h"
#include "tuner/sampler.h"
#include "tuner/worker.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;

const KernelFamily& Mma() { return **FindFamily("gemm.mma"); }
const KernelFamily& Wgmma() { return **FindFamily("gemm.wgmma"); }

class GpuWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto driver = cuda::Driver::Get();
    if (!driver.ok() || (*driver)->device_count() == 0) {
      GTEST_SKIP() << (driver.ok() ? "no GPU: no device" : driver.status().message());
    }
    GpuBackendOptions options;
    options.buffer_bytes = int64_t{1} << 30;  // the sampler's working_set
    backend_ = NewGpuBackend(0, options);
    hello_ = backend_->Open();
    ASSERT_TRUE(hello_.error().empty()) << hello_.error();
    auto profile = ProfileFromDevice(0);
    ASSERT_TRUE(profile.ok()) << profile.status().message();
    profile_ = *profile;
  }

  // The Hopper families' kernels target sm_90a.
  bool IsSm90() const { return profile_.cc_major == 9 && profile_.cc_minor == 0; }

  // Parses, prepares and measures `item`.
  tuner::WorkResult Run(const tuner::WorkItem& item,
                        PreparedSample* prepared = nullptr) {
    PreparedSample s;
    s.item = item;
    EXPECT_TRUE(ParseWorkItem(&s)) << s.status.message();
    backend_->Prepare(&s);
    EXPECT_TRUE(s.status.ok()) << s.status.message();
    if (prepared != nullptr) *prepared = s;
    bool broken = false;
    tuner::WorkResult r = backend_->Measure(s, &broken);
    EXPECT_FALSE(broken) << r.error();
    return r;
  }
  // An item from before families: the ffma block shape.
  tuner::WorkResult Run(const std::string& ctx, std::vector<int64_t> xb,
                        PreparedSample* prepared = nullptr) {
    tuner::WorkItem item;
    item.set_seq(1);
    item.set_context(ctx);
    for (int64_t v : xb) item.add_block_shape(v);
    return Run(item, prepared);
  }
  tuner::WorkResult RunMma(const std::string& ctx, const std::string& params,
                           PreparedSample* prepared = nullptr,
                           const KernelFamily& family = Mma()) {
    Candidate c;
    c.family = &family;
    c.ctx = *ContextFromString(ctx);
    c.params = *family.Parse(params);
    return Run(WorkMessage(1, c).work(), prepared);
  }
  // Measures `wrong` (its item parsed) with another sample's kernel.
  tuner::WorkResult RunWith(const tuner::WorkItem& item,
                            const PreparedSample& kernel_of) {
    PreparedSample wrong;
    wrong.item = item;
    EXPECT_TRUE(ParseWorkItem(&wrong));
    wrong.kernel = kernel_of.kernel;
    wrong.image = kernel_of.image;
    bool broken = false;
    tuner::WorkResult r = backend_->Measure(wrong, &broken);
    EXPECT_FALSE(broken) << r.error();
    return r;
  }

  // A gemm.wgmma configuration ("bm=.. bn=.. bk=.. st=.. ...") with bk 32
  // in tf32, whose 128-byte row it is (bk 64 is 256 bytes).
  static std::string BkFor(const std::string& params, DType dtype) {
    if (dtype != DType::kTf32) return params;
    return params.substr(0, params.find(" bk=")) + " bk=32" +
           params.substr(params.find(" st="));
  }

  static void Print(const std::string& what, const tuner::WorkResult& r) {
    std::printf("  %-100s %9.2f us  spread %.3f  reps %lld  %.0f MHz  "
                "err/bound %.2e\n",
                what.c_str(), r.median_s() * 1e6, r.spread(),
                static_cast<long long>(r.repetitions()), r.sm_clock_mhz(),
                r.max_error());
  }

  static void ExpectOk(const tuner::WorkResult& r) {
    EXPECT_EQ(r.status(), "ok") << r.error();
    EXPECT_TRUE(r.verified());
    EXPECT_LE(r.max_error(), 1.0);
    EXPECT_GT(r.median_s(), 0);
    EXPECT_GE(r.repetitions(), 1);
    EXPECT_GT(r.sm_clock_mhz(), 500);
    EXPECT_LT(r.sm_clock_mhz(), 3000);
  }

  std::unique_ptr<WorkerBackend> backend_;
  tuner::WorkerHello hello_;

  // Ten candidates the sampler draws for this GPU (its profile and
  // `family`'s sampling rules) from `family`'s domain in `dtype`, each
  // measured and checked through the worker.
  void RunSampled(const KernelFamily& family, DType dtype) {
    auto rules = RuleSet::ForSampling(family, profile_);
    ASSERT_TRUE(rules.ok()) << rules.status().message();
    Domain domain = *DefaultDomain(family);
    ASSERT_TRUE(SetPrecision(&domain, dtype).ok());
    SamplingOptions options;
    options.count = 10;
    options.seed = 17;
    std::vector<Candidate> sampled;
    ASSERT_TRUE(RunSampling(domain, profile_, *rules, options, &sampled).ok());
    for (const Candidate& c : sampled) {
      SCOPED_TRACE(c.ToString());
      tuner::WorkResult r = Run(WorkMessage(2, c).work());
      ExpectOk(r);
      Print(c.ToString().substr(5), r);
    }
  }

  using Corners = std::vector<std::pair<std::string, std::string>>;
  // bf16, fp16 and tf32 in turn: each corner (a context without its
  // precision, and parameters) handed to `each` as the context in that
  // precision and the parameters, with both in the failure trace (`bk_for`:
  // the parameters through BkFor, a wgmma configuration's tf32 row), then
  // ten candidates the sampler draws from `family`'s domain.
  void InEveryPrecision(
      const KernelFamily& family, const Corners& corners, bool bk_for,
      const std::function<void(const std::string& context, const std::string& params)>&
          each) {
    for (DType dtype : {DType::kBf16, DType::kFp16, DType::kTf32}) {
      const std::string precision(ToString(dtype));
      for (const auto& [ctx, params] : corners) {
        const std::string context = ctx + " dtype=" + precision;
        const std::string p = bk_for ? BkFor(params, dtype) : params;
        SCOPED_TRACE(std::string(family.name()) + " " + context + " | " + p);
        each(context, p);
      }
      RunSampled(family, dtype);
    }
  }

  // A cluster-split family (conv.wgmma_sc, gemm.wgmma_sc) on `corners` in
  // every precision: each kernel measures, passes the check and adds its
  // sums inside its cluster (no workspace, no reduce entry); beside it
  // `base`'s kernel of the same configuration, which splits through the
  // workspace (printed, no timing asserted).
  void ClusterSplitInEveryPrecision(const KernelFamily& sc,
                                    const KernelFamily& base,
                                    const Corners& corners) {
    InEveryPrecision(sc, corners, /*bk_for=*/true,
                     [&](const std::string& context, const std::string& p) {
      PreparedSample prepared;
      tuner::WorkResult r = RunMma(context, p, &prepared, sc);
      ExpectOk(r);
      EXPECT_EQ(r.family(), sc.name());
      EXPECT_EQ(prepared.kernel.workspace_bytes, 0);
      EXPECT_TRUE(prepared.kernel.reduce_entry.empty());
      EXPECT_GT(prepared.kernel.cluster, 1u);
      Print(std::string(sc.name()) + "  " + context + " | " + p, r);
      tuner::WorkResult split = RunMma(context, p, nullptr, base);
      ExpectOk(split);
      Print(std::string(base.name()) + "  " + context + " | " + p, split);
    });
  }

  DeviceProfile profile_;
};

TEST_F(GpuWorkerTest, GeneratedKernelsMeasureAndPassTheCheck) {
  std::cout << "GPU: " << hello_.name() << ", compiler " << hello_.ptxas_version()
            << "\n";
  const std::pair<std::string, std::vector<int64_t>> cases[] = {
      {"gemm m=1024 n=1024 k=1024 layout=NN dtype=fp32", {64, 64, 4, 4, 8, 1}},
      {"gemm m=1000 n=77 k=3001 layout=TN dtype=fp32", {32, 32, 4, 2, 8, 4}},
      {"gemm m=4096 n=16 k=4096 layout=NT dtype=fp32", {64, 16, 4, 2, 16, 8}},
      {"gemm m=1 n=1 k=1 layout=TT dtype=fp32", {16, 16, 1, 1, 4, 1}},
      {"conv n=2 h=28 w=28 c=64 k=96 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 "
       "dtype=fp32",
       {64, 32, 4, 4, 8, 1}},
      {"conv n=1 h=17 w=23 c=5 k=7 r=5 s=3 pad=2x0 stride=2x1 dilation=1x2 "
       "dtype=fp32",
       {32, 8, 2, 2, 4, 2}},
  };
  for (const auto& [ctx, xb] : cases) {
    SCOPED_TRACE(ctx);
    tuner::WorkResult r = Run(ctx, xb);
    ExpectOk(r);
    EXPECT_EQ(r.family(), ctx[0] == 'g' ? "gemm.ffma" : "conv.ffma");
    Print(ctx, r);
  }
}

// gemm.mma in every precision: hand-picked corners (K_G > 1 both ways,
// ragged and odd sizes, N = 1, over 48 KiB of shared memory), then
// candidates the sampler draws for this GPU.
TEST_F(GpuWorkerTest, MmaInEveryPrecisionMeasuresAndPassesTheCheck) {
  const Corners corners = {
      {"gemm m=1024 n=1024 k=1024 layout=NN", "bm=64 bn=128 bk=64 wm=2 wn=4 st=3"},
      {"gemm m=1000 n=776 k=3000 layout=TN", "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=4"},
      {"gemm m=4096 n=1 k=4096 layout=NT", "bm=64 bn=8 bk=128 wm=4 wn=1 st=4 kg=4 sk=1"},
      {"gemm m=64 n=64 k=65536 layout=NT", "bm=64 bn=64 bk=64 wm=2 wn=2 st=3 kg=64"},
      {"gemm m=1023 n=4096 k=512 layout=NN", "bm=128 bn=128 bk=32 wm=2 wn=4 st=4 gm=4"},
      {"gemm m=17 n=24 k=40 layout=NN", "bm=16 bn=8 bk=16 wm=1 wn=1 st=2"},
  };
  for (DType dtype : {DType::kBf16, DType::kFp16, DType::kTf32}) {
    const CheckBound bound = CheckBoundFor(dtype);
    std::printf("%s: |C - C_ref| <= %g * %.3g * sum|a||b| + %.3g * |C_ref|\n",
                std::string(ToString(dtype)).c_str(), bound.c, bound.u_math, bound.u_out);
  }
  InEveryPrecision(Mma(), corners, /*bk_for=*/false,
                   [&](const std::string& context, const std::string& params) {
                     tuner::WorkResult r = RunMma(context, params);
                     ExpectOk(r);
                     EXPECT_EQ(r.family(), "gemm.mma");
                     Print(context + " | " + params, r);
                   });
}

// gemm.mma_pk through the worker: the pack entry before the main one, in
// every precision; A packed, B packed, both, each layout, K_G > 1 both
// ways, tiny and N = 1; then candidates the sampler draws from its domain.
// Each corner is also measured as gemm.mma (narrow copies) and printed
// beside it, for the record (no timing is asserted).
TEST_F(GpuWorkerTest, MmaPackedInEveryPrecisionMeasuresAndPassesTheCheck) {
  const KernelFamily& packed = **FindFamily("gemm.mma_pk");
  const Corners corners = {
      {"gemm m=777 n=333 k=1555 layout=NT", "bm=64 bn=64 bk=64 wm=2 wn=2 st=4"},
      {"gemm m=777 n=333 k=1555 layout=NN", "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=4"},
      {"gemm m=777 n=333 k=1555 layout=TN", "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=4 sk=1"},
      {"gemm m=777 n=333 k=1555 layout=TT", "bm=128 bn=64 bk=32 wm=4 wn=2 st=4"},
      {"gemm m=1023 n=4097 k=520 layout=NN", "bm=128 bn=128 bk=32 wm=2 wn=4 st=4 gm=4"},
      {"gemm m=3001 n=64 k=2048 layout=TN", "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=2"},
      {"gemm m=3000 n=50 k=3000 layout=TN", "bm=64 bn=32 bk=64 wm=2 wn=1 st=4 kg=4"},
      {"gemm m=4097 n=1 k=4097 layout=NT", "bm=64 bn=8 bk=128 wm=4 wn=1 st=4 kg=4 sk=1"},
      {"gemm m=17 n=3 k=7 layout=TT", "bm=16 bn=8 bk=16 wm=1 wn=1 st=2"},
  };
  InEveryPrecision(packed, corners, /*bk_for=*/false,
                   [&](const std::string& context, const std::string& params) {
    if (!packed
             .CanImplement(Problem(*ContextFromString(context)),
                           *packed.Parse(params), profile_.Limits())
             .ok()) {
      return;  // tf32 rows of 3000 or 520 elements are 16-byte aligned
    }
    tuner::WorkResult r = RunMma(context, params, nullptr, packed);
    ExpectOk(r);
    EXPECT_EQ(r.family(), "gemm.mma_pk");
    Print("pk  " + context + " | " + params, r);
    tuner::WorkResult narrow = RunMma(context, params);
    ExpectOk(narrow);
    Print("mma " + context + " | " + params, narrow);
  });
}

// gemm.ffma_kpk through the worker: the pack entry launched before the
// main one by the daemon's launcher, the float64 check at sampled points;
// corners with A, B or both packed, a split over K (the reduce entry after
// the packs in the workspace) and clusters, then ten candidates the sampler
// draws from its domain. Each beside gemm.ffma on the same context, the
// family the unaligned rows had before.
TEST_F(GpuWorkerTest, FfmaKPackedMeasuresAndPassesTheCheck) {
  const KernelFamily& packed = **FindFamily("gemm.ffma_kpk");
  const KernelFamily& ffma = **FindFamily("gemm.ffma");
  const Corners corners = {
      {"gemm m=777 n=333 k=1555 layout=NT dtype=fp32",
       "LM=8 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=1 WK=2"},
      {"gemm m=777 n=333 k=1555 layout=NT dtype=fp32",
       "LM=4 TM=8 TN=4 WM=2 WN=2 KC=16 ST=4 KG=8"},
      {"gemm m=64 n=64 k=65535 layout=NT dtype=fp32",
       "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 CL=8"},
      {"gemm m=4097 n=1 k=4095 layout=NT dtype=fp32",
       "LM=32 TM=2 TN=1 WM=4 WN=1 KC=16 ST=3 KG=2"},
  };
  for (const auto& [context, params] : corners) {
    SCOPED_TRACE(context + " | " + params);
    tuner::WorkResult r = RunMma(context, params, nullptr, packed);
    ExpectOk(r);
    EXPECT_EQ(r.family(), "gemm.ffma_kpk");
    Print("kpk  " + context + " | " + params, r);
  }
  tuner::WorkResult base =
      RunMma("gemm m=777 n=333 k=1555 layout=NT dtype=fp32",
             "ML=64 NL=128 MS=8 NS=4 U=16 KG=8 ST=1", nullptr, ffma);
  ExpectOk(base);
  Print("ffma gemm m=777 n=333 k=1555 layout=NT | ML=64 NL=128 MS=8 NS=4 "
        "U=16 KG=8 ST=1",
        base);
  RunSampled(packed, DType::kFp32);
}

// conv.mma through the worker (issue 18): the daemon's launcher and its
// float64 check at sampled points, in bf16, fp16 and tf32; corners (the
// stem with C = 3, odd C, dilation, a split, 1x1 at batch 32) and
// candidates the sampler draws from conv.mma's domain. And a kernel made
// for another precision's inputs fails the check.
TEST_F(GpuWorkerTest, ConvMmaInEveryPrecisionMeasuresAndPassesTheCheck) {
  const KernelFamily& conv = **FindFamily("conv.mma");
  const Corners corners = {
      {"conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=64 bk=64 wm=2 wn=2 st=4"},
      {"conv n=2 h=64 w=64 c=3 k=64 r=7 s=7 pad=3 stride=2 dilation=1",
       "bm=128 bn=64 bk=16 wm=4 wn=2 st=4"},
      {"conv n=3 h=19 w=23 c=5 k=17 r=3 s=5 pad=2x1 stride=1x2 dilation=2x1",
       "bm=32 bn=16 bk=16 wm=1 wn=2 st=3"},
      {"conv n=1 h=7 w=7 c=512 k=512 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=16"},
      {"conv n=32 h=14 w=14 c=256 k=64 r=1 s=1 pad=0 stride=1 dilation=1",
       "bm=128 bn=64 bk=32 wm=2 wn=2 st=4"},
  };
  InEveryPrecision(conv, corners, /*bk_for=*/false,
                   [&](const std::string& context, const std::string& params) {
                     tuner::WorkResult r = RunMma(context, params, nullptr, conv);
                     ExpectOk(r);
                     EXPECT_EQ(r.family(), "conv.mma");
                     Print(context + " | " + params, r);
                   });
  // A bf16 kernel on fp16 inputs of the same layer: the check must fail it.
  const std::string layer =
      "conv n=1 h=28 w=28 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1";
  PreparedSample bf16;
  ExpectOk(RunMma(layer + " dtype=bf16", "bm=64 bn=64 bk=64 wm=2 wn=2 st=4",
                  &bf16, conv));
  Candidate c;
  c.family = &conv;
  c.ctx = *ContextFromString(layer + " dtype=fp16");
  c.params = *conv.Parse("bm=64 bn=64 bk=64 wm=2 wn=2 st=4 gm=2");
  const tuner::WorkResult wrong = RunWith(WorkMessage(3, c).work(), bf16);
  EXPECT_EQ(wrong.status(), "wrong_result") << wrong.error();
}

// gemm.wgmma through the generic launcher (tuner/kernel_launch.cc: tensor
// maps encoded at launch, cubin for sm_90a): hand-picked corners in every
// layout it takes, then candidates the sampler draws for this GPU. Compute
// capability 9.0 only.
TEST_F(GpuWorkerTest, WgmmaInEveryPrecisionMeasuresAndPassesTheCheck) {
  if (!IsSm90()) GTEST_SKIP() << "gemm.wgmma runs on compute capability 9.0 only";
  const Corners corners = {
      {"gemm m=1024 n=1024 k=1024 layout=NT", "bm=128 bn=256 bk=64 st=4 wg=2"},
      {"gemm m=1000 n=776 k=3000 layout=NT", "bm=128 bn=128 bk=64 st=4 wg=1"},
      {"gemm m=1024 n=1024 k=1024 layout=NN", "bm=128 bn=128 bk=64 st=4 wg=1"},
      {"gemm m=1000 n=768 k=520 layout=TN", "bm=64 bn=64 bk=64 st=3 wg=1"},
      {"gemm m=1000 n=1024 k=1000 layout=TT", "bm=128 bn=128 bk=64 st=5 wg=2"},
      {"gemm m=17 n=24 k=40 layout=NT", "bm=64 bn=32 bk=64 st=2 wg=1"},
  };
  InEveryPrecision(Wgmma(), corners, /*bk_for=*/true,
                   [&](const std::string& context, const std::string& p) {
    // tf32: A N and B T only.
    if (context.find("dtype=tf32") != std::string::npos &&
        context.find("layout=NT") == std::string::npos)
      return;
    PreparedSample prepared;
    tuner::WorkResult r = RunMma(context, p, &prepared, Wgmma());
    ExpectOk(r);
    EXPECT_EQ(r.family(), "gemm.wgmma");
    EXPECT_EQ(prepared.kernel.target, "sm_90a");
    EXPECT_EQ(prepared.kernel.tensor_maps.size(), 3u);
    Print(context + " | " + p, r);
  });
}

// gemm.wgmma_pk through the generic launcher: the pack entry, then the
// main entry whose packed operands' tensor maps cover the workspace. Every
// precision and layout (tf32's M- and N-major operands transposed by the
// pack), rows of neither 16 nor 128 bytes and of 16 but not 128 (the
// pack's 16-byte loads: A of 1023 x 4097 x 520 NN), K_G > 1, two
// consumers, N = 1 (ldc = 1: the register epilogue) and a tiny problem;
// then candidates the sampler draws from its domain. Where gemm.wgmma takes the same problem
// and parameters, it is measured too and printed beside (no timing is
// asserted).
TEST_F(GpuWorkerTest, WgmmaPackedInEveryPrecisionMeasuresAndPassesTheCheck) {
  if (!IsSm90()) GTEST_SKIP() << "gemm.wgmma_pk runs on compute capability 9.0 only";
  const KernelFamily& packed = **FindFamily("gemm.wgmma_pk");
  const Corners corners = {
      {"gemm m=777 n=333 k=1555 layout=NT", "bm=128 bn=128 bk=64 st=4 wg=1"},
      {"gemm m=777 n=333 k=1555 layout=NN", "bm=128 bn=128 bk=64 st=4 wg=1 kg=3"},
      {"gemm m=777 n=333 k=1555 layout=TN", "bm=64 bn=128 bk=64 st=4 wg=1"},
      {"gemm m=777 n=333 k=1555 layout=TT", "bm=128 bn=64 bk=64 st=5 wg=1"},
      {"gemm m=1023 n=4097 k=520 layout=NN", "bm=128 bn=256 bk=64 st=3 wg=2"},
      {"gemm m=1000 n=1000 k=1000 layout=NN", "bm=64 bn=128 bk=64 st=6 wg=1 gm=4"},
      {"gemm m=1000 n=1000 k=1000 layout=NT", "bm=128 bn=64 bk=64 st=6 wg=1 cm=2"},
      {"gemm m=3000 n=50 k=3000 layout=TN", "bm=64 bn=64 bk=64 st=4 wg=1 kg=4"},
      {"gemm m=4097 n=1 k=4097 layout=NT", "bm=64 bn=16 bk=64 st=6 wg=1 kg=4"},
      {"gemm m=17 n=3 k=7 layout=TT", "bm=64 bn=64 bk=64 st=2 wg=1"},
  };
  InEveryPrecision(packed, corners, /*bk_for=*/true,
                   [&](const std::string& context, const std::string& p) {
    const Problem problem(*ContextFromString(context));
    if (!packed.CanImplement(problem, *packed.Parse(p), profile_.Limits()).ok()) {
      // Not offered where every operand's rows are 16-byte aligned
      // (1000 x 1000 x 1000 since the rule's narrowing; the GPU run of
      // bench/results/h100/wgmma_pk/gpu_worker_test.txt measured it
      // before).
      return;
    }
    PreparedSample prepared;
    tuner::WorkResult r = RunMma(context, p, &prepared, packed);
    ExpectOk(r);
    EXPECT_EQ(r.family(), "gemm.wgmma_pk");
    EXPECT_EQ(prepared.kernel.pack_entry, "blocktune_gemm_wgmma_pack");
    EXPECT_EQ(prepared.kernel.tensor_maps.size(), 3u);
    Print("pk    " + context + " | " + p, r);
    if (Wgmma().CanImplement(problem, *Wgmma().Parse(p), profile_.Limits()).ok()) {
      tuner::WorkResult plain = RunMma(context, p, nullptr, Wgmma());
      ExpectOk(plain);
      Print("wgmma " + context + " | " + p, plain);
    }
  });
}

// gemm.wgmma_ps and conv.wgmma_ps through the generic launcher: the
// persistent grid (SMs x resident programs walking the tiles grid-stride)
// on problems with several times more work units than programs, with one
// and two consumers, K_G > 1 (units = tiles x kg), a cluster pair (whole
// pairs), every precision; then candidates the sampler draws. The base
// family's time for the same kernel is printed beside (no timing is
// asserted).
TEST_F(GpuWorkerTest, PersistentWgmmaInEveryPrecisionMeasuresAndPassesTheCheck) {
  if (!IsSm90()) GTEST_SKIP() << "gemm.wgmma_ps runs on compute capability 9.0 only";
  const Corners corners = {
      {"gemm m=2048 n=2048 k=512 layout=NT", "bm=64 bn=64 bk=64 st=4 wg=1 gm=8"},
      {"gemm m=2000 n=3000 k=1000 layout=NT", "bm=128 bn=256 bk=64 st=4 wg=2 gm=4"},
      {"gemm m=1000 n=2048 k=4096 layout=NN", "bm=128 bn=128 bk=64 st=4 wg=1 kg=3"},
      {"gemm m=3000 n=1000 k=800 layout=TN", "bm=128 bn=64 bk=64 st=5 wg=1 gm=4 cm=2"},
      {"gemm m=17 n=24 k=40 layout=NT", "bm=64 bn=32 bk=64 st=2 wg=1"},
      // gemm.wgmma_ts (its tl; gemm.wgmma_ps parses none): 688 tiles of
      // 128 x 256 on 132 SMs, 5.2 rounds; 1000 x 3000 in 64 x 96 tiles.
      {"gemm m=2048 n=11008 k=4096 layout=NT",
       "bm=128 bn=256 bk=64 st=4 wg=2 gm=16 tl=4"},
      {"gemm m=1000 n=3000 k=1000 layout=NT",
       "bm=64 bn=96 bk=64 st=5 wg=1 gm=4 tl=3"},
      {"conv n=32 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=128 bn=64 bk=64 st=6 wg=1 gm=8"},
      {"conv n=8 h=28 w=28 c=128 k=256 r=1 s=1 pad=0 stride=2 dilation=1",
       "bm=64 bn=128 bk=64 st=4 wg=1 gm=4"},
  };
  for (const char* name : {"gemm.wgmma_ps", "conv.wgmma_ps", "gemm.wgmma_ts"}) {
    const KernelFamily& ps = **FindFamily(name);
    // gemm.wgmma_ts's base is gemm.wgmma_ps (the same kernel, tl = 1).
    const bool ts = std::string(name) == "gemm.wgmma_ts";
    const KernelFamily& base =
        **FindFamily(ts ? "gemm.wgmma_ps" : std::string(name).substr(0, 10));
    InEveryPrecision(ps, corners, /*bk_for=*/true,
                     [&](const std::string& context, const std::string& p) {
      if (context.compare(0, 4, name, 4) != 0) return;  // the other op
      const Problem problem(*ContextFromString(context));
      auto parsed = ps.Parse(p);
      if (!parsed.ok()) return;  // another family's corner (tl)
      if (!ps.CanImplement(problem, *parsed, profile_.Limits()).ok())
        return;  // tf32's layouts; gemm.wgmma_ts's corners have tl
      PreparedSample prepared;
      tuner::WorkResult r = RunMma(context, p, &prepared, ps);
      ExpectOk(r);
      EXPECT_EQ(r.family(), name);
      EXPECT_TRUE(prepared.kernel.persistent);
      Print("ps   " + context + " | " + p, r);
      const std::string base_p = p.substr(0, p.find(" tl="));
      tuner::WorkResult plain = RunMma(context, base_p, nullptr, base);
      ExpectOk(plain);
      Print("base " + context + " | " + base_p, plain);
    });
  }
}

// conv.wgmma_sk through the generic launcher (the workspace, the reduce
// entry as a dependent launch): issue 18's batch-1 layers, each beside
// conv.wgmma's kernel of the same tile (printed, no timing asserted), every
// precision; then candidates the sampler draws for this GPU (rule
// few_tiles with its SM count).
TEST_F(GpuWorkerTest, ConvSplitInEveryPrecisionMeasuresAndPassesTheCheck) {
  if (!IsSm90()) GTEST_SKIP() << "conv.wgmma_sk runs on compute capability 9.0 only";
  const KernelFamily& sk = **FindFamily("conv.wgmma_sk");
  const KernelFamily& base = **FindFamily("conv.wgmma");
  const Corners corners = {
      {"conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=8"},
      {"conv n=1 h=16 w=16 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=4"},
      {"conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=128 bn=64 bk=64 st=4 wg=1 gm=1 kg=3"},
      {"conv n=1 h=7 w=7 c=512 k=512 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=12"},
  };
  InEveryPrecision(sk, corners, /*bk_for=*/true,
                   [&](const std::string& context, const std::string& p) {
    PreparedSample prepared;
    tuner::WorkResult r = RunMma(context, p, &prepared, sk);
    ExpectOk(r);
    EXPECT_EQ(r.family(), "conv.wgmma_sk");
    EXPECT_GT(prepared.kernel.workspace_bytes, 0);
    EXPECT_FALSE(prepared.kernel.reduce_entry.empty());
    Print("sk   " + context + " | " + p, r);
    const std::string base_p = p.substr(0, p.find(" kg="));
    tuner::WorkResult plain = RunMma(context, base_p, nullptr, base);
    ExpectOk(plain);
    Print("base " + context + " | " + base_p, plain);
  });
}

// conv.wgmma_sc through the same launcher (the cluster fixed in the PTX,
// no workspace, one launch): the same layers with clusters of 8, 4 and 3
// splits, each beside conv.wgmma_sk's kernel of the same configuration
// (printed, no timing asserted), every precision.
TEST_F(GpuWorkerTest, ConvClusterSplitInEveryPrecisionMeasuresAndPassesTheCheck) {
  if (!IsSm90()) GTEST_SKIP() << "conv.wgmma_sc runs on compute capability 9.0 only";
  const KernelFamily& sc = **FindFamily("conv.wgmma_sc");
  const KernelFamily& sk = **FindFamily("conv.wgmma_sk");
  const Corners corners = {
      {"conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=16 bk=64 st=5 wg=1 gm=1 kg=8"},
      {"conv n=1 h=16 w=16 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=64 bn=32 bk=64 st=4 wg=1 gm=1 kg=4"},
      {"conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=128 bn=64 bk=64 st=4 wg=1 gm=1 kg=3"},
  };
  ClusterSplitInEveryPrecision(sc, sk, corners);
}

// gemm.wgmma_sc through the worker (the campaigns' path): the evaluation's
// lowest shape (1000^3, 64 tiles of 128 x 128 on 132 SMs) split in clusters
// of 2, a projection of 48 tiles and a decode-like product in clusters of
// 4, a covariance (one tile) in clusters of 8; beside gemm.wgmma's split
// through the workspace with the same parameters.
TEST_F(GpuWorkerTest, GemmClusterSplitInEveryPrecisionMeasuresAndPassesTheCheck) {
  if (!IsSm90()) GTEST_SKIP() << "gemm.wgmma_sc runs on compute capability 9.0 only";
  const KernelFamily& sc = **FindFamily("gemm.wgmma_sc");
  const KernelFamily& wgmma = **FindFamily("gemm.wgmma");
  const Corners corners = {
      {"gemm m=1000 n=1000 k=1000 layout=NT",
       "bm=128 bn=128 bk=64 st=4 wg=1 gm=8 kg=2 cm=1"},
      {"gemm m=512 n=768 k=3072 layout=NT",
       "bm=64 bn=128 bk=64 st=4 wg=1 gm=1 kg=4 cm=1"},
      {"gemm m=4096 n=16 k=4096 layout=NT",
       "bm=128 bn=16 bk=64 st=5 wg=1 gm=1 kg=4 cm=1"},
      {"gemm m=64 n=64 k=16384 layout=NT",
       "bm=64 bn=64 bk=64 st=6 wg=1 gm=1 kg=8 cm=1"},
  };
  ClusterSplitInEveryPrecision(sc, wgmma, corners);
}

TEST_F(GpuWorkerTest, AWrongKernelIsAWrongResultNeverATime) {
  // The kernel of an NT GEMM run as NN: it reads B transposed.
  PreparedSample nt;
  Run("gemm m=512 n=512 k=512 layout=NT dtype=fp32", {64, 64, 4, 4, 8, 1}, &nt);
  tuner::WorkItem nn;
  nn.set_seq(2);
  nn.set_context("gemm m=512 n=512 k=512 layout=NN dtype=fp32");
  for (int64_t v : {64, 64, 4, 4, 8, 2}) nn.add_block_shape(v);
  tuner::WorkResult r = RunWith(nn, nt);
  EXPECT_EQ(r.status(), "wrong_result") << r.error();
  EXPECT_EQ(r.median_s(), 0);
  EXPECT_THAT(r.error(), HasSubstr("times the fp32 bound"));
  Print("fp32 NT kernel as NN: " + r.error(), r);

  auto mma_item = [](const std::string& ctx, const std::string& params) {
    Candidate c;
    c.family = &Mma();
    c.ctx = *ContextFromString(ctx);
    c.params = *Mma().Parse(params);
    return WorkMessage(3, c).work();
  };
  const std::string params = "bm=64 bn=64 bk=32 wm=2 wn=2 st=3";
  // gemm.mma, three ways wrong: another layout, another precision (bf16
  // bits read as fp16), and a kernel generated for fewer rows: its grid of
  // 4 x 8 tiles, rastered over the 8 x 8 tiles of M = 512 (group_m 8),
  // covers tile columns 0-3 only, so half of C stays NaN. Each wrong item
  // has its own gm, so that the backend's kernel cache (keyed by family,
  // version, context and parameters) never hands one case another's
  // kernel.
  PreparedSample bf16_nt, bf16_m256;
  ExpectOk(RunMma("gemm m=512 n=512 k=512 layout=NT dtype=bf16", params, &bf16_nt));
  ExpectOk(RunMma("gemm m=256 n=512 k=512 layout=NN dtype=bf16", params, &bf16_m256));
  const struct {
    const char* what;
    std::string ctx;
    const PreparedSample& kernel;
    const char* gm;
    const char* message;
  } wrong[] = {
      {"bf16 NT kernel as NN", "gemm m=512 n=512 k=512 layout=NN dtype=bf16",
       bf16_nt, " gm=1", "times the bf16 bound"},
      {"bf16 kernel on fp16 inputs",
       "gemm m=512 n=512 k=512 layout=NT dtype=fp16", bf16_nt, " gm=2",
       "times the fp16 bound"},
      {"kernel for M = 256 run for M = 512",
       "gemm m=512 n=512 k=512 layout=NN dtype=bf16", bf16_m256, " gm=4",
       "131072 of 262144 outputs NaN"},
  };
  for (const auto& w : wrong) {
    SCOPED_TRACE(w.what);
    tuner::WorkResult r = RunWith(mma_item(w.ctx, params + w.gm), w.kernel);
    EXPECT_EQ(r.status(), "wrong_result") << r.error();
    EXPECT_TRUE(r.verified());
    EXPECT_EQ(r.median_s(), 0);
    EXPECT_EQ(r.repetitions(), 0);
    EXPECT_THAT(r.error(), HasSubstr(w.message));
    Print(std::string(w.what) + ": " + r.error(), r);
  }
}

}  // namespace
}  // namespace blocktune
