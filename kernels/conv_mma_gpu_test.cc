// conv.mma and conv.wgmma on the GPU (ctest label gpu) against a float64
// reference from the same rounded inputs: random convolutions with pad,
// stride and dilation per axis, C = 3 and odd C (conv.mma's narrow
// copies), 1x1 and 7x7 filters, batch 1 and 32, every precision, K_G > 1
// (launched twice: the same bits), beta zero and not. The output (and the
// split-K workspace) is poisoned with NaN where beta == 0, so an element
// the kernel never wrote fails. Every output element is checked with the
// bound of test_numerics.h (MmaBound; conv.wgmma's tf32 truncates its
// operands, as gemm.wgmma's: input_scale 4).
//
// The kernel is generated through the family seam (the family's Generate)
// and launched with the driver as GeneratedKernel describes it: the main
// entry's parameters by name (conv.mma: conv.ffma's; conv.wgmma: its own
// and three tensor maps, encoded here), then the reduce entry where
// K_G > 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "kernels/conv_mma.h"
#include "kernels/cuda_driver.h"
#include "kernels/family.h"
#include "kernels/tensor_map.h"
#include "kernels/test_numerics.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;
using test_numerics::Data;
using test_numerics::HostMatrix;
using test_numerics::OutputValue;
using test_numerics::Random;

struct Case {
  std::string family = "conv.mma";
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
  BT_ASSIGN_OR_RETURN(const KernelFamily* found, FindFamily(c.family));
  const KernelFamily& family = *found;
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
  float alpha = c.alpha, beta = c.beta;
  // The entry's arguments by parameter name.
  std::map<std::string, uint64_t> u64 = {
      {"A", a}, {"B", b}, {"C", out}, {"W", w}};
  std::map<std::string, uint32_t> u32 = {
      {"M", uint32_t(M)},         {"N", uint32_t(Nn)},
      {"K", uint32_t(K)},         {"lda", uint32_t(cv.c)},
      {"ldb", uint32_t(K)},       {"ldc", uint32_t(Nn)},
      {"H", uint32_t(cv.h)},      {"W_in", uint32_t(cv.w)},
      {"C_in", uint32_t(cv.c)},   {"P", uint32_t(P)},
      {"Q", uint32_t(Q)},         {"S", uint32_t(cv.s)},
      {"pad_h", uint32_t(cv.pad_h)}, {"pad_w", uint32_t(cv.pad_w)},
      {"stride_h", uint32_t(cv.stride_h)},
      {"stride_w", uint32_t(cv.stride_w)},
      {"dilation_h", uint32_t(cv.dilation_h)},
      {"dilation_w", uint32_t(cv.dilation_w)}};
  std::vector<EncodedTensorMap> maps(k.tensor_maps.size());
  std::vector<void*> args;
  for (size_t i = 0; i < k.entry_params.size(); ++i) {
    const KernelParam& q = k.entry_params[i];
    const std::string name = q.name;
    void* arg = nullptr;
    for (size_t j = 0; j < k.tensor_maps.size(); ++j) {
      const TensorMapParam& t = k.tensor_maps[j];
      if (t.param_index != static_cast<int>(i)) continue;
      BT_ASSIGN_OR_RETURN(maps[j],
                          EncodeTensorMap(t.map, t.operand == 'A'   ? a
                                                 : t.operand == 'B' ? b
                                                                    : out));
      arg = maps[j].bytes;
    }
    if (arg == nullptr && name == "alpha") arg = &alpha;
    if (arg == nullptr && name == "beta") arg = &beta;
    if (arg == nullptr && u64.count(name) && q.size == 8) arg = &u64[name];
    if (arg == nullptr && u32.count(name) && q.size == 4) arg = &u32[name];
    if (arg == nullptr)
      return Internal(c.family + "'s entry parameter " + name +
                      " has no value in this test");
    args.push_back(arg);
  }

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
        {&u64["W"], &u64["C"], &m32, &n32, &ldc, &kg, &alpha, &beta});
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

  // conv.wgmma's tf32 truncates the operands (gemm_wgmma.h), as
  // gemm_wgmma_gpu_test bounds it.
  const test_numerics::MmaBound bound_of(
      prec,
      c.family.rfind("conv.wgmma", 0) == 0 && prec == MmaPrecision::kTf32 ? 4
                                                                          : 1);
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
  return c.family + " " + ToString(Context(ctx)) + " [" + c.params +
         "] alpha " +
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

// `family`: conv.wgmma_sk's splits go to 32, conv.wgmma_sc's (the programs
// of a cluster) to 8; conv.wgmma and conv.wgmma_ps take no kg.
std::string RandomWgmmaParams(std::mt19937& rng, const std::string& family) {
  auto pick = [&](std::initializer_list<int64_t> v) {
    return std::to_string(*(v.begin() + rng() % v.size()));
  };
  return "bm=" + pick({64, 128, 128, 256}) +
         " bn=" + pick({16, 32, 64, 128, 192, 256}) +
         " bk=" + pick({32, 64, 128}) + " st=" + pick({2, 3, 4, 5}) +
         " wg=" + pick({1, 2}) + " gm=" + pick({1, 2, 8}) +
         (family == "conv.wgmma_sk"
              ? " kg=" + pick({2, 3, 4, 6, 8, 12, 16, 24, 32})
          : family == "conv.wgmma_sc" ? " kg=" + pick({2, 3, 4, 5, 6, 7, 8})
                                      : "");
}

// Random convolutions of one precision: `cases` that the family implements
// on an H100. conv.wgmma's take C and K in whole 16-byte units (its rule
// alignment).
void RunRandom(const std::string& family_name, MmaPrecision prec,
               uint32_t seed, int cases) {
  std::mt19937 rng(seed);
  const bool wgmma = family_name.rfind("conv.wgmma", 0) == 0;
  const std::vector<int64_t> channels =
      wgmma ? std::vector<int64_t>{8, 16, 24, 40, 64, 72, 128, 136}
            : std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 33, 64};
  const std::vector<int64_t> outs =
      wgmma ? std::vector<int64_t>{8, 16, 24, 40, 64, 72, 136}
            : std::vector<int64_t>{1, 3, 8, 16, 24, 33, 64};
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9, 12, 17};
  const int64_t filters[] = {1, 1, 2, 3, 3, 5, 7};
  const KernelFamily& family = **FindFamily(family_name);
  Outcome worst;
  int ran = 0;
  for (int tries = 0; ran < cases && tries < 50 * cases; ++tries) {
    Case c;
    c.family = family_name;
    c.precision = prec;
    ConvContext& cv = c.conv;
    cv.n = rng() % 4 == 0 ? 32 : 1 + rng() % 3;
    cv.h = sizes[rng() % std::size(sizes)];
    cv.w = sizes[rng() % std::size(sizes)];
    cv.c = channels[rng() % channels.size()];
    cv.k = outs[rng() % outs.size()];
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
    c.params =
        wgmma ? RandomWgmmaParams(rng, family_name) : RandomParams(rng);
    c.alpha = rng() % 2 ? 1.0f : -0.75f;
    c.beta = rng() % 3 ? 0.0f : 0.5f;
    // Only what the family implements on an H100.
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
      "%s %s: %d random convolutions pass; max err/bound %.3g, max err / "
      "(K 2^-24 sum|a||b| + u_out|ref|) %.3g\n",
      family_name.c_str(), std::string(ToString(prec)).c_str(), ran,
      worst.worst_bound_ratio, worst.worst_acc_ratio);
}

TEST_F(ConvMmaGpuTest, Bf16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.mma", MmaPrecision::kBf16, 18, 40);
}
TEST_F(ConvMmaGpuTest, Fp16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.mma", MmaPrecision::kFp16, 19, 40);
}
TEST_F(ConvMmaGpuTest, Tf32RandomConvolutionsMatchFloat64) {
  RunRandom("conv.mma", MmaPrecision::kTf32, 20, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaBf16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma", MmaPrecision::kBf16, 28, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaFp16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma", MmaPrecision::kFp16, 29, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaTf32RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma", MmaPrecision::kTf32, 30, 40);
}

// conv.wgmma_sk: the same random convolutions with the reduction split 2
// to 32 ways (each split at least one k tile: the family's rule), run
// twice for the same bits.
TEST_F(ConvMmaGpuTest, WgmmaSplitBf16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma_sk", MmaPrecision::kBf16, 38, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaSplitFp16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma_sk", MmaPrecision::kFp16, 39, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaSplitTf32RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma_sk", MmaPrecision::kTf32, 40, 40);
}

// conv.wgmma_sc: the same with the splits in one cluster (2 to 8), the
// partial sums added in the first program's shared memory; twice for the
// same bits.
TEST_F(ConvMmaGpuTest, WgmmaClusterSplitBf16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma_sc", MmaPrecision::kBf16, 41, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaClusterSplitFp16RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma_sc", MmaPrecision::kFp16, 42, 40);
}
TEST_F(ConvMmaGpuTest, WgmmaClusterSplitTf32RandomConvolutionsMatchFloat64) {
  RunRandom("conv.wgmma_sc", MmaPrecision::kTf32, 43, 40);
}

// A conv.wgmma family on named layers, every precision, beta 0 (TMA
// stores; conv.wgmma_sk: the reduce entry) and 0.5 (the register epilogue;
// the reduce entry reading Y). tf32 takes 32 channels a step (bk=64 ->
// bk=32), so the ring fits as bf16's does.
struct WgmmaLayer {
  const char* ctx;
  const char* params;
};
void RunWgmmaLayers(const std::string& family,
                    const std::vector<WgmmaLayer>& layers, uint32_t seed) {
  std::mt19937 rng(seed);
  for (MmaPrecision prec :
       {MmaPrecision::kBf16, MmaPrecision::kFp16, MmaPrecision::kTf32}) {
    for (const WgmmaLayer& l : layers) {
      for (float beta : {0.0f, 0.5f}) {
        auto ctx = ContextFromString(std::string(l.ctx) + " dtype=bf16");
        ASSERT_TRUE(ctx.ok()) << l.ctx;
        Case c;
        c.family = family;
        c.conv = std::get<ConvContext>(*ctx);
        c.conv.dtype = StorageType(prec);
        c.precision = prec;
        c.params = l.params;
        if (prec == MmaPrecision::kTf32)
          c.params.replace(c.params.find("bk=64"), 5, "bk=32");
        c.beta = beta;
        auto o = RunCase(c, rng);
        ASSERT_TRUE(o.ok()) << Describe(c) << ": " << o.status().ToString();
      }
    }
  }
}

// conv.wgmma_sk on the batch-1 layers it is for: issue 18's 3x3 over 8x8
// and 56x56 pixels, a 1x1 (the split walks channel steps only), a 7x7 over
// an odd channel count (splits starting mid-tap), a strided and dilated
// layer; splits that divide the k tiles and ones that do not.
TEST_F(ConvMmaGpuTest, WgmmaSplitLayersEveryPrecision) {
  RunWgmmaLayers(
      "conv.wgmma_sk",
      {{"conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
        "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=8"},
       {"conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
        "bm=128 bn=64 bk=64 st=4 wg=2 gm=1 kg=3"},
       {"conv n=1 h=7 w=7 c=512 k=512 r=1 s=1 pad=0 stride=1 dilation=1",
        "bm=64 bn=128 bk=64 st=3 wg=1 gm=2 kg=4"},
       {"conv n=1 h=9 w=9 c=72 k=40 r=7 s=7 pad=3 stride=1 dilation=1",
        "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=24"},
       {"conv n=2 h=17 w=19 c=24 k=40 r=3 s=5 pad=1x2 stride=2x1 dilation=1x2",
        "bm=64 bn=96 bk=64 st=3 wg=1 gm=1 kg=6"}},
      9);
}

// conv.wgmma_sc on the same layers: clusters of 8, 3 (two consumer
// warpgroups), 4, 7 (splits starting mid-tap) and 6.
TEST_F(ConvMmaGpuTest, WgmmaClusterSplitLayersEveryPrecision) {
  RunWgmmaLayers(
      "conv.wgmma_sc",
      {{"conv n=1 h=8 w=8 c=256 k=256 r=3 s=3 pad=1 stride=1 dilation=1",
        "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=8"},
       {"conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1",
        "bm=128 bn=64 bk=64 st=4 wg=2 gm=1 kg=3"},
       {"conv n=1 h=7 w=7 c=512 k=512 r=1 s=1 pad=0 stride=1 dilation=1",
        "bm=64 bn=128 bk=64 st=3 wg=1 gm=2 kg=4"},
       {"conv n=1 h=9 w=9 c=72 k=40 r=7 s=7 pad=3 stride=1 dilation=1",
        "bm=64 bn=64 bk=64 st=4 wg=1 gm=1 kg=7"},
       {"conv n=2 h=17 w=19 c=24 k=40 r=3 s=5 pad=1x2 stride=2x1 dilation=1x2",
        "bm=64 bn=96 bk=64 st=3 wg=1 gm=1 kg=6"}},
      10);
}

// conv.wgmma on layers of the shapes it is for: ResNet 3x3 at batch 8, a
// strided 3x3 (the copy engine's element strides), a 1x1, a dilated 3x3
// with padding 2, 7x7 with C past one channel step, and M, N not multiples
// of the tile.
TEST_F(ConvMmaGpuTest, WgmmaLayersEveryPrecision) {
  RunWgmmaLayers(
      "conv.wgmma",
      {{"conv n=8 h=14 w=14 c=128 k=128 r=3 s=3 pad=1 stride=1 dilation=1",
        "bm=128 bn=128 bk=64 st=4 wg=1 gm=8"},
       {"conv n=4 h=28 w=28 c=64 k=128 r=3 s=3 pad=1 stride=2 dilation=1",
        "bm=128 bn=256 bk=64 st=4 wg=2 gm=8"},
       {"conv n=8 h=14 w=14 c=256 k=64 r=1 s=1 pad=0 stride=1 dilation=1",
        "bm=256 bn=64 bk=64 st=4 wg=2 gm=1"},
       {"conv n=2 h=20 w=20 c=64 k=48 r=3 s=3 pad=2 stride=1 dilation=2",
        "bm=64 bn=64 bk=64 st=3 wg=1 gm=1"},
       {"conv n=2 h=23 w=23 c=72 k=40 r=7 s=7 pad=3 stride=2 dilation=1",
        "bm=128 bn=64 bk=64 st=4 wg=1 gm=2"}},
      8);
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

// conv.wgmma under compute-sanitizer too: padding on every side, a stride,
// a ragged M and N, the TMA-store epilogue (beta 0) and the register one;
// and conv.wgmma_sk's and conv.wgmma_sc's splits on the same layer.
TEST_F(ConvMmaGpuTest, WgmmaSmokeUnderMemcheck) {
  std::mt19937 rng(4);
  for (MmaPrecision prec : {MmaPrecision::kBf16, MmaPrecision::kTf32}) {
    for (float beta : {0.0f, 0.5f}) {
      auto ctx = ContextFromString(
          "conv n=2 h=9 w=7 c=24 k=40 r=3 s=3 pad=2 stride=2x1 dilation=1 "
          "dtype=bf16");
      ASSERT_TRUE(ctx.ok());
      // conv.wgmma, conv.wgmma_sk's split (partial sums to the workspace,
      // the reduce entry) and conv.wgmma_sc's (distributed shared memory).
      for (const char* family :
           {"conv.wgmma", "conv.wgmma_sk", "conv.wgmma_sc"}) {
        Case c;
        c.family = family;
        c.conv = std::get<ConvContext>(*ctx);
        c.conv.dtype = StorageType(prec);
        c.precision = prec;
        c.params = "bm=64 bn=32 bk=64 st=3 wg=1 gm=1";
        if (c.family != "conv.wgmma") c.params += " kg=4";
        c.beta = beta;
        auto o = RunCase(c, rng);
        ASSERT_TRUE(o.ok()) << Describe(c) << ": " << o.status().ToString();
      }
    }
  }
}

}  // namespace
}  // namespace blocktune
