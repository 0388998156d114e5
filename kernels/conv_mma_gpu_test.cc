// conv.mma on the GPU (ctest label gpu) against a float64 reference from
// the same rounded inputs: random convolutions with pad, stride and
// dilation per axis, C = 3 and odd C (narrow copies), 1x1 and 7x7 filters,
// batch 1 and 32, every precision, K_G > 1 (launched twice: the same bits),
// beta zero and not. The output (and the split-K workspace) is poisoned
// with NaN where beta == 0, so an element the kernel never wrote fails.
// Every output element is checked with the bound of test_numerics.h
// (MmaBound: c = 1).
//
// The kernel is generated through the family seam (conv.mma's Generate)
// and launched with the driver as GeneratedKernel describes it: the main
// entry with conv.ffma's parameters, then the reduce entry where K_G > 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/conv_mma.h"
#include "kernels/cuda_driver.h"
#include "kernels/family.h"
#include "kernels/test_numerics.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;
using test_numerics::Data;
using test_numerics::HostMatrix;
using test_numerics::OutputValue;
using test_numerics::Random;

struct Case {
  ConvContext conv;  // dtype: the storage type
  MmaPrecision precision = MmaPrecision::kBf16;
  std::string params;
  float alpha = 1, beta = 0;
};

DType DTypeOfPrecision(MmaPrecision p) {
  return p == MmaPrecision::kBf16   ? DType::kBf16
         : p == MmaPrecision::kFp16 ? DType::kFp16
                                    : DType::kTf32;
}

struct Outcome {
  double worst_bound_ratio = 0;
  double worst_acc_ratio = 0;
};

// Generates, launches and checks one case.
StatusOr<Outcome> RunCase(const Case& c, std::mt19937& rng) {
  const ConvContext& cv = c.conv;
  const MmaPrecision prec = c.precision;
  const KernelFamily& family = **FindFamily("conv.mma");
  ConvContext ctx = cv;
  ctx.dtype = DTypeOfPrecision(prec);
  const Problem problem{Context(ctx)};
  BT_ASSIGN_OR_RETURN(Params params, family.Parse(c.params));
  BT_RETURN_IF_ERROR(family.CanImplement(problem, params, KernelLimits{}));
  BT_ASSIGN_OR_RETURN(GeneratedKernel k,
                      family.Generate(problem, params, "sm_90"));
  BT_ASSIGN_OR_RETURN(auto module, cuda::Module::Load(k.ptx));
  BT_ASSIGN_OR_RETURN(cuda::Function main, module->GetFunction(k.entry));
  if (k.dynamic_shared_bytes > 48 * 1024)
    BT_RETURN_IF_ERROR(cuda::SetMaxDynamicShared(
        main, static_cast<int>(k.dynamic_shared_bytes)));

  const int es = ElementBytes(prec);
  const int64_t P = cv.P(), Q = cv.Q();
  const int64_t M = cv.n * P * Q, Nn = cv.k, K = cv.c * cv.r * cv.s;
  HostMatrix x = Random(prec, cv.n * cv.h * cv.w * cv.c, rng);
  HostMatrix f = Random(prec, cv.k * K, rng);
  HostMatrix y = Random(prec, M * Nn, rng);
  std::vector<double> y_old(y.value);
  if (prec == MmaPrecision::kTf32)
    for (size_t i = 0; i < y_old.size(); ++i) y_old[i] = y.f[i];

  BT_ASSIGN_OR_RETURN(DeviceBuffer dx,
                      DeviceBuffer::Allocate(x.value.size() * es));
  BT_ASSIGN_OR_RETURN(DeviceBuffer df,
                      DeviceBuffer::Allocate(f.value.size() * es));
  BT_ASSIGN_OR_RETURN(DeviceBuffer dy,
                      DeviceBuffer::Allocate(y.value.size() * es + 4));
  BT_ASSIGN_OR_RETURN(
      DeviceBuffer dw,
      DeviceBuffer::Allocate(std::max<int64_t>(k.workspace_bytes, 4)));
  BT_RETURN_IF_ERROR(dx.CopyFromHost(Data(x), x.value.size() * es));
  BT_RETURN_IF_ERROR(df.CopyFromHost(Data(f), f.value.size() * es));
  auto reset_output = [&]() -> Status {
    if (c.beta == 0) return dy.Fill32(0x7fc07fc0);  // NaN in every type
    return dy.CopyFromHost(Data(y), y.value.size() * es);
  };
  BT_RETURN_IF_ERROR(dw.Fill32(0x7fc00000));

  uint64_t a = dx.address(), b = df.address(), out = dy.address(),
           w = k.workspace_bytes > 0 ? dw.address() : 0;
  uint32_t u32[18] = {
      uint32_t(M),       uint32_t(Nn),          uint32_t(K),
      uint32_t(cv.c),    uint32_t(K),           uint32_t(Nn),
      uint32_t(cv.h),    uint32_t(cv.w),        uint32_t(cv.c),
      uint32_t(P),       uint32_t(Q),           uint32_t(cv.s),
      uint32_t(cv.pad_h), uint32_t(cv.pad_w),   uint32_t(cv.stride_h),
      uint32_t(cv.stride_w), uint32_t(cv.dilation_h), uint32_t(cv.dilation_w)};
  float alpha = c.alpha, beta = c.beta;
  std::vector<void*> args = {&a, &b, &out, &w};
  for (int i = 0; i < 6; ++i) args.push_back(&u32[i]);
  args.push_back(&alpha);
  args.push_back(&beta);
  for (int i = 6; i < 18; ++i) args.push_back(&u32[i]);
  if (args.size() != k.entry_params.size())
    return Internal("conv.mma's entry takes " +
                    std::to_string(k.entry_params.size()) + " parameters");

  cuda::Function reduce;
  uint32_t kg = static_cast<uint32_t>(family.Shape(problem, params).split_k);
  uint32_t m32 = uint32_t(M), n32 = uint32_t(Nn), ldc = uint32_t(Nn);
  if (!k.reduce_entry.empty()) {
    BT_ASSIGN_OR_RETURN(reduce, module->GetFunction(k.reduce_entry));
  }
  auto launch = [&]() -> Status {
    auto dim = [](unsigned v) { return v == 0 ? 1u : v; };
    BT_RETURN_IF_ERROR(cuda::Launch(
        main, {dim(k.grid[0]), dim(k.grid[1]), dim(k.grid[2])},
        {dim(k.block[0]), dim(k.block[1]), dim(k.block[2])},
        k.dynamic_shared_bytes, args));
    if (k.reduce_entry.empty()) return OkStatus();
    return cuda::Launch(
        reduce, {dim(k.reduce_grid[0]), dim(k.reduce_grid[1]), 1},
        {dim(k.reduce_block[0]), 1, 1}, 0,
        {&w, &out, &m32, &n32, &ldc, &kg, &alpha, &beta});
  };
  BT_RETURN_IF_ERROR(reset_output());
  BT_RETURN_IF_ERROR(launch());
  std::vector<uint8_t> got_bytes(y.value.size() * es);
  BT_RETURN_IF_ERROR(dy.CopyToHost(got_bytes.data(), got_bytes.size()));
  if (kg > 1) {
    BT_RETURN_IF_ERROR(reset_output());
    BT_RETURN_IF_ERROR(launch());
    std::vector<uint8_t> again(got_bytes.size());
    BT_RETURN_IF_ERROR(dy.CopyToHost(again.data(), again.size()));
    if (again != got_bytes)
      return Internal("K_G > 1: a second launch gave different bits");
  }

  const test_numerics::MmaBound bound_of(prec);
  Outcome o;
  for (int64_t n = 0; n < cv.n; ++n) {
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t m = (n * P + p) * Q + q;
        for (int64_t ko = 0; ko < Nn; ++ko) {
          double sum = 0, abs_sum = 0;
          for (int64_t r = 0; r < cv.r; ++r) {
            const int64_t h = p * cv.stride_h - cv.pad_h + r * cv.dilation_h;
            if (h < 0 || h >= cv.h) continue;
            for (int64_t s = 0; s < cv.s; ++s) {
              const int64_t wi =
                  q * cv.stride_w - cv.pad_w + s * cv.dilation_w;
              if (wi < 0 || wi >= cv.w) continue;
              const double* xv = &x.value[((n * cv.h + h) * cv.w + wi) * cv.c];
              const double* fv = &f.value[((ko * cv.r + r) * cv.s + s) * cv.c];
              for (int64_t ci = 0; ci < cv.c; ++ci) {
                sum += xv[ci] * fv[ci];
                abs_sum += std::fabs(xv[ci] * fv[ci]);
              }
            }
          }
          const size_t i = static_cast<size_t>(m * Nn + ko);
          const double old = y_old[i];
          const double ref =
              c.alpha * sum + (c.beta == 0 ? 0.0 : c.beta * old);
          const double got = OutputValue(prec, got_bytes, i);
          const std::string where =
              "Y[n=" + std::to_string(n) + " p=" + std::to_string(p) +
              " q=" + std::to_string(q) + " k=" + std::to_string(ko) +
              "] = " + std::to_string(got) + ", reference " +
              std::to_string(ref);
          if (!std::isfinite(got)) return Internal(where + " (not written?)");
          const double err = std::fabs(got - ref);
          const double bound = bound_of.Bound(c.alpha, abs_sum, ref,
                                              c.beta * old);
          if (err > bound) {
            return Internal(where + ": error " + std::to_string(err) +
                            " exceeds the bound " + std::to_string(bound));
          }
          o.worst_bound_ratio = std::max(o.worst_bound_ratio, err / bound);
          o.worst_acc_ratio = std::max(
              o.worst_acc_ratio,
              err / bound_of.AccumulationScale(K, c.alpha, abs_sum, ref));
        }
      }
    }
  }
  return o;
}

class ConvMmaGpuTest : public ::testing::Test {
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

std::string Describe(const Case& c) {
  ConvContext ctx = c.conv;
  ctx.dtype = DTypeOfPrecision(c.precision);
  return ToString(Context(ctx)) + " [" + c.params + "] alpha " +
         std::to_string(c.alpha) + " beta " + std::to_string(c.beta);
}

std::string RandomParams(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<int64_t> v) {
    return std::to_string(*(v.begin() + rng() % v.size()));
  };
  return "bm=" + pick({16, 32, 64, 128}) + " bn=" + pick({8, 16, 32, 64, 128}) +
         " bk=" + pick({16, 32, 64}) + " wm=" + pick({1, 2, 4}) +
         " wn=" + pick({1, 2, 4}) + " st=" + pick({2, 3, 4, 5}) +
         " kg=" + pick({1, 1, 1, 2, 3, 8}) + " gm=" + pick({1, 2, 8});
}

// Random convolutions of one precision: `cases` that conv.mma implements.
void RunRandom(MmaPrecision prec, uint32_t seed, int cases) {
  std::mt19937 rng(seed);
  const int64_t channels[] = {1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 33, 64};
  const int64_t outs[] = {1, 3, 8, 16, 24, 33, 64};
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9, 12, 17};
  const int64_t filters[] = {1, 1, 2, 3, 3, 5, 7};
  Outcome worst;
  int ran = 0;
  for (int tries = 0; ran < cases && tries < 50 * cases; ++tries) {
    Case c;
    c.precision = prec;
    ConvContext& cv = c.conv;
    cv.n = rng() % 4 == 0 ? 32 : 1 + rng() % 3;
    cv.h = sizes[rng() % std::size(sizes)];
    cv.w = sizes[rng() % std::size(sizes)];
    cv.c = channels[rng() % std::size(channels)];
    cv.k = outs[rng() % std::size(outs)];
    cv.r = filters[rng() % std::size(filters)];
    cv.s = filters[rng() % std::size(filters)];
    cv.pad_h = rng() % (cv.r / 2 + 2);
    cv.pad_w = rng() % (cv.s / 2 + 2);
    cv.stride_h = 1 + rng() % 3;
    cv.stride_w = 1 + rng() % 3;
    cv.dilation_h = 1 + rng() % 2;
    cv.dilation_w = 1 + rng() % 2;
    cv.dtype = StorageType(prec);
    if (cv.P() < 1 || cv.Q() < 1) continue;
    if (cv.n * cv.P() * cv.Q() * cv.k * cv.c * cv.r * cv.s > 60'000'000)
      continue;
    c.params = RandomParams(rng);
    c.alpha = rng() % 2 ? 1.0f : -0.75f;
    c.beta = rng() % 3 ? 0.0f : 0.5f;
    // Only what conv.mma implements on an H100.
    const KernelFamily& family = **FindFamily("conv.mma");
    ConvContext ctx = cv;
    ctx.dtype = DTypeOfPrecision(prec);
    auto params = family.Parse(c.params);
    if (!params.ok() ||
        !family.CanImplement(Problem(Context(ctx)), *params, KernelLimits{})
             .ok())
      continue;
    auto o = RunCase(c, rng);
    ASSERT_TRUE(o.ok()) << Describe(c) << ": " << o.status().ToString();
    worst.worst_bound_ratio =
        std::max(worst.worst_bound_ratio, o->worst_bound_ratio);
    worst.worst_acc_ratio = std::max(worst.worst_acc_ratio, o->worst_acc_ratio);
    ++ran;
  }
  EXPECT_EQ(ran, cases);
  std::printf(
      "%s: %d random convolutions pass; max err/bound %.3g, max err / "
      "(K 2^-24 sum|a||b| + u_out|ref|) %.3g\n",
      std::string(ToString(prec)).c_str(), ran, worst.worst_bound_ratio,
      worst.worst_acc_ratio);
}

TEST_F(ConvMmaGpuTest, Bf16RandomConvolutionsMatchFloat64) {
  RunRandom(MmaPrecision::kBf16, 18, 40);
}
TEST_F(ConvMmaGpuTest, Fp16RandomConvolutionsMatchFloat64) {
  RunRandom(MmaPrecision::kFp16, 19, 40);
}
TEST_F(ConvMmaGpuTest, Tf32RandomConvolutionsMatchFloat64) {
  RunRandom(MmaPrecision::kTf32, 20, 40);
}

// The layers the issue names, each precision: the stem (7x7 stride 2, C =
// 3), 1x1 at batch 32, a 3x3 of ResNet at batch 32, a dilated 3x3, odd C
// with a 1x7 filter, and a split over the reduction.
TEST_F(ConvMmaGpuTest, NamedLayersEveryPrecision) {
  struct Layer {
    const char* ctx;
    const char* params;
  };
  const Layer layers[] = {
      {"conv n=2 h=32 w=32 c=3 k=64 r=7 s=7 pad=3 stride=2 dilation=1",
       "bm=64 bn=64 bk=16 wm=2 wn=2 st=3 kg=1 gm=8"},
      {"conv n=32 h=7 w=7 c=64 k=64 r=1 s=1 pad=0 stride=1 dilation=1",
       "bm=128 bn=64 bk=32 wm=2 wn=2 st=4 kg=1 gm=8"},
      {"conv n=32 h=7 w=7 c=128 k=32 r=3 s=3 pad=1 stride=1 dilation=1",
       "bm=128 bn=32 bk=32 wm=4 wn=1 st=3 kg=1 gm=4"},
      {"conv n=1 h=20 w=20 c=32 k=48 r=3 s=3 pad=2 stride=1 dilation=2",
       "bm=64 bn=16 bk=32 wm=2 wn=1 st=4 kg=1 gm=1"},
      {"conv n=3 h=11 w=23 c=5 k=17 r=1 s=7 pad=0x3 stride=1x2 dilation=1",
       "bm=32 bn=16 bk=16 wm=1 wn=2 st=2 kg=1 gm=2"},
      {"conv n=1 h=14 w=14 c=256 k=64 r=3 s=3 pad=1 stride=2 dilation=1",
       "bm=64 bn=64 bk=64 wm=2 wn=2 st=3 kg=4 gm=8"},
  };
  std::mt19937 rng(7);
  for (MmaPrecision prec :
       {MmaPrecision::kBf16, MmaPrecision::kFp16, MmaPrecision::kTf32}) {
    for (const Layer& l : layers) {
      auto ctx = ContextFromString(std::string(l.ctx) + " dtype=bf16");
      ASSERT_TRUE(ctx.ok()) << l.ctx;
      Case c;
      c.conv = std::get<ConvContext>(*ctx);
      c.conv.dtype = StorageType(prec);
      c.precision = prec;
      c.params = l.params;
      c.alpha = 1;
      c.beta = 0;
      auto o = RunCase(c, rng);
      ASSERT_TRUE(o.ok()) << Describe(c) << ": " << o.status().ToString();
    }
  }
}

// Small and quick, for compute-sanitizer (scripts/gpu_tests_device.sh):
// padding on every side, odd C (2-byte copies), a split, a ragged M and N.
TEST_F(ConvMmaGpuTest, SmokeUnderMemcheck) {
  std::mt19937 rng(3);
  for (MmaPrecision prec : {MmaPrecision::kBf16, MmaPrecision::kTf32}) {
    for (const char* text :
         {"conv n=2 h=9 w=7 c=3 k=10 r=3 s=3 pad=2 stride=1 dilation=1",
          "conv n=1 h=6 w=6 c=24 k=9 r=3 s=3 pad=1 stride=2 dilation=2"}) {
      auto ctx = ContextFromString(std::string(text) + " dtype=bf16");
      ASSERT_TRUE(ctx.ok()) << text;
      Case c;
      c.conv = std::get<ConvContext>(*ctx);
      c.conv.dtype = StorageType(prec);
      c.precision = prec;
      c.params = "bm=32 bn=16 bk=16 wm=2 wn=1 st=3 kg=2 gm=1";
      c.beta = 0.5f;
      auto o = RunCase(c, rng);
      ASSERT_TRUE(o.ok()) << Describe(c) << ": " << o.status().ToString();
    }
  }
}

}  // namespace
}  // namespace blocktune
