// The generated GEMM and convolution against a float64 reference on the
// GPU (ctest label gpu): random shapes, tiny and ragged ones, all four
// layouts, leading dimensions past the minimum, K_G > 1, beta zero and not;
// convolutions with padding, stride and dilation. The output is
// poisoned with NaN before every run where beta is zero, so an element the
// kernel never wrote fails the check.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_launch.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;

struct Case {
  GemmContext ctx;
  BlockShape xb;
  int64_t lda, ldb, ldc;
  float alpha, beta;
};

// Copies the inputs to the GPU, runs `kernel` with `ops`' scalars and
// leading dimensions, and returns C. C starts as `c`, or as NaN where
// beta == 0 so that an element never written fails the check; the split-K
// workspace starts as NaN too.
StatusOr<std::vector<float>> RunOnGpu(const LoadedGemm& kernel,
                                      const std::vector<float>& a,
                                      const std::vector<float>& b,
                                      const std::vector<float>& c,
                                      GemmOperands ops) {
  const int64_t workspace = kernel.kernel().workspace_bytes;
  BT_ASSIGN_OR_RETURN(DeviceBuffer da, DeviceBuffer::Allocate(a.size() * 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer db, DeviceBuffer::Allocate(b.size() * 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dc, DeviceBuffer::Allocate(c.size() * 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dw, DeviceBuffer::Allocate(workspace));
  BT_RETURN_IF_ERROR(da.CopyFromHost(a.data(), a.size() * 4));
  BT_RETURN_IF_ERROR(db.CopyFromHost(b.data(), b.size() * 4));
  if (ops.beta == 0) {
    BT_RETURN_IF_ERROR(dc.Fill32(0x7fc00000));  // NaN
  } else {
    BT_RETURN_IF_ERROR(dc.CopyFromHost(c.data(), c.size() * 4));
  }
  if (workspace > 0) BT_RETURN_IF_ERROR(dw.Fill32(0x7fc00000));
  ops.a = da.address();
  ops.b = db.address();
  ops.c = dc.address();
  ops.workspace = dw.address();
  BT_RETURN_IF_ERROR(kernel.Launch(ops));
  std::vector<float> out(c.size());
  BT_RETURN_IF_ERROR(dc.CopyToHost(out.data(), out.size() * 4));
  return out;
}

// Returns ||C - ref|| / ||ref|| (Frobenius), or a failed Status.
StatusOr<double> RunCase(const Case& c, std::mt19937& rng) {
  const GemmContext& g = c.ctx;
  const bool a_t = g.layout_a == Layout::kT, b_t = g.layout_b == Layout::kT;
  const int64_t a_rows = a_t ? g.k : g.m, b_rows = b_t ? g.n : g.k;
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> a(a_rows * c.lda), b(b_rows * c.ldb), cm(g.m * c.ldc);
  for (float& v : a) v = uniform(rng);
  for (float& v : b) v = uniform(rng);
  for (float& v : cm) v = uniform(rng);

  BT_ASSIGN_OR_RETURN(auto gemm, LoadedGemm::Create(g, c.xb, "sm_90"));
  GemmOperands ops;
  ops.lda = c.lda;
  ops.ldb = c.ldb;
  ops.ldc = c.ldc;
  ops.alpha = c.alpha;
  ops.beta = c.beta;
  BT_ASSIGN_OR_RETURN(std::vector<float> out, RunOnGpu(*gemm, a, b, cm, ops));

  double err = 0, norm = 0;
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < g.k; ++l) {
        double av = a_t ? a[l * c.lda + i] : a[i * c.lda + l];
        double bv = b_t ? b[j * c.ldb + l] : b[l * c.ldb + j];
        sum += av * bv;
      }
      double ref = c.alpha * sum + (c.beta == 0 ? 0.0 : c.beta * cm[i * c.ldc + j]);
      double got = out[i * c.ldc + j];
      if (!std::isfinite(got)) {
        return Internal("C[" + std::to_string(i) + "][" + std::to_string(j) +
                        "] = " + std::to_string(got) + " (not written?)");
      }
      err += (got - ref) * (got - ref);
      norm += ref * ref;
    }
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

class GemmGpuTest : public ::testing::Test {
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

// 160 random GEMMs against float64; `pipelined`: each with ST in 2..8
// (cp.async stages), else ST = 1.
void CheckRandomGemms(uint32_t seed, bool pipelined) {
  std::mt19937 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + rng() % v.size());
  };
  const BlockShape odd_shapes[] = {{48, 40, 3, 5, 3, 1}, {96, 24, 6, 2, 5, 3},
                                   {1, 32, 1, 1, 7, 1}, {64, 1, 2, 1, 4, 2}};
  KernelLimits limits;
  int cases = 0, vector_cases = 0;
  double worst = 0;
  while (cases < 160) {
    Case c;
    const int size_class = rng() % 4;
    auto dim = [&]() -> int64_t {
      switch (size_class) {
        case 0: return 1 + rng() % 8;          // tiny
        case 1: return 1 + rng() % 300;        // ragged
        case 2: return 64 * (1 + rng() % 4);   // whole tiles
        default: return 100 + rng() % 200;
      }
    };
    c.ctx.m = dim();
    c.ctx.n = dim();
    c.ctx.k = rng() % 5 == 0 ? 1 + rng() % 2000 : dim();
    if (cases == 0) c.ctx.m = c.ctx.n = c.ctx.k = 1;
    c.ctx.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
    c.ctx.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
    if (rng() % 6 == 0) {
      c.xb = odd_shapes[rng() % 4];
    } else {
      c.xb.ml = pick({16, 32, 64, 128});
      c.xb.nl = pick({16, 32, 64, 128});
      c.xb.ms = std::min<int64_t>(c.xb.ml, pick({1, 2, 4, 8}));
      c.xb.ns = std::min<int64_t>(c.xb.nl, pick({1, 2, 4, 8}));
      c.xb.u = pick({1, 2, 4, 8, 16});
      c.xb.kg = pick({1, 1, 2, 3, 4, 8, 16, 37, 64});  // 1, 2, 4, 8 reduce lanes
    }
    if (pipelined) c.xb.st = pick({2, 3, 4, 5, 8});
    if (!Validate(c.xb).ok() || !CanImplement(c.ctx, c.xb, limits).ok())
      continue;
    const bool a_t = c.ctx.layout_a == Layout::kT;
    const bool b_t = c.ctx.layout_b == Layout::kT;
    c.lda = (a_t ? c.ctx.m : c.ctx.k) + rng() % 4;
    c.ldb = (b_t ? c.ctx.k : c.ctx.n) + rng() % 4;
    // Kernels with vector loads need leading dimensions that are multiples
    // of 4; round up, keeping some past the minimum.
    auto kernel = GenerateGemm(c.ctx, c.xb);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    if (kernel->vector_a > 1) c.lda = (c.lda + 3) / 4 * 4;
    if (kernel->vector_b > 1) c.ldb = (c.ldb + 3) / 4 * 4;
    vector_cases += kernel->vector_a > 1 || kernel->vector_b > 1;
    c.ldc = c.ctx.n + rng() % 4;
    c.alpha = rng() % 2 ? 1.f : 0.75f;
    c.beta = rng() % 3 == 0 ? -0.5f : 0.f;
    auto err = RunCase(c, rng);
    std::string what = ToString(Context(c.ctx)) + " " + ToString(c.xb) +
                       " lda=" + std::to_string(c.lda) +
                       " beta=" + std::to_string(c.beta);
    ASSERT_TRUE(err.ok()) << what << ": " << err.status().ToString();
    EXPECT_LT(*err, 1e-5) << what;
    worst = std::max(worst, *err);
    ++cases;
  }
  std::cout << cases << " cases (" << vector_cases
            << " with vector loads), worst relative error " << worst << "\n";
  EXPECT_GT(vector_cases, 20);
}

// The largest thread tiles, which the register estimate accepts where the
// operands load as vectors (M_S*N_S = 128: 8x16 and 16x8), against float64:
// ragged M and N, every layout, K_G splits, ST 1 and 3.
TEST_F(GemmGpuTest, LargeThreadTilesMatchFloat64) {
  std::mt19937 rng(23);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + rng() % v.size());
  };
  KernelLimits limits;
  int cases = 0, draws = 0;
  double worst = 0;
  while (cases < 32) {
    ASSERT_LT(++draws, 100000) << "the rules refuse every large tile";
    Case c;
    c.ctx.m = 4 * (1 + rng() % 100);
    c.ctx.n = 4 * (1 + rng() % 100);
    c.ctx.k = 4 * (1 + rng() % 150);
    c.ctx.layout_a = rng() % 2 ? Layout::kT : Layout::kN;
    c.ctx.layout_b = rng() % 2 ? Layout::kT : Layout::kN;
    c.xb.ms = pick({8, 16});
    c.xb.ns = c.xb.ms == 8 ? 16 : 8;
    c.xb.ml = pick({64, 128, 256});
    c.xb.nl = pick({64, 128, 256});
    c.xb.u = pick({4, 8});
    c.xb.kg = pick({1, 1, 2, 4});
    c.xb.st = pick({1, 1, 3});
    if (!Validate(c.xb).ok() || !CanImplement(c.ctx, c.xb, limits).ok())
      continue;
    const bool a_t = c.ctx.layout_a == Layout::kT;
    const bool b_t = c.ctx.layout_b == Layout::kT;
    c.lda = (a_t ? c.ctx.m : c.ctx.k) + 4 * (rng() % 2);
    c.ldb = (b_t ? c.ctx.k : c.ctx.n) + 4 * (rng() % 2);
    c.ldc = c.ctx.n + rng() % 4;
    c.alpha = 1.f;
    c.beta = rng() % 3 == 0 ? -0.5f : 0.f;
    auto err = RunCase(c, rng);
    const std::string what = ToString(Context(c.ctx)) + " " + ToString(c.xb);
    ASSERT_TRUE(err.ok()) << what << ": " << err.status().ToString();
    EXPECT_LT(*err, 1e-5) << what;
    worst = std::max(worst, *err);
    ++cases;
  }
  std::cout << cases << " large-tile cases, worst relative error " << worst
            << "\n";
}

TEST_F(GemmGpuTest, RandomShapesLayoutsAndSplitsMatchFloat64) {
  CheckRandomGemms(7, /*pipelined=*/false);
}

TEST_F(GemmGpuTest, CpAsyncStagesMatchFloat64) {
  CheckRandomGemms(17, /*pipelined=*/true);
}

// Output of a convolution against float64; NaN-poisoned when beta == 0.
StatusOr<double> RunConvCase(const ConvContext& cv, const BlockShape& xb,
                             float alpha, float beta, std::mt19937& rng) {
  const int64_t P = cv.P(), Q = cv.Q();
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> x(cv.n * cv.h * cv.w * cv.c), f(cv.k * cv.r * cv.s * cv.c),
      y(cv.n * P * Q * cv.k);
  for (float& v : x) v = uniform(rng);
  for (float& v : f) v = uniform(rng);
  for (float& v : y) v = uniform(rng);

  BT_ASSIGN_OR_RETURN(auto conv, LoadedGemm::Create(cv, xb, "sm_90"));
  GemmOperands ops;
  ops.alpha = alpha;
  ops.beta = beta;
  BT_ASSIGN_OR_RETURN(std::vector<float> out, RunOnGpu(*conv, x, f, y, ops));

  double err = 0, norm = 0;
  for (int64_t n = 0; n < cv.n; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        for (int64_t k = 0; k < cv.k; ++k) {
          double sum = 0;
          for (int64_t r = 0; r < cv.r; ++r) {
            const int64_t h = p * cv.stride_h - cv.pad_h + r * cv.dilation_h;
            if (h < 0 || h >= cv.h) continue;
            for (int64_t s = 0; s < cv.s; ++s) {
              const int64_t w = q * cv.stride_w - cv.pad_w + s * cv.dilation_w;
              if (w < 0 || w >= cv.w) continue;
              const float* xp = &x[((n * cv.h + h) * cv.w + w) * cv.c];
              const float* fp = &f[((k * cv.r + r) * cv.s + s) * cv.c];
              for (int64_t c = 0; c < cv.c; ++c) sum += double(xp[c]) * fp[c];
            }
          }
          const int64_t i = ((n * P + p) * Q + q) * cv.k + k;
          const double ref = alpha * sum + (beta == 0 ? 0.0 : beta * y[i]);
          const double got = out[i];
          if (!std::isfinite(got)) {
            return Internal("y[" + std::to_string(i) + "] = " +
                            std::to_string(got) + " (not written?)");
          }
          err += (got - ref) * (got - ref);
          norm += ref * ref;
        }
  return std::sqrt(err / std::max(norm, 1e-300));
}

void CheckRandomConvolutions(uint32_t seed, bool pipelined) {
  std::mt19937 rng(seed);
  auto pick = [&](std::initializer_list<int64_t> v) {
    return *(v.begin() + rng() % v.size());
  };
  KernelLimits limits;
  int cases = 0;
  double worst = 0;
  while (cases < 120) {
    ConvContext cv;
    cv.n = pick({1, 1, 2, 3});
    cv.h = 1 + rng() % 20;
    cv.w = 1 + rng() % 20;
    cv.c = pick({1, 2, 3, 5, 8, 16, 17, 32, 64});
    cv.k = pick({1, 3, 8, 16, 31, 64});
    cv.r = pick({1, 2, 3, 5});
    cv.s = pick({1, 2, 3, 5});
    cv.pad_h = rng() % (cv.r + 1);
    cv.pad_w = rng() % (cv.s + 1);
    cv.stride_h = pick({1, 1, 2, 3});
    cv.stride_w = pick({1, 1, 2, 3});
    cv.dilation_h = pick({1, 1, 2});
    cv.dilation_w = pick({1, 1, 2});
    if (cases == 0) {  // the smallest: one pixel, one channel, 1x1 filter
      cv = ConvContext{};
      cv.n = cv.h = cv.w = cv.c = cv.k = cv.r = cv.s = 1;
    }
    if (!Validate(cv).ok()) continue;
    BlockShape xb;
    xb.ml = pick({16, 32, 64, 128});
    xb.nl = pick({8, 16, 32, 64});
    xb.ms = std::min<int64_t>(xb.ml, pick({1, 2, 4, 8}));
    xb.ns = std::min<int64_t>(xb.nl, pick({1, 2, 4, 8}));
    xb.u = pick({1, 2, 4, 8, 16});
    xb.kg = pick({1, 1, 2, 3, 4, 16, 37});
    if (pipelined) xb.st = pick({2, 3, 4, 6});
    if (!Validate(xb).ok() || !CanImplement(cv, xb, limits).ok()) continue;
    const float alpha = rng() % 2 ? 1.f : 0.75f;
    const float beta = rng() % 3 == 0 ? -0.5f : 0.f;
    auto err = RunConvCase(cv, xb, alpha, beta, rng);
    const std::string what = ToString(Context(cv)) + " " + ToString(xb) +
                             " beta=" + std::to_string(beta);
    ASSERT_TRUE(err.ok()) << what << ": " << err.status().ToString();
    EXPECT_LT(*err, 1e-5) << what;
    worst = std::max(worst, *err);
    ++cases;
  }
  std::cout << cases << " convolution cases, worst relative error " << worst
            << "\n";
}

TEST_F(GemmGpuTest, ConvolutionsWithPadStrideDilationMatchFloat64) {
  CheckRandomConvolutions(11, /*pipelined=*/false);
}

TEST_F(GemmGpuTest, ConvolutionCpAsyncStagesMatchFloat64) {
  CheckRandomConvolutions(23, /*pipelined=*/true);
}

}  // namespace
}  // namespace blocktune
