// The kernel benchmarks' shared measurement code (bench/kernels/measure.h).
#include "bench/kernels/measure.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "bench/timing.h"

namespace blocktune::bench {

using cuda::DeviceBuffer;

namespace {

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

float* F(const DeviceBuffer& b) {
  return reinterpret_cast<float*>(b.address());
}

cublasOperation_t CublasOp(Layout l) {
  return l == Layout::kT ? CUBLAS_OP_T : CUBLAS_OP_N;
}

}  // namespace

ConvContext Conv(int64_t n, int64_t hw, int64_t c, int64_t k, int64_t rs,
                 int64_t stride) {
  ConvContext cv;
  cv.n = n;
  cv.h = cv.w = hw;
  cv.c = c;
  cv.k = k;
  cv.r = cv.s = rs;
  cv.pad_h = cv.pad_w = rs / 2;
  cv.stride_h = cv.stride_w = stride;
  return cv;
}

StatusOr<Operands> MakeOperands(const Context& ctx, std::mt19937& rng) {
  const auto [a_elems, b_elems] = InputElements(ctx);
  const GemmShape g = ImplicitGemm(ctx);
  const double pair_bytes = 4.0 * (a_elems + b_elems);
  const size_t copies = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(200e6 / pair_bytes)), 1, 32);
  Operands ops;
  std::uniform_real_distribution<float> uni(-1, 1);
  std::vector<float> host(std::max(a_elems, b_elems));
  for (size_t c = 0; c < copies; ++c) {
    for (float& v : host) v = uni(rng);
    BT_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::Allocate(a_elems * 4));
    BT_RETURN_IF_ERROR(a.CopyFromHost(host.data(), a_elems * 4));
    ops.a.push_back(std::move(a));
    for (float& v : host) v = uni(rng);
    BT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(b_elems * 4));
    BT_RETURN_IF_ERROR(b.CopyFromHost(host.data(), b_elems * 4));
    ops.b.push_back(std::move(b));
  }
  BT_ASSIGN_OR_RETURN(ops.c, DeviceBuffer::Allocate(g.m * g.n * 4));
  return ops;
}

int RepsFor(const Context& ctx) {
  return std::clamp<int>(static_cast<int>(2e10 / Flops(ctx)), 10, 200);
}

std::vector<BlockShape> SweepCandidates(const Context& ctx, int sm_count,
                                        size_t limit, std::mt19937& rng,
                                        std::initializer_list<int64_t> stages) {
  const GemmShape g = ImplicitGemm(ctx);
  std::vector<BlockShape> out;
  KernelLimits limits;
  for (int64_t ml : {16, 32, 64, 128, 256})
    for (int64_t nl : {16, 32, 64, 128, 256})
      for (int64_t ms : {2, 4, 8, 16})
        for (int64_t ns : {1, 2, 4, 8})
          for (int64_t u : {4, 8, 16})
            for (int64_t kg : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512})
              for (int64_t st : stages) {
                BlockShape xb{ml, nl, ms, ns, u, kg, st};
                if (!Validate(xb).ok() || !CanImplement(ctx, xb, limits).ok())
                  continue;
                const int64_t threads = xb.ThreadsPerProgram();
                if (threads < 32 || threads > 512) continue;
                if (ml > 2 * g.m + 16 || nl > 2 * g.n + 16) continue;
                if (ProgramsInGrid(ctx, xb) * 2 < sm_count) continue;
                if (4 * kg * u > g.k) continue;
                // More stages than the program has steps buy nothing.
                if (st > 1 && (st - 1) * u * kg > g.k) continue;
                out.push_back(xb);
              }
  std::shuffle(out.begin(), out.end(), rng);
  // Up to 40 dense thread tiles (M_S*N_S >= 32, 128..256 threads) first:
  // on large shapes the time budget ends the sweep after a few dozen
  // kernels. The rest stay in random order.
  auto dense_end =
      std::stable_partition(out.begin(), out.end(), [](const BlockShape& xb) {
        const int64_t threads = xb.ThreadsPerProgram();
        return xb.ms * xb.ns >= 32 && threads >= 128 && threads <= 256;
      });
  const auto front =
      out.begin() + std::min<ptrdiff_t>(40, dense_end - out.begin());
  std::shuffle(front, out.end(), rng);
  out.resize(std::min(out.size(), limit));
  return out;
}

double RelativeError(const std::vector<float>& ours,
                     const std::vector<float>& ref) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < ref.size() && i < ours.size(); ++i) {
    err += (ours[i] - ref[i]) * double(ours[i] - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  if (ours.size() != ref.size()) return NAN;
  return std::sqrt(err / std::max(norm, 1e-300));
}

GemmContext Gemm(int64_t m, int64_t n, int64_t k, Layout la, Layout lb) {
  GemmContext g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.layout_a = la;
  g.layout_b = lb;
  return g;
}

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

StatusOr<double> TimeOurs(const Context& ctx, const LoadedGemm& kernel,
                          Operands& ops, int reps, std::vector<float>* output) {
  const int64_t workspace = kernel.kernel().workspace_bytes;
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
    return kernel.Launch(args);
  };
  BT_ASSIGN_OR_RETURN(double ms, TimeLaunches(launch, ops.a.size(), reps));
  if (output) {
    output->resize(ops.c.bytes() / 4);
    BT_RETURN_IF_ERROR(ops.c.Fill32(0x7fc00000));  // NaN: unwritten shows
    BT_RETURN_IF_ERROR(launch(0));
    BT_RETURN_IF_ERROR(ops.c.CopyToHost(output->data(), output->size() * 4));
  }
  return ms;
}

StatusOr<double> TimeOurs(const Context& ctx, const BlockShape& xb,
                          Operands& ops, int reps, std::vector<float>* output) {
  BT_ASSIGN_OR_RETURN(auto kernel, LoadedGemm::Create(ctx, xb, "sm_90"));
  return TimeOurs(ctx, *kernel, ops, reps, output);
}

namespace {

// cublasSgemm on input copy `i`. Row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T.
Status Sgemm(cublasHandle_t h, const GemmContext& g, const Operands& ops,
             size_t i) {
  const float alpha = 1, beta = 0;
  cublasStatus_t s = cublasSgemm(h, CublasOp(g.layout_b), CublasOp(g.layout_a),
                                 g.n, g.m, g.k, &alpha, F(ops.b[i]), Ld(g, 'b'),
                                 F(ops.a[i]), Ld(g, 'a'), &beta, F(ops.c), g.n);
  return s == CUBLAS_STATUS_SUCCESS
             ? OkStatus()
             : Internal("cublasSgemm: " + std::to_string(s));
}

StatusOr<double> TimeSgemm(cublasHandle_t h, const GemmContext& g,
                           Operands& ops, int reps) {
  return TimeLaunches([&](size_t i) { return Sgemm(h, g, ops, i); },
                      ops.a.size(), reps);
}

// The best of the cublasLt heuristic's candidates (up to 16 asked for);
// `count` gets how many ran.
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
              F(ops.c), lc, F(ops.c), lc, &results[r].algo, F(workspace),
              workspace_bytes, nullptr);
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
  cudnnSetTensor4dDescriptor(yd, format, CUDNN_DATA_FLOAT, cv.n, cv.k, cv.P(),
                             cv.Q());
  const char* layout = format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw";
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int found = 0;
  cudnnStatus_t s =
      cudnnFindConvolutionForwardAlgorithm(h, xd, fd, cd, yd, 16, &found, perf);
  if (std::getenv("BLOCKTUNE_BENCH_VERBOSE")) {
    for (int i = 0; i < found; ++i)
      std::printf(
          "#   cudnnFind %s algo%d status=%d math=%d time=%.1fus mem=%zu\n",
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
          return r == CUDNN_STATUS_SUCCESS ? OkStatus()
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

}  // namespace

Vendor::Vendor() {
  cublasCreate(&blas_);
  cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH);  // no TF32
  cublasLtCreate(&lt_);
#ifdef BLOCKTUNE_HAVE_CUDNN
  cudnnCreate(&dnn_);
#endif
}

Vendor::~Vendor() {
#ifdef BLOCKTUNE_HAVE_CUDNN
  cudnnDestroy(dnn_);
#endif
  cublasLtDestroy(lt_);
  cublasDestroy(blas_);
}

VendorTime Vendor::Time(const Context& ctx, Operands& ops, int reps) {
  VendorTime v;
  if (const auto* g = std::get_if<GemmContext>(&ctx)) {
    auto lt = TimeLtBest(lt_, *g, ops, reps, &v.lt_candidates);
    auto sgemm = TimeSgemm(blas_, *g, ops, reps);
    if (lt.ok()) v.lt_ms = *lt;
    if (sgemm.ok()) v.sgemm_ms = *sgemm;
    v.best_ms = std::fmin(v.lt_ms, v.sgemm_ms);
    if (!std::isfinite(v.best_ms)) v.error = sgemm.status().ToString();
    Status ref = ops.c.Fill32(0x7fc00000);
    if (ref.ok()) ref = Sgemm(blas_, *g, ops, 0);
    v.reference = ref.ok();
    if (!ref.ok()) v.error = ref.ToString();
  } else {
#ifdef BLOCKTUNE_HAVE_CUDNN
    const auto& cv = std::get<ConvContext>(ctx);
    int nchw_count = 0, nhwc_count = 0;
    std::string nchw_name, nhwc_name;
    auto nchw = TimeCudnnBest(dnn_, cv, CUDNN_TENSOR_NCHW, ops, reps,
                              &nchw_count, &nchw_name);
    auto nhwc = TimeCudnnBest(dnn_, cv, CUDNN_TENSOR_NHWC, ops, reps,
                              &nhwc_count, &nhwc_name);
    v.dnn_algorithms = nchw_count + nhwc_count;
    v.reference = nhwc.ok();  // NHWC ran last: its output is in C
    if (!nhwc.ok()) v.error = "cuDNN: " + nhwc.status().ToString();
    if (nhwc.ok()) {
      v.dnn_ms = *nhwc;
      v.dnn_algo = nhwc_name;
    }
    if (nchw.ok() && !(*nchw >= v.dnn_ms)) {
      v.dnn_ms = *nchw;
      v.dnn_algo = nchw_name;
    }
    v.best_ms = v.dnn_ms;
#else
    v.error = "built without cuDNN";
#endif
  }
  cudaDeviceSynchronize();
  return v;
}

std::string Describe(const Context& ctx) {
  char out[96];
  if (const auto* cv = std::get_if<ConvContext>(&ctx)) {
    std::snprintf(out, sizeof(out), "N=%lld H=W=%lld C=%lld K=%lld %lldx%lld%s",
                  (long long)cv->n, (long long)cv->h, (long long)cv->c,
                  (long long)cv->k, (long long)cv->r, (long long)cv->s,
                  cv->stride_h == 2 ? "/2" : "");
  } else {
    const auto& g = std::get<GemmContext>(ctx);
    std::snprintf(out, sizeof(out), "M=%lld N=%lld K=%lld %s%s", (long long)g.m,
                  (long long)g.n, (long long)g.k, ToString(g.layout_a).data(),
                  ToString(g.layout_b).data());
  }
  return out;
}

}  // namespace blocktune::bench
