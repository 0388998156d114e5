// gemm.gemv and gemm.ffma_k (the fp32 families for NT products) on the
// GPU (ctest label gpu) against a float64 reference,
// launched the way the worker launches every family (tuner/kernel_launch.h
// LoadedKernel: the entries' named parameters, K_G's reduce entry): random
// skinny shapes with N = 1 .. 128 (most of them 1 .. 16), NT and NN of one
// column, M that is no multiple of a program's rows, N that is no multiple
// of a program's columns, K that is no multiple of a chunk (32*V*U),
// padded lda, ldb and ldc, every value of R, NC, W, WN, V, U, PF and K_G,
// beta zero and not; and the covariance and MLP shapes of issue 18. C
// (where beta == 0) and the workspace are poisoned with NaN first, so an
// element the kernel never wrote fails. The bound is gemm.ffma's
// (kernels/gemm_gpu_test.cc): relative Frobenius error below 1e-5.
// gemm.ffma_k: random NT shapes (N 1 .. 16 or up to 300; M, N and K
// ragged against its tiles and stages; rows padded to 4 floats), every
// value of every parameter, beta zero and not, and the same covariance and
// MLP shapes.
// Skips with a message where there is no GPU or no libcuda.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <set>
#include <vector>

#include "kernels/cuda_driver.h"
#include "kernels/family.h"
#include "tuner/kernel_launch.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;

struct Case {
  Problem problem;  // leading dimensions explicit
  Params params;
  float alpha = 1, beta = 0;
};

// Runs the case and returns ||C - ref|| / ||ref||, or why it failed.
StatusOr<double> RunCase(const KernelFamily& f, const Case& c,
                         std::mt19937& rng) {
  const GemmContext& g = std::get<GemmContext>(c.problem.ctx);
  const int64_t lda = c.problem.lda, ldb = c.problem.ldb, ldc = c.problem.ldc;
  const bool b_t = g.layout_b == Layout::kT;
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> a(g.m * lda), b((b_t ? g.n : g.k) * ldb), cm(g.m * ldc);
  for (float& v : a) v = uniform(rng);
  for (float& v : b) v = uniform(rng);
  for (float& v : cm) v = uniform(rng);

  BT_ASSIGN_OR_RETURN(GeneratedKernel kernel,
                      f.Generate(c.problem, c.params, "sm_90"));
  const int64_t workspace = kernel.workspace_bytes;
  BT_ASSIGN_OR_RETURN(auto loaded,
                      LoadedKernel::Load(c.problem, kernel, kernel.ptx,
                                         f.Shape(c.problem, c.params).split_k));
  BT_ASSIGN_OR_RETURN(DeviceBuffer da, DeviceBuffer::Allocate(a.size() * 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer db, DeviceBuffer::Allocate(b.size() * 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dc, DeviceBuffer::Allocate(cm.size() * 4));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dw,
                      DeviceBuffer::Allocate(std::max<int64_t>(workspace, 4)));
  BT_RETURN_IF_ERROR(da.CopyFromHost(a.data(), a.size() * 4));
  BT_RETURN_IF_ERROR(db.CopyFromHost(b.data(), b.size() * 4));
  if (c.beta == 0) {
    BT_RETURN_IF_ERROR(dc.Fill32(0x7fc00000));  // NaN
  } else {
    BT_RETURN_IF_ERROR(dc.CopyFromHost(cm.data(), cm.size() * 4));
  }
  BT_RETURN_IF_ERROR(dw.Fill32(0x7fc00000));
  KernelOperands ops;
  ops.a = da.address();
  ops.b = db.address();
  ops.c = dc.address();
  ops.workspace = workspace > 0 ? dw.address() : 0;
  ops.alpha = c.alpha;
  ops.beta = c.beta;
  BT_RETURN_IF_ERROR(loaded->Launch(ops));
  std::vector<float> out(cm.size());
  BT_RETURN_IF_ERROR(dc.CopyToHost(out.data(), out.size() * 4));

  double err = 0, norm = 0;
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < g.k; ++l) {
        const double bv = b_t ? b[j * ldb + l] : b[l * ldb + j];
        sum += double(a[i * lda + l]) * bv;
      }
      const double ref =
          c.alpha * sum + (c.beta == 0 ? 0.0 : c.beta * cm[i * ldc + j]);
      const double got = out[i * ldc + j];
      if (!std::isfinite(got)) {
        return Internal("C[" + std::to_string(i) + "][" + std::to_string(j) +
                        "] = " + std::to_string(got) + " (not written?)");
      }
      err += (got - ref) * (got - ref);
      norm += ref * ref;
    }
    // The padding past N must be left alone (NaN where beta == 0).
    for (int64_t j = g.n; j < ldc && c.beta != 0; ++j)
      if (out[i * ldc + j] != cm[i * ldc + j])
        return Internal("C[" + std::to_string(i) + "][" + std::to_string(j) +
                        "] past N was written");
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

// The case as a failure message names it.
std::string Describe(const KernelFamily& f, const Case& c) {
  return ToString(c.problem.ctx) + " " + f.Format(c.params) +
         " lda=" + std::to_string(c.problem.lda) +
         " ldb=" + std::to_string(c.problem.ldb) +
         " ldc=" + std::to_string(c.problem.ldc) +
         " beta=" + std::to_string(c.beta);
}

class GemvGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto driver = cuda::Driver::Get();
    if (!driver.ok() || (*driver)->device_count() == 0) {
      GTEST_SKIP() << (driver.ok() ? "no GPU: no device"
                                   : driver.status().message());
    }
    auto ctx = cuda::Context::Open(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ctx_ = std::move(*ctx);
  }
  std::unique_ptr<cuda::Context> ctx_;
};

TEST_F(GemvGpuTest, RandomDecodeShapesMatchFloat64) {
  auto found = FindFamily("gemm.gemv");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  const KernelFamily& f = **found;
  const int r = f.ParamIndex("R"), nc = f.ParamIndex("NC"),
            w = f.ParamIndex("W"), wn = f.ParamIndex("WN"),
            v = f.ParamIndex("V"), u = f.ParamIndex("U"),
            pf = f.ParamIndex("PF"), kg = f.ParamIndex("KG");
  ASSERT_TRUE(r >= 0 && nc >= 0 && w >= 0 && wn >= 0 && v >= 0 && u >= 0 &&
              pf >= 0 && kg >= 0);
  const std::vector<int> all = {r, nc, w, wn, v, u, pf, kg};
  auto value = [&](int param, int64_t i) {
    const auto& values = f.params()[param].values;
    return values[i % values.size()];
  };
  std::mt19937 rng(2027);
  const KernelLimits limits;  // the H100's; the H200's are the same
  std::set<std::pair<int, int64_t>> seen;  // (parameter, value) run
  int cases = 0, nn = 0, split = 0, tiled = 0, refused = 0;
  double worst = 0;
  for (int64_t i = 0; cases < 240; ++i) {
    ASSERT_LT(i, 20000) << "the rules refuse too many cases";
    Case c;
    GemmContext g;
    g.dtype = DType::kFp32;
    g.layout_a = Layout::kN;
    g.n = rng() % 4 ? 1 + rng() % 16 : 1 + rng() % 128;
    g.layout_b = Layout::kT;
    if (rng() % 5 == 0) {  // NN: one contiguous column
      g.n = 1;
      g.layout_b = Layout::kN;
    }
    // M: tiny, ragged, or a few thousand; never all multiples of R*W.
    switch (rng() % 3) {
      case 0:
        g.m = 1 + rng() % 40;
        break;
      case 1:
        g.m = 1 + rng() % 700;
        break;
      default:
        g.m = 1000 + rng() % 1200;
        break;
    }
    // K: below one chunk, ragged, or several chunks plus a tail.
    switch (rng() % 3) {
      case 0:
        g.k = 1 + rng() % 100;
        break;
      case 1:
        g.k = 1 + rng() % 3000;
        break;
      default:
        g.k = 512 * (1 + rng() % 6) + rng() % 512;
        break;
    }
    if (i == 0) g.m = g.n = g.k = 1;
    if (i == 1) {  // a decode projection
      g.m = 4096;
      g.n = 1;
      g.k = 4096;
    }
    if (i % 40 == 2) {  // a covariance (issue 18's shape, shorter)
      g.m = g.n = 64;
      g.k = 16384 + rng() % 3;
    }
    if (i % 40 == 3) {  // an MLP layer of 16 columns
      g.m = 1024 + rng() % 3;
      g.n = 16;
      g.k = 1024 + rng() % 5;
    }
    // Every value of every parameter, in changing combinations.
    c.params = f.DefaultCandidates().front();
    c.params[r] = value(r, i);
    c.params[nc] = value(nc, i / 7 + rng() % 5);
    c.params[w] = value(w, i / 3);
    c.params[wn] = value(wn, i / 11 + rng() % 4);
    c.params[v] = value(v, i / 9 + i);
    c.params[u] = value(u, i / 2);
    c.params[pf] = rng() % 2;
    c.params[kg] = rng() % 3 ? value(kg, i / 5 + rng() % 7) : 1;
    if (g.layout_b == Layout::kN) {  // one column: one per warp
      c.params[nc] = 1;
      c.params[wn] = 1;
    }
    const int64_t vec = c.params[v];
    auto up = [&](int64_t x) { return (x + vec - 1) / vec * vec; };
    c.problem = Problem(g);
    // Padded rows, multiples of V (rule vector_ld), some tight.
    c.problem.lda = up(g.k + (rng() % 3 ? rng() % 9 : 0));
    c.problem.ldb = g.layout_b == Layout::kN ? 1 : up(g.k + rng() % 9);
    c.problem.ldc = g.n + rng() % 4;
    c.alpha = rng() % 2 ? 1.f : 0.75f;
    c.beta = rng() % 3 == 0 ? -0.5f : 0.f;
    if (!f.CanImplement(c.problem, c.params, limits).ok()) {
      ++refused;
      continue;
    }
    const std::string what = Describe(f, c);
    auto err = RunCase(f, c, rng);
    ASSERT_TRUE(err.ok()) << what << ": " << err.status().ToString();
    EXPECT_LT(*err, 1e-5) << what;
    worst = std::max(worst, *err);
    for (int p : all) seen.insert({p, c.params[p]});
    nn += g.layout_b == Layout::kN;
    split += c.params[kg] > 1;
    const ConfigShape shape = f.Shape(c.problem, c.params);
    tiled += shape.tile_n < g.n;
    ++cases;
  }
  for (int p : all)
    for (int64_t x : f.params()[p].values)
      EXPECT_TRUE(seen.count({p, x}))
          << f.params()[p].name << "=" << x << " never ran";
  EXPECT_GT(nn, 5);
  EXPECT_GT(split, 20);
  EXPECT_GT(tiled, 20);
  std::cout << cases << " cases (" << nn << " NN, " << split
            << " split over K, " << tiled << " with several column tiles, "
            << refused
            << " refused by the rules), worst relative error " << worst << "\n";
}

// gemm.ffma_k's random NT cases; `packed` (gemm.ffma_kpk): rows that are
// no multiple of 4 floats, A's, B's or both, the rest padded as for
// gemm.ffma_k.
void RandomNtCasesMatchFloat64(const char* family,
                               bool packed) {
  auto found = FindFamily(family);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  const KernelFamily& f = **found;
  const int n_params = static_cast<int>(f.params().size());
  const int kg = f.ParamIndex("KG");
  ASSERT_GE(kg, 0);
  std::mt19937 rng(2028);
  const KernelLimits limits;
  std::set<std::pair<int, int64_t>> seen;
  int cases = 0, split = 0, refused = 0;
  double worst = 0;
  for (int64_t i = 0; cases < 200; ++i) {
    ASSERT_LT(i, 40000) << "the rules refuse too many cases";
    Case c;
    GemmContext g;
    g.dtype = DType::kFp32;
    g.layout_a = Layout::kN;
    g.layout_b = Layout::kT;
    g.n = rng() % 2 ? 1 + rng() % 16 : 1 + rng() % 300;
    switch (rng() % 3) {
      case 0:
        g.m = 1 + rng() % 40;
        break;
      case 1:
        g.m = 1 + rng() % 700;
        break;
      default:
        g.m = 700 + rng() % 1500;
        break;
    }
    switch (rng() % 3) {
      case 0:
        g.k = 1 + rng() % 100;
        break;
      case 1:
        g.k = 1 + rng() % 3000;
        break;
      default:
        g.k = 512 * (1 + rng() % 6) + rng() % 512;
        break;
    }
    if (i == 0) g.m = g.n = g.k = 1;
    if (i % 40 == 2) {  // a covariance (issue 18's shape, shorter)
      g.m = g.n = 64;
      g.k = 16384 + rng() % 3;
    }
    if (i % 40 == 3) {  // an MLP layer of 16 columns
      g.m = 1024 + rng() % 3;
      g.n = 16;
      g.k = 1024 + rng() % 5;
    }
    // Each parameter drawn from its whole domain (K_G one time in three).
    c.params = f.DefaultCandidates().front();
    for (int p = 0; p < n_params; ++p) {
      const auto& values = f.params()[p].values;
      c.params[p] = values[rng() % values.size()];
    }
    if (rng() % 3 == 0) c.params[kg] = 1;
    auto up = [](int64_t x) { return (x + 3) / 4 * 4; };
    c.problem = Problem(g);
    c.problem.lda = up(g.k + (rng() % 3 ? rng() % 9 : 0));
    c.problem.ldb = up(g.k + rng() % 9);
    if (packed) {
      const int which = rng() % 3;
      if (which != 1) c.problem.lda = g.k + rng() % 9;
      if (which != 0) c.problem.ldb = g.k + rng() % 9;
    }
    c.problem.ldc = g.n + rng() % 4;
    c.alpha = rng() % 2 ? 1.f : 0.75f;
    c.beta = rng() % 3 == 0 ? -0.5f : 0.f;
    if (!f.CanImplement(c.problem, c.params, limits).ok()) {
      ++refused;
      continue;
    }
    const std::string what = Describe(f, c);
    auto err = RunCase(f, c, rng);
    ASSERT_TRUE(err.ok()) << what << ": " << err.status().ToString();
    EXPECT_LT(*err, 1e-5) << what;
    worst = std::max(worst, *err);
    for (int p = 0; p < n_params; ++p) seen.insert({p, c.params[p]});
    split += c.params[kg] > 1;
    ++cases;
  }
  for (int p = 0; p < n_params; ++p)
    for (int64_t x : f.params()[p].values)
      EXPECT_TRUE(seen.count({p, x}))
          << f.params()[p].name << "=" << x << " never ran";
  EXPECT_GT(split, 20);
  std::cout << family << ": " << cases << " cases (" << split
            << " split over K, " << refused
            << " refused by the rules), worst relative error " << worst << "\n";
}

TEST_F(GemvGpuTest, FfmaKRandomNtShapesMatchFloat64) {
  RandomNtCasesMatchFloat64("gemm.ffma_k", /*packed=*/false);
}

TEST_F(GemvGpuTest, FfmaKPackedRandomUnalignedNtShapesMatchFloat64) {
  RandomNtCasesMatchFloat64("gemm.ffma_kpk", /*packed=*/true);
}

}  // namespace
}  // namespace blocktune
