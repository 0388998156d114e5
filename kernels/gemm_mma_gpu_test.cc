// gemm.mma on the GPU (ctest label gpu) against a float64 reference
// computed from the same rounded inputs: random shapes from 1x1x1 through
// ragged and odd sizes, all four layouts, every precision, K_G > 1 (both
// split reductions, each launched twice: equal bits, counters zero again),
// beta zero and not, leading dimensions past the minimum and not multiples
// of 16 bytes (narrow copies). C (and the split-K workspace) is poisoned
// with NaN where beta == 0, so an element the kernel never wrote fails.
//
// Tolerance (DESIGN.md "Verification per precision"), per element:
//   |C - C_ref| <= c * u * |alpha| * sum_k |a_ik||b_kj|
//                  + u_out * |C_ref| + 2^-22 * |beta * C_old| + a_out
// where a_out is half the output type's subnormal spacing (fp16 2^-25:
// tiny results round absolutely, seen at K = 1 on the H100)
// with c = 1, u the unit roundoff of the math type (bf16 2^-8, fp16 2^-11,
// tf32 2^-11) and u_out that of the output type (bf16 2^-8, fp16 2^-11,
// fp32 2^-24). The test also prints the largest error relative to the
// fp32-accumulation scale K * 2^-24 * sum |a||b|, which shows how far under
// the bound an honest kernel stays (a lost K term would be ~1/K of the sum).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_mma_launch.h"
#include "kernels/test_numerics.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;

using test_numerics::Data;
using test_numerics::HostMatrix;
using test_numerics::OutputValue;
using test_numerics::Random;

struct Outcome {
  double worst_bound_ratio = 0;  // max err / bound
  double worst_acc_ratio = 0;    // max err / (K 2^-24 sum|a||b|)
};

struct Case {
  MmaProblem problem;
  MmaParams params;
  float alpha = 1, beta = 0;
};

StatusOr<Outcome> RunCase(const Case& c, std::mt19937& rng) {
  const GemmContext& g = c.problem.ctx;
  const MmaPrecision prec = c.problem.precision;
  const int es = ElementBytes(prec);
  const bool a_t = g.layout_a == Layout::kT, b_t = g.layout_b == Layout::kT;
  const int64_t lda = c.problem.Lda(), ldb = c.problem.Ldb(),
                ldc = c.problem.Ldc();
  const int64_t a_rows = a_t ? g.k : g.m, b_rows = b_t ? g.n : g.k;
  HostMatrix a = Random(prec, a_rows * lda, rng);
  HostMatrix b = Random(prec, b_rows * ldb, rng);
  HostMatrix cm = Random(prec, g.m * ldc, rng);
  // The old C the kernel reads is stored in the output type.
  std::vector<double> c_old(cm.value);
  if (prec == MmaPrecision::kTf32)
    for (size_t i = 0; i < c_old.size(); ++i) c_old[i] = cm.f[i];

  BT_ASSIGN_OR_RETURN(auto mma, LoadedMma::Create(c.problem, c.params));
  const int64_t ws = mma->kernel().workspace_bytes;
  BT_ASSIGN_OR_RETURN(DeviceBuffer da,
                      DeviceBuffer::Allocate(a.value.size() * es));
  BT_ASSIGN_OR_RETURN(DeviceBuffer db,
                      DeviceBuffer::Allocate(b.value.size() * es));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dc,
                      DeviceBuffer::Allocate(cm.value.size() * es + 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dw,
                      DeviceBuffer::Allocate(std::max<int64_t>(ws, 4)));
  BT_RETURN_IF_ERROR(da.CopyFromHost(Data(a), a.value.size() * es));
  BT_RETURN_IF_ERROR(db.CopyFromHost(Data(b), b.value.size() * es));
  if (c.beta == 0) {
    BT_RETURN_IF_ERROR(
        dc.Fill32(0x7fc07fc0));  // NaN in bf16, fp16 (7fc0) and fp32
  } else {
    BT_RETURN_IF_ERROR(dc.CopyFromHost(Data(cm), cm.value.size() * es));
  }
  // Partial sums poisoned, arrival counters (split_reduce 1) zero.
  BT_RETURN_IF_ERROR(dw.Fill32(0));
  const int64_t partial_words = mma->kernel().counter_offset > 0
                                    ? mma->kernel().counter_offset / 4
                                    : ws / 4;
  if (partial_words > 0)
    BT_RETURN_IF_ERROR(dw.Fill32Async(0x7fc00000, partial_words));
  MmaOperands ops;
  ops.a = da.address();
  ops.b = db.address();
  ops.c = dc.address();
  ops.workspace = ws > 0 ? dw.address() : 0;
  ops.alpha = c.alpha;
  ops.beta = c.beta;
  BT_RETURN_IF_ERROR(mma->Launch(ops));
  std::vector<uint8_t> out(cm.value.size() * es);
  BT_RETURN_IF_ERROR(dc.CopyToHost(out.data(), out.size()));
  if (c.params.kg > 1) {
    // Launch again on the same workspace: the tree's counters must be zero
    // again, and the K_G sum must give the same bits (deterministic).
    if (c.beta == 0)
      BT_RETURN_IF_ERROR(dc.Fill32(0x7fc07fc0));
    else
      BT_RETURN_IF_ERROR(dc.CopyFromHost(Data(cm), cm.value.size() * es));
    BT_RETURN_IF_ERROR(mma->Launch(ops));
    std::vector<uint8_t> again(out.size());
    BT_RETURN_IF_ERROR(dc.CopyToHost(again.data(), again.size()));
    if (again != out)
      return Internal("K_G > 1: a second launch gave different bits");
  }

  const test_numerics::MmaBound bound_of(prec);
  Outcome o;
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0, abs_sum = 0;
      for (int64_t l = 0; l < g.k; ++l) {
        const double av = a_t ? a.value[l * lda + i] : a.value[i * lda + l];
        const double bv = b_t ? b.value[j * ldb + l] : b.value[l * ldb + j];
        sum += av * bv;
        abs_sum += std::fabs(av * bv);
      }
      const double old = c_old[i * ldc + j];
      const double ref = c.alpha * sum + (c.beta == 0 ? 0.0 : c.beta * old);
      const double got = OutputValue(prec, out, i * ldc + j);
      const std::string where =
          "C[" + std::to_string(i) + "][" + std::to_string(j) +
          "] = " + std::to_string(got) + ", reference " + std::to_string(ref);
      if (!std::isfinite(got)) return Internal(where + " (not written?)");
      const double err = std::fabs(got - ref);
      const double bound =
          bound_of.Bound(c.alpha, abs_sum, ref, c.beta * old);
      if (err > bound) {
        return Internal(where + ": error " + std::to_string(err) +
                        " exceeds the bound " + std::to_string(bound));
      }
      o.worst_bound_ratio = std::max(o.worst_bound_ratio, err / bound);
      const double acc_scale =
          bound_of.AccumulationScale(g.k, c.alpha, abs_sum, ref);
      o.worst_acc_ratio = std::max(o.worst_acc_ratio, err / acc_scale);
    }
  }
  return o;
}

class GemmMmaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto driver = cuda::Driver::Get();
    if (!driver.ok()) GTEST_SKIP() << driver.status().message();
    auto ctx = cuda::Context::Open(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ctx_ = std::move(*ctx);
  }
  std::unique_ptr<cuda::Context> ctx_;
};

MmaParams RandomParams(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + rng() % v.size());
  };
  MmaParams p;
  p.bm = pick({16, 32, 64, 128, 256});
  p.bn = pick({8, 16, 32, 64, 128, 256});
  p.bk = pick({16, 32, 64, 256});
  p.warps_m = pick({1, 2, 4});
  p.warps_n = pick({1, 2, 4});
  p.stages = pick({2, 3, 4, 5});
  p.kg = pick({1, 1, 1, 2, 3, 8});
  p.group_m = pick({1, 2, 8});
  p.split_reduce = pick({0, 1});
  return p;
}

void RunPrecision(MmaPrecision prec, uint32_t seed, int cases) {
  std::mt19937 rng(seed);
  const int64_t align = 16 / ElementBytes(prec);
  auto round_up = [&](int64_t v) { return (v + align - 1) / align * align; };
  const int64_t dims[] = {1,  2,   7,   8,   15,  16,  17,  31, 33,
                          64, 100, 127, 129, 200, 255, 257, 300};
  const int64_t kdims[] = {1, 3, 8, 9, 16, 17, 40, 63, 64, 65, 130, 515, 1000};
  Outcome worst;
  int ran = 0;
  for (int n = 0; ran < cases && n < 50 * cases; ++n) {
    Case c;
    GemmContext& g = c.problem.ctx;
    g.m = dims[rng() % std::size(dims)];
    g.n = dims[rng() % std::size(dims)];
    g.k = kdims[rng() % std::size(kdims)];
    if (ran == 0) g.m = g.n = g.k = 1;
    g.layout_a = (ran / 2) % 2 ? Layout::kT : Layout::kN;
    g.layout_b = ran % 2 ? Layout::kT : Layout::kN;
    g.dtype = StorageType(prec);
    c.problem.precision = prec;
    const bool a_t = g.layout_a == Layout::kT, b_t = g.layout_b == Layout::kT;
    // Leading dimensions: 16-byte multiples, sometimes past the minimum
    // (cp.async.cg), or tight or a few elements past it (narrow copies).
    const int64_t extra = rng() % 3 == 0 ? align : 0;
    const bool tight = rng() % 3 == 0;
    const int64_t odd = tight ? rng() % 4 : 0;
    c.problem.lda =
        tight ? (a_t ? g.m : g.k) + odd : round_up(a_t ? g.m : g.k) + extra;
    c.problem.ldb =
        tight ? (b_t ? g.k : g.n) + odd : round_up(b_t ? g.k : g.n) + extra;
    c.problem.ldc = g.n + (rng() % 2 ? 3 : 0);
    c.params = RandomParams(rng);
    if (!ValidateMmaParams(c.params).ok() ||
        !CanImplementMma(c.problem, c.params).ok())
      continue;
    c.alpha = rng() % 2 ? 1.0f : -0.75f;
    c.beta = rng() % 2 ? 0.0f : 0.5f;
    auto o = RunCase(c, rng);
    ASSERT_TRUE(o.ok()) << ToString(prec) << " " << ToString(Context(g))
                        << " ld " << c.problem.Lda() << "/" << c.problem.Ldb()
                        << "/" << c.problem.Ldc() << " " << ToString(c.params)
                        << " alpha " << c.alpha << " beta " << c.beta << ": "
                        << o.status().ToString();
    worst.worst_bound_ratio =
        std::max(worst.worst_bound_ratio, o->worst_bound_ratio);
    worst.worst_acc_ratio = std::max(worst.worst_acc_ratio, o->worst_acc_ratio);
    ++ran;
  }
  EXPECT_EQ(ran, cases);
  std::printf(
      "%s: %d cases pass; max err/bound %.3g (c = 1), max err / "
      "(K 2^-24 sum|a||b| + u_out|ref|) %.3g\n",
      std::string(ToString(prec)).c_str(), ran, worst.worst_bound_ratio,
      worst.worst_acc_ratio);
}

TEST_F(GemmMmaGpuTest, Bf16RandomShapesMatchFloat64) {
  RunPrecision(MmaPrecision::kBf16, 17, 60);
}
TEST_F(GemmMmaGpuTest, Fp16RandomShapesMatchFloat64) {
  RunPrecision(MmaPrecision::kFp16, 18, 60);
}
TEST_F(GemmMmaGpuTest, Tf32RandomShapesMatchFloat64) {
  RunPrecision(MmaPrecision::kTf32, 19, 60);
}

// Larger shapes through the main loop many times, one per layout.
TEST_F(GemmMmaGpuTest, LargerShapesEveryLayout) {
  std::mt19937 rng(5);
  for (MmaPrecision prec : {MmaPrecision::kBf16, MmaPrecision::kTf32}) {
    for (int l = 0; l < 4; ++l) {
      Case c;
      GemmContext& g = c.problem.ctx;
      g.m = 304;
      g.n = 264;
      g.k = 1032;
      g.layout_a = l / 2 ? Layout::kT : Layout::kN;
      g.layout_b = l % 2 ? Layout::kT : Layout::kN;
      g.dtype = StorageType(prec);
      c.problem.precision = prec;
      c.params = *MmaParamsFromString(
          l % 2 ? "bm=128 bn=64 bk=32 wm=2 wn=2 st=4 kg=1 gm=4"
                : "bm=64 bn=128 bk=64 wm=2 wn=4 st=3 kg=2 gm=2");
      if (prec == MmaPrecision::kTf32) c.params.bk = 32;
      c.beta = 0.25f;
      c.params.split_reduce = l / 2;
      auto o = RunCase(c, rng);
      ASSERT_TRUE(o.ok()) << ToString(prec) << " " << ToString(Context(g))
                          << " " << ToString(c.params) << ": "
                          << o.status().ToString();
    }
  }
}

// The main loop's two halves (interior stages without bounds, then the
// general ones) and its shapes: one k step per stage (bf16 BK 16, the
// body emitted twice), tf32 B contiguous along N through the permuted
// 16-byte fragment loads, 8-warp programs; M and N leave ragged edge
// programs beside interior ones, K a partial last stage.
TEST_F(GemmMmaGpuTest, InteriorAndEdgeStages) {
  std::mt19937 rng(7);
  struct Spec {
    MmaPrecision prec;
    const char* params;
  };
  const Spec specs[] = {
      {MmaPrecision::kBf16, "bm=64 bn=64 bk=16 wm=2 wn=2 st=3 kg=1 gm=1"},
      {MmaPrecision::kBf16, "bm=128 bn=256 bk=32 wm=2 wn=4 st=3 kg=1 gm=2"},
      {MmaPrecision::kFp16, "bm=128 bn=128 bk=64 wm=2 wn=2 st=3 kg=1 gm=1"},
      {MmaPrecision::kTf32, "bm=128 bn=128 bk=32 wm=2 wn=4 st=4 kg=1 gm=1"},
      {MmaPrecision::kTf32, "bm=64 bn=128 bk=16 wm=2 wn=2 st=5 kg=2 gm=1"},
  };
  for (const Spec& spec : specs) {
    for (int l = 0; l < 4; ++l) {
      Case c;
      GemmContext& g = c.problem.ctx;
      g.m = 392;
      g.n = 520;
      g.k = 1000;
      g.layout_a = l / 2 ? Layout::kT : Layout::kN;
      g.layout_b = l % 2 ? Layout::kT : Layout::kN;
      g.dtype = StorageType(spec.prec);
      c.problem.precision = spec.prec;
      c.params = *MmaParamsFromString(spec.params);
      c.beta = 0.5f;
      ASSERT_TRUE(CanImplementMma(c.problem, c.params).ok());
      auto o = RunCase(c, rng);
      ASSERT_TRUE(o.ok()) << ToString(spec.prec) << " "
                          << ToString(Context(g)) << " "
                          << ToString(c.params) << ": "
                          << o.status().ToString();
    }
  }
}

// Leading dimensions that are not multiples of 16 bytes: 2-, 4- and 8-byte
// copies, every layout, the 1023 x 4097 x 515 NN shape scaled down
// in M and N (the float64 reference is on the CPU).
TEST_F(GemmMmaGpuTest, UnalignedLeadingDimensions) {
  std::mt19937 rng(23);
  int ran = 0;
  for (MmaPrecision prec : {MmaPrecision::kBf16, MmaPrecision::kTf32}) {
    for (int l = 0; l < 4; ++l) {
      for (int64_t pad : {0, 1, 2, 4}) {
        Case c;
        GemmContext& g = c.problem.ctx;
        g.m = 255;
        g.n = 129;
        g.k = 515;
        g.layout_a = l / 2 ? Layout::kT : Layout::kN;
        g.layout_b = l % 2 ? Layout::kT : Layout::kN;
        g.dtype = StorageType(prec);
        c.problem.precision = prec;
        const bool a_t = g.layout_a == Layout::kT,
                   b_t = g.layout_b == Layout::kT;
        c.problem.lda = (a_t ? g.m : g.k) + pad;
        c.problem.ldb = (b_t ? g.k : g.n) + pad;
        c.params = *MmaParamsFromString(
            pad % 2 ? "bm=128 bn=64 bk=32 wm=2 wn=2 st=4 kg=1 gm=4"
                    : "bm=64 bn=64 bk=32 wm=2 wn=2 st=3 kg=3 gm=2 sk=1");
        c.beta = pad == 2 ? 0.5f : 0.0f;
        auto o = RunCase(c, rng);
        ASSERT_TRUE(o.ok()) << ToString(prec) << " " << ToString(Context(g))
                            << " ld " << c.problem.Lda() << "/"
                            << c.problem.Ldb() << " " << ToString(c.params)
                            << ": " << o.status().ToString();
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, 32);
}

// The split-K tree and the reduce entry on the skinny shapes:
// several K_G (one, two and three tree levels, groups cut short), each
// launched twice with equal bits (RunCase).
TEST_F(GemmMmaGpuTest, SplitKIsDeterministic) {
  std::mt19937 rng(29);
  struct Split {
    MmaPrecision prec;
    int64_t m, n, k;
    const char* params;
  };
  const Split splits[] = {
      {MmaPrecision::kBf16, 4096, 1, 4096,
       "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=4 gm=1 sk=1"},
      {MmaPrecision::kBf16, 4096, 16, 4096,
       "bm=32 bn=16 bk=128 wm=2 wn=1 st=4 kg=4 gm=1 sk=0"},
      {MmaPrecision::kBf16, 4096, 4, 4096,
       "bm=16 bn=8 bk=256 wm=1 wn=1 st=4 kg=2 gm=1 sk=1"},
      {MmaPrecision::kBf16, 1024, 16, 1024,
       "bm=16 bn=8 bk=64 wm=1 wn=1 st=4 kg=3 gm=1 sk=1"},
      {MmaPrecision::kBf16, 64, 64, 16384,
       "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=64 gm=1 sk=1"},
      {MmaPrecision::kBf16, 64, 64, 16384,
       "bm=16 bn=64 bk=64 wm=1 wn=4 st=4 kg=100 gm=1 sk=1"},
      {MmaPrecision::kTf32, 64, 64, 16384,
       "bm=16 bn=64 bk=32 wm=1 wn=4 st=5 kg=128 gm=1 sk=1"},
      {MmaPrecision::kTf32, 64, 64, 16384,
       "bm=32 bn=64 bk=64 wm=2 wn=2 st=3 kg=20 gm=1 sk=0"},
      {MmaPrecision::kFp16, 300, 40, 3000,
       "bm=64 bn=32 bk=32 wm=2 wn=2 st=3 kg=9 gm=1 sk=1"},
  };
  for (const Split& sp : splits) {
    Case c;
    GemmContext& g = c.problem.ctx;
    g.m = sp.m;
    g.n = sp.n;
    g.k = sp.k;
    g.layout_a = Layout::kN;
    g.layout_b = Layout::kT;
    g.dtype = StorageType(sp.prec);
    c.problem.precision = sp.prec;
    c.params = *MmaParamsFromString(sp.params);
    c.beta = sp.n == 40 ? 0.5f : 0.0f;
    auto o = RunCase(c, rng);
    ASSERT_TRUE(o.ok()) << ToString(sp.prec) << " " << ToString(Context(g))
                        << " " << ToString(c.params) << ": "
                        << o.status().ToString();
  }
}

}  // namespace
}  // namespace blocktune
