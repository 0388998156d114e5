// The generated fp32 kernels against the vendor libraries on the thesis
// families (issue 3's target table), in one run, on one GPU.
//
// Per shape it sweeps CanImplement-valid block shapes (a random sample,
// within 10 s of kernel time), re-times the best, and times the vendor:
//   GEMM: cublasSgemm as called, and the best of the cublasLt heuristic's
//         candidates (up to 16 asked for), compute type 32F, so no TF32;
//   conv: the best of every cuDNN forward algorithm cudnnFind returns, for
//         NHWC/KRSC and for NCHW/KCRS tensors, CUDNN_FMA_MATH (no TF32),
//         each timed again here.
// Timing: CUDA events around each launch, 2 warm-ups, the median of `reps`;
// inputs are random and rotated across copies of >= 200 MB in all, so no
// launch reads its inputs from the 50 MB L2. The best kernel's output is
// compared with the vendor's (relative Frobenius error).
//
//   kernel_bench [--quick] [--family NAME] [--xb "ML=.. NL=.. ..."]
//   --xb times that one block shape instead of sweeping (for profiling).
//   ratio = vendor time / ours; > 1 means blocktune is faster.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef BLOCKTUNE_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "kernels/cuda_driver.h"
#include "kernels/gemm_launch.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;

struct Problem {
  std::string family;
  Context ctx;
};

// Rotated input copies, the output and the split-K workspace.
struct Operands {
  std::vector<DeviceBuffer> a, b;
  DeviceBuffer c, w;
};

GemmContext Gemm(int64_t m, int64_t n, int64_t k, Layout la, Layout lb) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.layout_a = la;
  g.layout_b = lb;
  return g;
}

ConvContext Conv3x3(int64_t n, int64_t hw, int64_t c, int64_t k) {
  ConvContext cv;
  cv.n = n;
  cv.h = cv.w = hw;
  cv.c = c;
  cv.k = k;
  cv.r = cv.s = 3;
  cv.pad_h = cv.pad_w = 1;
  return cv;
}

int64_t Ld(const GemmContext& g, char which) {
  if (which == 'a') return g.layout_a == Layout::kT ? g.m : g.k;
  return g.layout_b == Layout::kT ? g.k : g.n;
}

// Elements of the two inputs: A and B, or the input image and filter.
std::pair<int64_t, int64_t> InputElements(const Context& ctx) {
  if (const auto* cv = std::get_if<ConvContext>(&ctx))
    return {cv->n * cv->h * cv->w * cv->c, cv->k * cv->r * cv->s * cv->c};
  const auto& g = std::get<GemmContext>(ctx);
  return {g.m * g.k, g.k * g.n};
}

std::vector<BlockShape> Candidates(const Context& ctx, int sm_count,
                                   bool quick, std::mt19937& rng) {
  const GemmShape g = ImplicitGemm(ctx);
  std::vector<BlockShape> out;
  KernelLimits limits;
  for (int64_t ml : {16, 32, 64, 128, 256})
    for (int64_t nl : {16, 32, 64, 128, 256})
      for (int64_t ms : {2, 4, 8, 16})
        for (int64_t ns : {1, 2, 4, 8})
          for (int64_t u : {4, 8, 16})
            for (int64_t kg : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {
              BlockShape xb{ml, nl, ms, ns, u, kg};
              if (!Validate(xb).ok() || !CanImplement(ctx, xb, limits).ok())
                continue;
              const int64_t threads = xb.ThreadsPerProgram();
              if (threads < 32 || threads > 512) continue;
              if (ml > 2 * g.m + 16 || nl > 2 * g.n + 16) continue;
              // Thesis §4.2.1: at least rho * N_SM programs, rho = 0.5; and
              // each split at least 4 steps of K.
              if (ProgramsInGrid(ctx, xb) * 2 < sm_count) continue;
              if (4 * kg * u > g.k) continue;
              out.push_back(xb);
            }
  std::shuffle(out.begin(), out.end(), rng);
  // Up to 40 dense thread tiles (M_S*N_S >= 32, 128..256 threads) first:
  // on large shapes the time budget ends the sweep after a few dozen
  // kernels. The rest stay in random order.
  auto dense_end = std::stable_partition(
      out.begin(), out.end(), [](const BlockShape& xb) {
        const int64_t threads = xb.ThreadsPerProgram();
        return xb.ms * xb.ns >= 32 && threads >= 128 && threads <= 256;
      });
  const auto front = out.begin() + std::min<ptrdiff_t>(40, dense_end - out.begin());
  std::shuffle(front, out.end(), rng);
  out.resize(std::min<size_t>(out.size(), quick ? 40 : 300));
  return out;
}

// Median milliseconds of `reps` event-timed launches after 2 warm-ups;
// launch(i) uses input copy i % copies.
StatusOr<double> TimeLaunches(const std::function<Status(size_t)>& launch,
                              size_t copies, int reps) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  Status status = OkStatus();
  std::vector<double> ms;
  for (int i = 0; i < 2 && status.ok(); ++i) status = launch(i % copies);
  for (int r = 0; r < reps && status.ok(); ++r) {
    cudaEventRecord(start);
    status = launch(r % copies);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (cudaError_t e = cudaGetLastError(); status.ok() && e != cudaSuccess)
    status = Internal(cudaGetErrorString(e));
  BT_RETURN_IF_ERROR(status);
  return bench::Quantile(ms, 0.5);
}

// Times k(x_B). With `output`, runs it once more on input copy 0 (the one
// the vendor's reference uses) and copies C there.
StatusOr<double> TimeOurs(const Context& ctx, const BlockShape& xb,
                          Operands& ops, int reps,
                          std::vector<float>* output = nullptr) {
  BT_ASSIGN_OR_RETURN(auto kernel, LoadedGemm::Create(ctx, xb, "sm_90"));
  const int64_t workspace = kernel->kernel().workspace_bytes;
  if (ops.w.bytes() < static_cast<size_t>(workspace)) {
    ops.w = DeviceBuffer();
    BT_ASSIGN_OR_RETURN(ops.w, DeviceBuffer::Allocate(workspace));
  }
  GemmOperands args;
  args.c = ops.c.address();
  args.workspace = ops.w.address();
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    args.lda = Ld(*g, 'a');
    args.ldb = Ld(*g, 'b');
    args.ldc = g->n;
  }
  auto launch = [&](size_t copy) {
    args.a = ops.a[copy].address();
    args.b = ops.b[copy].address();
    return kernel->Launch(args);
  };
  BT_ASSIGN_OR_RETURN(double ms, TimeLaunches(launch, ops.a.size(), reps));
  if (output) {
    BT_RETURN_IF_ERROR(launch(0));
    BT_RETURN_IF_ERROR(ops.c.CopyToHost(output->data(), output->size() * 4));
  }
  return ms;
}

float* F(const DeviceBuffer& b) { return reinterpret_cast<float*>(b.address()); }

cublasOperation_t CublasOp(Layout l) {
  return l == Layout::kT ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// cublasSgemm on input copy `i`. Row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T.
Status Sgemm(cublasHandle_t h, const GemmContext& g, const Operands& ops,
             size_t i) {
  const float alpha = 1, beta = 0;
  cublasStatus_t s = cublasSgemm(
      h, CublasOp(g.layout_b), CublasOp(g.layout_a), g.n, g.m, g.k, &alpha,
      F(ops.b[i]), Ld(g, 'b'), F(ops.a[i]), Ld(g, 'a'), &beta, F(ops.c), g.n);
  return s == CUBLAS_STATUS_SUCCESS
             ? OkStatus()
             : Internal("cublasSgemm: " + std::to_string(s));
}

StatusOr<double> TimeSgemm(cublasHandle_t h, const GemmContext& g,
                           Operands& ops, int reps) {
  return TimeLaunches([&](size_t i) { return Sgemm(h, g, ops, i); },
                      ops.a.size(), reps);
}

// The best of the cublasLt heuristic's candidates; `count` gets how many
// it returned and were timed.
StatusOr<double> TimeLtBest(cublasLtHandle_t lt, const GemmContext& g,
                            Operands& ops, int reps, int* count) {
  cublasOperation_t ta = CublasOp(g.layout_b), tb = CublasOp(g.layout_a);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                 sizeof(ta));
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                 sizeof(tb));
  // Column-major view: "A" is our B (n x k as op), "B" is our A.
  cublasLtMatrixLayout_t la, lb, lc;
  const bool bt = g.layout_b == Layout::kT, at = g.layout_a == Layout::kT;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, bt ? g.k : g.n, bt ? g.n : g.k,
                             Ld(g, 'b'));
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, at ? g.m : g.k, at ? g.k : g.m,
                             Ld(g, 'a'));
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, g.n, g.m, g.n);
  const size_t workspace_bytes = 64 << 20;
  DeviceBuffer workspace = DeviceBuffer::Allocate(workspace_bytes).value();
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof(workspace_bytes));
  cublasLtMatmulHeuristicResult_t results[16];
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 16, results,
                                 &found);
  double best = 1e30;
  *count = 0;
  const float alpha = 1, beta = 0;
  for (int r = 0; r < found; ++r) {
    auto ms = TimeLaunches(
        [&](size_t i) {
          cublasStatus_t s = cublasLtMatmul(
              lt, desc, &alpha, F(ops.b[i]), la, F(ops.a[i]), lb, &beta,
              F(ops.c), lc, F(ops.c), lc, &results[r].algo,
              F(workspace), workspace_bytes, nullptr);
          return s == CUBLAS_STATUS_SUCCESS
                     ? OkStatus()
                     : Internal("cublasLtMatmul: " + std::to_string(s));
        },
        ops.a.size(), reps);
    if (!ms.ok()) continue;
    ++*count;
    best = std::min(best, *ms);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  if (*count == 0) return Internal("no cublasLt candidate ran");
  return best;
}

#ifdef BLOCKTUNE_HAVE_CUDNN
// The best cuDNN forward algorithm for tensors in `format` (NHWC input and
// KRSC filter, or NCHW and KCRS): cudnnFind's list, each re-timed here.
// For NHWC it leaves the best algorithm's output in ops.c, poisoned first.
StatusOr<double> TimeCudnnBest(cudnnHandle_t h, const ConvContext& cv,
                               cudnnTensorFormat_t format, Operands& ops,
                               int reps, int* count, std::string* best_name) {
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t fd;
  cudnnConvolutionDescriptor_t cd;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateTensorDescriptor(&yd);
  cudnnCreateFilterDescriptor(&fd);
  cudnnCreateConvolutionDescriptor(&cd);
  cudnnSetTensor4dDescriptor(xd, format, CUDNN_DATA_FLOAT, cv.n, cv.c, cv.h,
                             cv.w);
  cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, format, cv.k, cv.c, cv.r,
                             cv.s);
  cudnnSetConvolution2dDescriptor(cd, cv.pad_h, cv.pad_w, cv.stride_h,
                                  cv.stride_w, cv.dilation_h, cv.dilation_w,
                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH);  // no TF32
  cudnnSetTensor4dDescriptor(yd, format, CUDNN_DATA_FLOAT, cv.n, cv.k,
                             cv.P(), cv.Q());
  const char* layout = format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw";
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int found = 0;
  cudnnStatus_t s = cudnnFindConvolutionForwardAlgorithm(h, xd, fd, cd, yd,
                                                         16, &found, perf);
  if (std::getenv("BLOCKTUNE_BENCH_VERBOSE")) {
    for (int i = 0; i < found; ++i)
      std::printf("#   cudnnFind %s algo%d status=%d math=%d time=%.1fus mem=%zu\n",
                  format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw",
                  static_cast<int>(perf[i].algo), static_cast<int>(perf[i].status),
                  static_cast<int>(perf[i].mathType), perf[i].time * 1e3,
                  perf[i].memory);
  }
  double best = 1e30;
  *count = 0;
  const float alpha = 1, beta = 0;
  cudnnConvolutionFwdAlgo_t best_algo{};
  for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (perf[i].mathType != CUDNN_FMA_MATH &&
        perf[i].mathType != CUDNN_DEFAULT_MATH)
      continue;  // tensor-op (TF32) algorithms are not fp32 FMA
    size_t bytes = perf[i].memory;
    if (bytes > (size_t{4} << 30)) continue;
    auto workspace = DeviceBuffer::Allocate(std::max<size_t>(bytes, 16));
    if (!workspace.ok()) continue;
    const cudnnConvolutionFwdAlgo_t algo = perf[i].algo;
    auto ms = TimeLaunches(
        [&](size_t c) {
          cudnnStatus_t r = cudnnConvolutionForward(
              h, &alpha, xd, F(ops.a[c]), fd, F(ops.b[c]), cd, algo,
              F(*workspace), bytes, &beta, yd, F(ops.c));
          return r == CUDNN_STATUS_SUCCESS
                     ? OkStatus()
                     : Internal(cudnnGetErrorString(r));
        },
        ops.a.size(), reps);
    if (!ms.ok()) continue;
    ++*count;
    if (*ms < best) {
      best = *ms;
      best_algo = algo;
      *best_name = std::string(layout) + " algo" +
                   std::to_string(static_cast<int>(algo));
    }
  }
  if (*count > 0 && format == CUDNN_TENSOR_NHWC) {  // output for the check
    (void)ops.c.Fill32(0x7fc00000);
    size_t bytes = 0;
    cudnnGetConvolutionForwardWorkspaceSize(h, xd, fd, cd, yd, best_algo,
                                            &bytes);
    auto workspace = DeviceBuffer::Allocate(std::max<size_t>(bytes, 16));
    if (workspace.ok()) {
      cudnnConvolutionForward(h, &alpha, xd, F(ops.a[0]), fd, F(ops.b[0]), cd,
                              best_algo, F(*workspace), bytes, &beta, yd,
                              F(ops.c));
      cudaDeviceSynchronize();
    }
  }
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(fd);
  cudnnDestroyConvolutionDescriptor(cd);
  if (*count == 0) {
    return Internal("no cuDNN algorithm ran (find: " +
                    std::string(cudnnGetErrorString(s)) + ")");
  }
  return best;
}
#endif

std::string Describe(const Context& ctx) {
  char out[96];
  if (const auto* cv = std::get_if<ConvContext>(&ctx)) {
    std::snprintf(out, sizeof(out), "N=%lld H=W=%lld C=%lld K=%lld 3x3",
                  (long long)cv->n, (long long)cv->h, (long long)cv->c,
                  (long long)cv->k);
  } else {
    const auto& g = std::get<GemmContext>(ctx);
    std::snprintf(out, sizeof(out), "M=%lld N=%lld K=%lld %s%s",
                  (long long)g.m, (long long)g.n, (long long)g.k,
                  ToString(g.layout_a).data(), ToString(g.layout_b).data());
  }
  return out;
}

std::vector<Problem> Problems(bool quick) {
  using L = Layout;
  std::vector<Problem> p;
  for (int64_t n : {1024, 2048, 4096, 8192})
    if (!quick || n == 4096) p.push_back({"square", Gemm(n, n, n, L::kN, L::kN)});
  for (int64_t n : {256, 1024, 4096, 7168})
    if (!quick || n == 7168) p.push_back({"mlp", Gemm(n, 16, n, L::kN, L::kT)});
  for (int64_t k : {4096, 16384, 65536, 131072})
    if (!quick || k == 131072) p.push_back({"cov", Gemm(64, 64, k, L::kN, L::kT)});
  for (int64_t c : {64, 128, 256, 512, 1024})
    if (!quick || c == 64) p.push_back({"conv56", Conv3x3(1, 56, c, c)});
  for (int64_t hw : {8, 16, 32, 64, 128, 256})
    if (!quick || hw == 16) p.push_back({"conv256", Conv3x3(1, hw, 256, 256)});
  return p;
}

int Main(int argc, char** argv) {
  bool quick = false;
  std::string only;
  std::optional<BlockShape> fixed;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--family") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--xb") == 0 && i + 1 < argc) {
      auto xb = BlockShapeFromString(argv[++i]);
      if (!xb.ok()) {
        std::fprintf(stderr, "--xb: %s\n", xb.status().ToString().c_str());
        return 2;
      }
      fixed = *xb;
    } else {
      std::fprintf(stderr,
                   "usage: kernel_bench [--quick] [--family NAME] [--xb X]\n");
      return 2;
    }
  }
  auto ctx = cuda::Context::Open(0);
  if (!ctx.ok()) {
    std::printf("%s\n", ctx.status().message().c_str());
    return 1;
  }
  cuda::Driver* driver = *cuda::Driver::Get();
  DeviceFingerprint fp = *driver->Fingerprint(0);
  std::printf("# %s\n", ToString(fp).c_str());
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);  // no TF32
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
#ifdef BLOCKTUNE_HAVE_CUDNN
  cudnnHandle_t dnn;
  cudnnCreate(&dnn);
  std::printf("# cuDNN %zu\n", cudnnGetVersion());
#endif
  std::printf("# ratio = vendor / ours (> 1: blocktune faster); sgemm = "
              "cublasSgemm as called, lt = best of cublasLt heuristic "
              "candidates, dnn = best cudnnFind algorithm\n");
  std::printf("%-8s %-30s %5s %10s %10s %10s %7s %7s %8s  %s\n", "family",
              "shape", "tried", "ours_us", "vendor_us", "sgemm_us", "ratio",
              "r_sgemm", "relerr", "best x_B (vendor)");
  std::mt19937 rng(1);
  for (const Problem& p : Problems(quick)) {
    if (!only.empty() && p.family != only) continue;
    const auto [a_elems, b_elems] = InputElements(p.ctx);
    const GemmShape g = ImplicitGemm(p.ctx);
    const double pair_bytes = 4.0 * (a_elems + b_elems);
    const size_t copies = std::clamp<size_t>(
        static_cast<size_t>(std::ceil(200e6 / pair_bytes)), 1, 32);
    Operands ops;
    std::uniform_real_distribution<float> uni(-1, 1);
    std::vector<float> host(std::max(a_elems, b_elems));
    for (size_t c = 0; c < copies; ++c) {
      for (float& v : host) v = uni(rng);
      ops.a.push_back(DeviceBuffer::Allocate(a_elems * 4).value());
      (void)ops.a.back().CopyFromHost(host.data(), a_elems * 4);
      for (float& v : host) v = uni(rng);
      ops.b.push_back(DeviceBuffer::Allocate(b_elems * 4).value());
      (void)ops.b.back().CopyFromHost(host.data(), b_elems * 4);
    }
    ops.c = DeviceBuffer::Allocate(g.m * g.n * 4).value();
    const double flops = Flops(p.ctx);
    const int reps = std::clamp<int>(static_cast<int>(2e10 / flops), 10, 200);

    // Sweep within a budget of ~6 s of kernel time per shape.
    double best_ms = 1e30, spent_ms = 0;
    BlockShape best{};
    int tried = 0;
    const std::vector<BlockShape> candidates =
        fixed ? std::vector<BlockShape>{*fixed}
              : Candidates(p.ctx, fp.sm_count, quick, rng);
    for (const BlockShape& xb : candidates) {
      if (spent_ms > 10000) break;
      const int sweep_reps = std::max(5, reps / 4);
      auto ms = TimeOurs(p.ctx, xb, ops, sweep_reps);
      if (!ms.ok()) continue;
      ++tried;
      spent_ms += *ms * (sweep_reps + 2);
      if (*ms < best_ms) {
        best_ms = *ms;
        best = xb;
      }
    }
    if (tried == 0) {
      std::printf("%-8s %-30s no block shape ran\n", p.family.c_str(),
                  Describe(p.ctx).c_str());
      continue;
    }
    std::vector<float> ours(g.m * g.n), ref(g.m * g.n);
    best_ms = TimeOurs(p.ctx, best, ops, reps, &ours).value();
    double vendor_ms = 0, sgemm_ms = 0;
    std::string vendor = "?";
    if (const auto* gc = std::get_if<GemmContext>(&p.ctx)) {
      int count = 0;
      auto lt_ms = TimeLtBest(lt, *gc, ops, reps, &count);
      auto sg = TimeSgemm(handle, *gc, ops, reps);
      sgemm_ms = sg.ok() ? *sg : 0;
      // Reference output: cublasSgemm on copy 0, into a poisoned C.
      (void)ops.c.Fill32(0x7fc00000);
      (void)Sgemm(handle, *gc, ops, 0);
      vendor_ms = lt_ms.ok() && sgemm_ms > 0 ? std::min(*lt_ms, sgemm_ms)
                : lt_ms.ok() ? *lt_ms : sgemm_ms;
      vendor = "lt " + std::to_string(count) + " cand";
    } else {
#ifdef BLOCKTUNE_HAVE_CUDNN
      // Best over both layouts cuDNN offers for fp32; NHWC last, so its
      // output is the reference.
      int nchw_count = 0, count = 0;
      std::string nchw_name;
      const auto& cv = std::get<ConvContext>(p.ctx);
      auto nchw_ms = TimeCudnnBest(dnn, cv, CUDNN_TENSOR_NCHW, ops, reps,
                                   &nchw_count, &nchw_name);
      auto dnn_ms = TimeCudnnBest(dnn, cv, CUDNN_TENSOR_NHWC, ops, reps,
                                  &count, &vendor);
      if (!dnn_ms.ok()) {
        std::printf("%-8s %-30s cuDNN: %s\n", p.family.c_str(),
                    Describe(p.ctx).c_str(), dnn_ms.status().ToString().c_str());
        continue;
      }
      vendor_ms = *dnn_ms;
      if (nchw_ms.ok() && *nchw_ms < vendor_ms) {
        vendor_ms = *nchw_ms;
        vendor = nchw_name;
      }
      vendor += ", " + std::to_string(count + nchw_count) + " algos";
#else
      std::printf("%-8s %-30s built without cuDNN\n", p.family.c_str(),
                  Describe(p.ctx).c_str());
      continue;
#endif
    }
    cudaDeviceSynchronize();
    (void)ops.c.CopyToHost(ref.data(), ref.size() * 4);
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err += (ours[i] - ref[i]) * double(ours[i] - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    char sgemm[16] = "-", r_sgemm[16] = "-";
    if (sgemm_ms > 0) {
      std::snprintf(sgemm, sizeof(sgemm), "%.1f", sgemm_ms * 1e3);
      std::snprintf(r_sgemm, sizeof(r_sgemm), "%.2f", sgemm_ms / best_ms);
    }
    std::printf("%-8s %-30s %5d %10.1f %10.1f %10s %7.2f %7s %8.1e  %s (%s)\n",
                p.family.c_str(), Describe(p.ctx).c_str(), tried,
                best_ms * 1e3, vendor_ms * 1e3, sgemm, vendor_ms / best_ms,
                r_sgemm, std::sqrt(err / std::max(norm, 1e-300)),
                ToString(best).c_str(), vendor.c_str());
    std::fflush(stdout);
  }
#ifdef BLOCKTUNE_HAVE_CUDNN
  cudnnDestroy(dnn);
#endif
  cublasLtDestroy(lt);
  cublasDestroy(handle);
  return 0;
}

}  // namespace
}  // namespace blocktune

int main(int argc, char** argv) { return blocktune::Main(argc, argv); }
