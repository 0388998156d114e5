// The family benchmarks' shared measurement (bench/kernels/family_measure.h).
#include "bench/kernels/family_measure.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>

namespace blocktune::bench {

Case Make(const char* group, DType prec, int64_t m, int64_t n, int64_t k,
          Layout la, Layout lb, int64_t lda, int64_t ldb, int64_t ldc) {
  Case c;
  c.group = group;
  c.problem = Problem(GemmContext{m, n, k, la, lb, prec});
  c.problem.lda = lda;
  c.problem.ldb = ldb;
  c.problem.ldc = ldc;
  return c;
}

Case MakeConv(const char* group, DType prec, int64_t n, int64_t hw, int64_t c,
              int64_t k, int64_t rs, int64_t stride, int64_t pad,
              int64_t dilation, int64_t s, int64_t w) {
  ConvContext cv;
  cv.n = n;
  cv.h = hw;
  cv.w = w > 0 ? w : hw;
  cv.c = c;
  cv.k = k;
  cv.r = rs;
  cv.s = s > 0 ? s : rs;
  cv.pad_h = pad >= 0 ? pad : dilation * (rs / 2);
  cv.pad_w = pad >= 0 ? pad : dilation * (cv.s / 2);
  cv.stride_h = cv.stride_w = stride;
  cv.dilation_h = cv.dilation_w = dilation;
  cv.dtype = prec;
  Case out;
  out.group = group;
  out.problem = Problem(Context(cv));
  return out;
}

cudaDataType_t CudaType(DType p) {
  switch (p) {
    case DType::kBf16:
      return CUDA_R_16BF;
    case DType::kFp16:
      return CUDA_R_16F;
    default:
      return CUDA_R_32F;
  }
}

namespace {

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

// Times run(i) for each of `count` vendor algorithms, the fastest into
// r->us (r->algos_timed counts those that ran), then runs the fastest once
// more into a NaN-poisoned buf.c_ref: the reference. Its index, or -1.
int TimeFastest(int count, const std::function<bool(int)>& run, Buffers& buf,
                Timer& timer, int reps, LtResult* r) {
  int best = -1;
  for (int i = 0; i < count; ++i) {
    const double us = timer.Time([&] { return run(i); }, reps);
    if (!std::isfinite(us)) continue;
    ++r->algos_timed;
    if (!(us >= r->us)) {
      r->us = us;
      best = i;
    }
  }
  if (best >= 0) {
    cudaMemset(buf.c_ref, 0xff, buf.c_bytes);
    run(best);
    cudaDeviceSynchronize();
  }
  return best;
}

}  // namespace

void FillRandom(void* dev, size_t elems, DType prec, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<float>((s >> 40) * (1.0 / (1ull << 24)) * 2.0 - 1.0);
  };
  if (SizeOf(prec) == 4) {  // tf32, fp32
    std::vector<float> h(elems);
    for (auto& v : h) v = next();
    CHECK_CUDA(cudaMemcpy(dev, h.data(), elems * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<uint16_t> h(elems);
    for (auto& v : h) {
      const float f = next();
      if (prec == DType::kBf16) {
        v = ToBf16(f);
      } else {
        const _Float16 x = static_cast<_Float16>(f);
        std::memcpy(&v, &x, 2);
      }
    }
    CHECK_CUDA(cudaMemcpy(dev, h.data(), elems * 2, cudaMemcpyHostToDevice));
  }
}

std::vector<double> ToDoubles(const void* dev, size_t elems, DType prec) {
  std::vector<double> out(elems);
  if (SizeOf(prec) == 4) {  // tf32, fp32
    std::vector<float> h(elems);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, elems * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < elems; ++i) out[i] = h[i];
  } else {
    std::vector<uint16_t> h(elems);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, elems * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < elems; ++i) {
      if (prec == DType::kBf16) {
        uint32_t u = uint32_t{h[i]} << 16;
        float f;
        std::memcpy(&f, &u, 4);
        out[i] = f;
      } else {
        _Float16 x;
        std::memcpy(&x, &h[i], 2);
        out[i] = static_cast<float>(x);
      }
    }
  }
  return out;
}

// The best cuBLASLt heuristic algorithm, timed one by one; its output is
// left in buf.c_ref. Row-major C = op(A) op(B) is column-major C^T =
// op(B)^T op(A)^T: cuBLASLt's "A" is our B.
LtResult TimeLt(cublasLtHandle_t lt, const Case& pr, Buffers& buf,
                Timer& timer, int reps) {
  const GemmContext& g = pr.g();
  const bool at = g.layout_a == Layout::kT, bt = g.layout_b == Layout::kT;
  cublasOperation_t ta = bt ? CUBLAS_OP_T : CUBLAS_OP_N,
                    tb = at ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasComputeType_t compute = pr.prec() == DType::kTf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = CudaType(pr.prec());
  // The descriptors, owned by whoever holds the best algorithm's launcher.
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulHeuristicResult_t results[16];
    ~Plan() {
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(desc);
    }
  };
  auto plan = std::make_shared<Plan>();
  cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                 sizeof(ta));
  cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                 sizeof(tb));
  cublasLtMatrixLayoutCreate(&plan->la, type, bt ? g.k : g.n, bt ? g.n : g.k,
                             pr.Ldb());
  cublasLtMatrixLayoutCreate(&plan->lb, type, at ? g.m : g.k, at ? g.k : g.m,
                             pr.Lda());
  cublasLtMatrixLayoutCreate(&plan->lc, type, g.n, g.m, pr.Ldc());
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  size_t ws_bytes = buf.ws_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref,
                                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &ws_bytes, sizeof(ws_bytes));
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, plan->desc, plan->la, plan->lb, plan->lc,
                                 plan->lc, pref, 16, plan->results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  LtResult r;
  r.algos_offered = found;
  Buffers* b = &buf;
  auto run = [lt, plan, b, ws_bytes](int i) {
    static const float alpha = 1, beta = 0;
    return cublasLtMatmul(lt, plan->desc, &alpha, b->b, plan->la, b->a,
                          plan->lb, &beta, b->c_ref, plan->lc, b->c_ref,
                          plan->lc, &plan->results[i].algo, b->ws, ws_bytes,
                          nullptr) == CUBLAS_STATUS_SUCCESS;
  };
  const int best = TimeFastest(found, run, buf, timer, reps, &r);
  if (best >= 0) r.best = [run, best] { return run(best); };
  return r;
}

#ifdef BLOCKTUNE_HAVE_CUDNN
// cuDNN's best algorithm for a convolution in the case's precision (see the
// file comment), timed one by one; its output is left in buf.c_ref.
// algos_offered: how many cudnnFind returned; algos_timed: those that ran.
LtResult TimeCudnn(cudnnHandle_t h, const Case& pr, Buffers& buf, Timer& timer,
                   int reps, std::string* best_name) {
  const ConvContext& v = pr.cv();
  const cudnnDataType_t type = pr.prec() == DType::kBf16   ? CUDNN_DATA_BFLOAT16
                               : pr.prec() == DType::kFp16 ? CUDNN_DATA_HALF
                                                           : CUDNN_DATA_FLOAT;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t fd;
  cudnnConvolutionDescriptor_t cd;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateTensorDescriptor(&yd);
  cudnnCreateFilterDescriptor(&fd);
  cudnnCreateConvolutionDescriptor(&cd);
  cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, type, v.n, v.c, v.h, v.w);
  cudnnSetFilter4dDescriptor(fd, type, CUDNN_TENSOR_NHWC, v.k, v.c, v.r, v.s);
  cudnnSetConvolution2dDescriptor(cd, v.pad_h, v.pad_w, v.stride_h,
                                  v.stride_w, v.dilation_h, v.dilation_w,
                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  // fp32: TF32 off (CUDNN_FMA_MATH); else tensor cores.
  cudnnSetConvolutionMathType(cd, pr.prec() == DType::kFp32
                                      ? CUDNN_FMA_MATH
                                      : CUDNN_TENSOR_OP_MATH);
  cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, type, v.n, v.k, v.P(),
                             v.Q());
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int found = 0;
  LtResult r;
  // cudnnFind twice, the second list used: the first call's timings are of
  // cold launches (58.8 and 195.3 us for an 8x8x256 layer that runs in
  // 10.2, bench/results/h200/cudnn_math/), and cuDNN's choices follow them.
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  for (int pass = 0; pass < 2 && st == CUDNN_STATUS_SUCCESS; ++pass) {
    st = cudnnFindConvolutionForwardAlgorithmEx(h, xd, buf.a, fd, buf.b, cd, yd,
                                                buf.c_ref, 16, &found, perf,
                                                buf.ws, buf.ws_bytes);
  }
  if (st != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "# cudnnFind: %s\n", cudnnGetErrorString(st));
    found = 0;
  }
  std::vector<int> usable;  // indices into perf
  for (int i = 0; i < found; ++i) {
    std::fprintf(stderr, "# cudnnFind algo%d status %d math %d %.1f us ws %zu\n",
                 int(perf[i].algo), int(perf[i].status), int(perf[i].mathType),
                 perf[i].time * 1e3, perf[i].memory);
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= buf.ws_bytes)
      usable.push_back(i);
  }
  r.algos_offered = static_cast<int>(usable.size());
  // The descriptors, owned by whoever holds the best algorithm's launcher.
  struct Plan {
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t fd;
    cudnnConvolutionDescriptor_t cd;
    ~Plan() {
      cudnnDestroyTensorDescriptor(xd);
      cudnnDestroyTensorDescriptor(yd);
      cudnnDestroyFilterDescriptor(fd);
      cudnnDestroyConvolutionDescriptor(cd);
    }
  };
  auto plan = std::make_shared<Plan>();
  plan->xd = xd;
  plan->yd = yd;
  plan->fd = fd;
  plan->cd = cd;
  Buffers* b = &buf;
  // cudnnFind lists an algorithm once per math type it tried (algo1 with
  // tensor ops and again with the default math, another kernel with its own
  // workspace); cuDNN runs what the descriptor's math type says, so each is
  // timed with its own (as cuDNN's documentation asks). fp32 keeps
  // CUDNN_FMA_MATH whatever the entry says: TF32 stays off.
  const bool fp32 = pr.prec() == DType::kFp32;
  auto run_algo = [h, plan, b, fp32](cudnnConvolutionFwdAlgo_t algo,
                                     cudnnMathType_t math) {
    static const float alpha = 1, beta = 0;
    cudnnSetConvolutionMathType(plan->cd, fp32 ? CUDNN_FMA_MATH : math);
    return cudnnConvolutionForward(h, &alpha, plan->xd, b->a, plan->fd, b->b,
                                   plan->cd, algo, b->ws, b->ws_bytes, &beta,
                                   plan->yd, b->c_ref) == CUDNN_STATUS_SUCCESS;
  };
  const int best = TimeFastest(
      r.algos_offered,
      [&](int j) {
        return run_algo(perf[usable[j]].algo, perf[usable[j]].mathType);
      },
      buf, timer, reps, &r);
  if (best >= 0) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[usable[best]];
    *best_name = "algo" + std::to_string(int(p.algo)) + " math" +
                 std::to_string(int(p.mathType));
    const cudnnConvolutionFwdAlgo_t algo = p.algo;
    const cudnnMathType_t math = p.mathType;
    r.best = [run_algo, algo, math] { return run_algo(algo, math); };
  }
  return r;
}
#endif

namespace {

// The values each parameter takes here: the family's domain, narrowed for
// gemm.mma to the grid of its issue-17 benchmark and for the ffma families
// to the usual power-of-two block shapes (their whole domains have
// millions of points).
std::vector<std::vector<int64_t>> BenchDomain(const KernelFamily& f) {
  static const std::map<std::string, std::vector<int64_t>> kMma = {
      {"bm", {16, 32, 64, 128, 256}},
      {"bn", {8, 16, 32, 64, 128, 256}},
      {"bk", {16, 32, 64, 128, 256}},
      {"wm", {1, 2, 4}},
      {"wn", {1, 2, 4}},
      {"st", {3, 4, 5}},
      {"kg", {1, 2, 4, 8, 16, 32, 64, 128, 256}},
      {"gm", {1, 8}},
      {"sk", {0, 1}}};
  // The ffma families (6.8 million points): power-of-two tiles of 16-256
  // (N_L from 1, for skinny products), thread tiles of 1-8, U of 4-32, K_G
  // of 1-256 (25,920 points).
  static const std::map<std::string, std::vector<int64_t>> kFfma = {
      {"ml", {16, 32, 64, 128, 256}},
      {"nl", {1, 2, 4, 8, 16, 32, 64, 128, 256}},
      {"ms", {1, 2, 4, 8}},
      {"ns", {1, 2, 4, 8}},
      {"u", {4, 8, 16, 32}},
      {"kg", {1, 2, 4, 8, 16, 32, 64, 128, 256}}};
  const bool ffma = f.name() == "gemm.ffma" || f.name() == "conv.ffma";
  const auto& narrow = ffma ? kFfma : kMma;
  std::vector<std::vector<int64_t>> out;
  for (const ParamSpec& s : f.params()) {
    auto it = narrow.find(s.LowerName());
    out.push_back((ffma || f.name() == "gemm.mma") && it != narrow.end()
                      ? it->second
                      : s.values);
  }
  return out;
}

// A prior, as a tuner's would be, tried first where the rules and cuts
// keep it. gemm.mma: the usual mma.sync shapes for large products (64x64 or
// 64x32 warp tiles) and streaming shapes for skinny ones (one warp per 16
// rows, deep K stages, split-K). gemm.wgmma: 128 x 256 tiles with two
// consumer warpgroups for large products (the best of its first H100 run),
// in cluster pairs sharing B (v2) and alone, narrower ones for skinny
// products. Keys a family does not have make the
// line unparsable: it is skipped.
const std::vector<std::string>& Prior(std::string_view family) {
  static const std::map<std::string, std::vector<std::string>, std::less<>>
      kPrior = {
          {"gemm.mma",
           {"bm=128 bn=128 bk=64 wm=2 wn=2 st=3 kg=1 gm=8",
            "bm=128 bn=256 bk=64 wm=2 wn=4 st=3 kg=1 gm=8",
            "bm=256 bn=128 bk=64 wm=4 wn=2 st=3 kg=1 gm=8",
            "bm=128 bn=256 bk=32 wm=2 wn=4 st=4 kg=1 gm=8",
            "bm=128 bn=128 bk=64 wm=2 wn=2 st=3 kg=1 gm=1",
            "bm=128 bn=128 bk=32 wm=2 wn=2 st=4 kg=1 gm=8",
            "bm=128 bn=64 bk=64 wm=2 wn=2 st=4 kg=1 gm=8",
            "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=1 gm=1",
            "bm=16 bn=8 bk=128 wm=1 wn=1 st=5 kg=1 gm=1",
            "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=1 gm=1",
            "bm=32 bn=16 bk=128 wm=2 wn=1 st=4 kg=1 gm=1",
            "bm=32 bn=8 bk=256 wm=2 wn=1 st=4 kg=1 gm=1 sk=0",
            "bm=64 bn=8 bk=128 wm=4 wn=1 st=4 kg=2 gm=1 sk=1",
            "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=4 gm=1 sk=1",
            "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=2 gm=1 sk=1",
            "bm=16 bn=64 bk=64 wm=1 wn=4 st=4 kg=128 gm=1",
            "bm=16 bn=64 bk=64 wm=1 wn=4 st=4 kg=128 gm=1 sk=1",
            "bm=32 bn=32 bk=32 wm=1 wn=4 st=5 kg=32 gm=1",
            "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=128 gm=1 sk=1",
            "bm=64 bn=64 bk=128 wm=2 wn=2 st=3 kg=32 gm=1 sk=1"}},
          // gemm.gemv: decode (one column per warp, vectors of 4), MLP
          // layers of 16 columns (4 rows x 8 or 16 columns per warp), and
          // 64 x 64 covariances (8 x 8 per warp, 2 x 4 or 1 x 8 warps
          // sharing A through L1, K split 16 or 32 ways); each also with
          // the next chunk prefetched (PF = 1).
          // gemm.ffma_k: 64 x 64 covariance tiles (8 x 4 lanes of 4 x 4 or
          // 8 x 8 outputs) split 64-128 ways over K (the SMs filled by K);
          // MLP tiles of all 16 columns (4 x 4 per lane, 4 or 8 warps along
          // M); decode tiles of all 8 columns or one (32 x 1 lanes, so A
          // is read once); square tiles of 8 x 8 per lane; and the
          // covariance and MLP tiles again with each stage split over 2-8
          // groups of warps (WK: more warps per SM, the same workspace).
          {"gemm.ffma_k",
           {// v3: clusters of CL splits adding their sums in distributed
            // shared memory (more programs per SM, a workspace of K_G /
            // CL sums), beside v2's best covariance (K_G = 256).
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 WK=1 CL=8",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1 CL=8",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=1024 WK=1 CL=8",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 WK=1 CL=4",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=4 KG=512 WK=1 CL=8",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=64 ST=3 KG=256 WK=1 CL=8",
            "LM=8 TM=4 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 WK=1 CL=8",
            "LM=4 TM=8 TN=4 WM=2 WN=2 KC=16 ST=4 KG=1024 WK=1 CL=8",
            "LM=8 TM=4 TN=4 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4 CL=8",
            "LM=16 TM=2 TN=8 WM=4 WN=1 KC=32 ST=4 KG=4 WK=1 CL=4",
            "LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=128 WK=1",
            "LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=64 WK=1",
            "LM=8 TM=4 TN=4 WM=2 WN=4 KC=64 ST=2 KG=128 WK=1",
            "LM=8 TM=8 TN=8 WM=1 WN=2 KC=16 ST=4 KG=128 WK=1",
            "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=1",
            "LM=8 TM=4 TN=4 WM=1 WN=4 KC=32 ST=4 KG=64 WK=1",
            "LM=8 TM=4 TN=4 WM=2 WN=2 KC=32 ST=3 KG=64 WK=1",
            "LM=8 TM=4 TN=4 WM=4 WN=1 KC=32 ST=3 KG=1 WK=1",
            "LM=8 TM=4 TN=4 WM=8 WN=1 KC=32 ST=3 KG=1 WK=1",
            "LM=8 TM=8 TN=4 WM=4 WN=1 KC=32 ST=3 KG=1 WK=1",
            "LM=16 TM=2 TN=8 WM=4 WN=1 KC=32 ST=3 KG=1 WK=1",
            "LM=8 TM=4 TN=4 WM=4 WN=1 KC=64 ST=3 KG=2 WK=1",
            "LM=32 TM=1 TN=8 WM=4 WN=1 KC=32 ST=3 KG=1 WK=1",
            "LM=32 TM=2 TN=8 WM=2 WN=1 KC=32 ST=3 KG=1 WK=1",
            "LM=16 TM=2 TN=4 WM=4 WN=1 KC=32 ST=4 KG=1 WK=1",
            "LM=32 TM=1 TN=1 WM=8 WN=1 KC=64 ST=3 KG=1 WK=1",
            "LM=8 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1 WK=1",
            "LM=8 TM=8 TN=4 WM=2 WN=4 KC=16 ST=3 KG=1 WK=1",
            "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=2",
            "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=64 WK=2",
            "LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=64 WK=2",
            "LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=3 KG=32 WK=2",
            "LM=8 TM=4 TN=4 WM=1 WN=4 KC=32 ST=3 KG=64 WK=4",
            "LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=16 WK=2",
            "LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4",
            "LM=8 TM=4 TN=4 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4"}},
          {"gemm.gemv",
           {"R=2 NC=1 W=4 WN=1 V=4 U=2 KG=1",
            "R=1 NC=1 W=4 WN=1 V=4 U=4 KG=1",
            "R=4 NC=16 W=4 WN=1 V=4 U=1 KG=1",
            "R=4 NC=8 W=4 WN=2 V=4 U=1 KG=1",
            "R=2 NC=16 W=4 WN=1 V=4 U=2 KG=1",
            "R=2 NC=8 W=4 WN=2 V=4 U=2 KG=2",
            "R=4 NC=16 W=2 WN=1 V=4 U=1 KG=4",
            "R=8 NC=8 W=2 WN=4 V=4 U=1 KG=16",
            "R=8 NC=8 W=2 WN=4 V=4 U=1 KG=32",
            "R=4 NC=8 W=4 WN=4 V=4 U=1 KG=16",
            "R=8 NC=8 W=1 WN=8 V=4 U=1 KG=16",
            "R=4 NC=4 W=4 WN=4 V=4 U=2 KG=32",
            "R=2 NC=1 W=4 WN=1 V=4 U=2 PF=1 KG=1",
            "R=2 NC=16 W=4 WN=1 V=4 U=1 PF=1 KG=1",
            "R=4 NC=8 W=4 WN=2 V=4 U=1 PF=1 KG=1",
            "R=2 NC=8 W=4 WN=2 V=4 U=1 PF=1 KG=1",
            "R=4 NC=8 W=2 WN=4 V=4 U=1 PF=1 KG=16",
            "R=4 NC=8 W=4 WN=2 V=4 U=1 PF=1 KG=16",
            "R=4 NC=4 W=4 WN=4 V=4 U=1 PF=1 KG=16",
            "R=4 NC=8 W=2 WN=4 V=4 U=1 PF=1 KG=32",
            "R=4 NC=8 W=8 WN=2 V=4 U=1 PF=0 KG=1",
            "R=4 NC=16 W=8 WN=1 V=4 U=1 PF=0 KG=1",
            "R=2 NC=16 W=8 WN=1 V=4 U=1 PF=1 KG=1"}},
          // conv.mma: gemm.mma's large tiles (4 or 8 warps of 64x64 or
          // 64x32), and narrow tiles with a split over the reduction for
          // small images (7x7 and 14x14 at batch 1: few output pixels,
          // a long C*R*S).
          {"conv.mma",
           {"bm=128 bn=128 bk=32 wm=2 wn=2 st=4 kg=1 gm=8",
            "bm=128 bn=128 bk=32 wm=2 wn=4 st=4 kg=1 gm=8",
            "bm=128 bn=128 bk=64 wm=2 wn=4 st=3 kg=1 gm=8",
            "bm=128 bn=256 bk=32 wm=2 wn=4 st=3 kg=1 gm=8",
            "bm=256 bn=128 bk=32 wm=4 wn=2 st=3 kg=1 gm=8",
            "bm=128 bn=64 bk=32 wm=2 wn=2 st=4 kg=1 gm=8",
            "bm=128 bn=64 bk=64 wm=4 wn=2 st=3 kg=1 gm=8",
            "bm=64 bn=128 bk=64 wm=2 wn=4 st=3 kg=1 gm=8",
            "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=1 gm=8",
            "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=2 gm=8",
            "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=4 gm=8",
            "bm=64 bn=128 bk=64 wm=2 wn=4 st=3 kg=4 gm=8",
            "bm=32 bn=64 bk=64 wm=1 wn=4 st=4 kg=8 gm=8",
            "bm=64 bn=64 bk=32 wm=2 wn=2 st=5 kg=8 gm=8",
            "bm=128 bn=64 bk=16 wm=4 wn=2 st=4 kg=1 gm=8",
            "bm=128 bn=32 bk=16 wm=4 wn=1 st=4 kg=1 gm=8"}},
          {"gemm.wgmma",
           {"bm=128 bn=256 bk=64 st=4 wg=2 gm=8 cm=2",
            "bm=128 bn=256 bk=64 st=3 wg=2 gm=8 cm=2",
            "bm=128 bn=256 bk=64 st=4 wg=2 gm=16 cm=2",
            "bm=256 bn=128 bk=64 st=4 wg=2 gm=8 cm=2",
            "bm=128 bn=256 bk=32 st=6 wg=2 gm=8 cm=2",
            "bm=128 bn=256 bk=64 st=4 wg=2 gm=8",
            "bm=128 bn=256 bk=64 st=3 wg=2 gm=8",
            "bm=128 bn=256 bk=64 st=4 wg=2 gm=16",
            "bm=256 bn=128 bk=64 st=4 wg=2 gm=8",
            "bm=128 bn=192 bk=64 st=4 wg=2 gm=8",
            "bm=128 bn=128 bk=64 st=5 wg=2 gm=8",
            "bm=128 bn=128 bk=64 st=4 wg=1 gm=8",
            "bm=128 bn=256 bk=32 st=4 wg=2 gm=8",
            "bm=128 bn=256 bk=32 st=6 wg=2 gm=8",
            "bm=128 bn=128 bk=32 st=6 wg=2 gm=8",
            "bm=256 bn=128 bk=32 st=4 wg=2 gm=8",
            "bm=128 bn=16 bk=64 st=8 wg=1 gm=1",
            "bm=64 bn=16 bk=128 st=6 wg=1 gm=1",
            "bm=128 bn=16 bk=128 st=4 wg=2 gm=1",
            "bm=128 bn=32 bk=128 st=4 wg=2 gm=1",
            "bm=64 bn=64 bk=64 st=6 wg=1 gm=1"}},
          // gemm.wgmma_rs (tf32 only, bk 32 = one 128-byte row): the
          // large tiles whose two banks of A fragments fit the registers.
          {"gemm.wgmma_rs",
           {"bm=128 bn=256 bk=32 st=4 wg=2 gm=8 cm=2",
            "bm=128 bn=256 bk=32 st=4 wg=2 gm=8",
            "bm=128 bn=256 bk=32 st=4 wg=2 gm=16",
            "bm=128 bn=256 bk=32 st=3 wg=2 gm=8",
            "bm=128 bn=192 bk=32 st=4 wg=2 gm=8",
            "bm=128 bn=128 bk=32 st=6 wg=2 gm=8",
            "bm=128 bn=128 bk=64 st=3 wg=2 gm=8",
            "bm=128 bn=128 bk=32 st=4 wg=1 gm=8",
            "bm=256 bn=64 bk=32 st=4 wg=2 gm=8",
            "bm=64 bn=128 bk=32 st=6 wg=1 gm=8",
            "bm=64 bn=64 bk=32 st=6 wg=1 gm=1"}},
          // conv.wgmma: gemm.wgmma's large tiles (no cluster pairs, no
          // split), and smaller ones for layers of few output pixels.
          {"conv.wgmma",
           {"bm=128 bn=256 bk=64 st=4 wg=2 gm=8",
            "bm=128 bn=256 bk=64 st=3 wg=2 gm=8",
            "bm=256 bn=128 bk=64 st=4 wg=2 gm=8",
            "bm=128 bn=128 bk=64 st=5 wg=2 gm=8",
            "bm=128 bn=128 bk=64 st=4 wg=1 gm=8",
            "bm=128 bn=256 bk=32 st=6 wg=2 gm=8",
            "bm=128 bn=128 bk=32 st=6 wg=2 gm=8",
            "bm=128 bn=64 bk=64 st=6 wg=2 gm=8",
            "bm=128 bn=64 bk=64 st=6 wg=1 gm=8",
            "bm=64 bn=128 bk=64 st=5 wg=1 gm=8",
            "bm=64 bn=64 bk=64 st=6 wg=1 gm=1",
            "bm=64 bn=64 bk=128 st=4 wg=1 gm=1"}}};
  static const std::vector<std::string> kNone;
  // gemm.ffma_kpk runs gemm.ffma_k's kernel on packed copies: its priors.
  if (family == "gemm.ffma_kpk") family = "gemm.ffma_k";
  auto it = kPrior.find(family);
  return it == kPrior.end() ? kNone : it->second;
}

int64_t Value(const KernelFamily& f, const Params& p, const char* name,
              int64_t missing) {
  const int i = f.ParamIndex(name);
  return i < 0 ? missing : p[i];
}

}  // namespace

// Candidates of family `f` for `c`: its bench domain, filtered by
// ValidateParams, the rules for this device, SplitHasWork and the cuts a
// tuner's prior would make (tiles at most ~2x the problem unless the
// family has none smaller, a grouped raster only with two waves of tiles
// or more, at least a quarter wave of programs where K can be split,
// K_G * BK * 2 <= K, no split with two waves of tiles already); the prior
// first, then a deterministic random sample, at most `limit`.
std::vector<Params> Candidates(const KernelFamily& f, const Case& c,
                               const KernelLimits& limits, int sm_count,
                               size_t limit, uint64_t seed) {
  const GemmShape g = c.dims();
  const auto dom = BenchDomain(f);
  const int ibm = f.ParamIndex("bm"), ibn = f.ParamIndex("bn"),
            ikg = f.ParamIndex("kg");
  const int64_t min_m = ibm >= 0 ? dom[ibm].front() : 1;
  const int64_t min_n = ibn >= 0 ? dom[ibn].front() : 1;
  const bool can_split = ikg >= 0 && dom[ikg].back() > 1;
  const int64_t max_kg = ikg >= 0 ? dom[ikg].back() : 1;
  std::vector<Params> out;
  Params p;
  p.size = static_cast<int>(dom.size());
  std::vector<size_t> at(dom.size(), 0);
  for (bool more = !dom.empty(); more;) {
    for (size_t i = 0; i < dom.size(); ++i) p[i] = dom[i][at[i]];
    // The odometer's next position.
    more = false;
    for (size_t i = 0; i < dom.size(); ++i) {
      if (++at[i] < dom[i].size()) {
        more = true;
        break;
      }
      at[i] = 0;
    }
    if (!f.ValidateParams(p).ok() ||
        f.FirstFailingRule(c.problem, p, limits) >= 0)
      continue;
    const ConfigShape sh = f.Shape(c.problem, p);
    if (!SplitHasWork(c.problem, sh)) continue;
    if (sh.tile_m > 2 * g.m + 16 && sh.tile_m > min_m) continue;
    if (sh.tile_n > 8 && sh.tile_n > 2 * g.n && sh.tile_n > min_n) continue;
    const int64_t tiles = ((g.m + sh.tile_m - 1) / sh.tile_m) *
                          ((g.n + sh.tile_n - 1) / sh.tile_n);
    const int64_t kg = sh.split_k;
    if (Value(f, p, "gm", 1) > 1 && tiles < 2 * sm_count) continue;
    if (can_split && tiles * kg * 4 < sm_count && kg < max_kg) continue;
    if (kg > 1 && kg * sh.step_k * 2 > g.k) continue;
    if (kg > 1 && tiles >= 2 * sm_count) continue;
    const int64_t warps = Value(f, p, "wm", 2) * Value(f, p, "wn", 2);
    if (warps < 2 && sh.tile_m * sh.tile_n >= 64 * 64) continue;
    out.push_back(p);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(out.begin(), out.end(), rng);
  std::vector<Params> prior;
  const int igm = f.ParamIndex("gm");
  for (const std::string& text : Prior(f.name())) {
    auto parsed = f.Parse(text);
    if (!parsed.ok()) continue;
    auto it = std::find(out.begin(), out.end(), *parsed);
    if (it == out.end() && igm >= 0) {  // too few tiles to group: gm = 1
      (*parsed)[igm] = 1;
      it = std::find(out.begin(), out.end(), *parsed);
    }
    if (it != out.end()) {
      out.erase(it);
      prior.push_back(*parsed);
    }
  }
  out.insert(out.begin(), prior.begin(), prior.end());
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string ShapeText(const Case& c) {
  char s[128];
  if (c.conv()) {
    const ConvContext& v = c.cv();
    std::snprintf(s, sizeof(s), "n%lld %lldx%lld c%lld k%lld %lldx%lld s%lld%s",
                  (long long)v.n, (long long)v.h, (long long)v.w,
                  (long long)v.c, (long long)v.k, (long long)v.r,
                  (long long)v.s, (long long)v.stride_h,
                  v.dilation_h > 1 ? " d2" : "");
    return s;
  }
  const GemmContext& g = c.g();
  std::snprintf(s, sizeof(s), "%lldx%lldx%lld %s%s%s", (long long)g.m,
                (long long)g.n, (long long)g.k, ToString(g.layout_a).data(),
                ToString(g.layout_b).data(),
                (c.problem.lda || c.problem.ldb || c.problem.ldc) ? " ld-padded" : "");
  return s;
}

double RelErr(const std::vector<double>& x, const std::vector<double>& y,
              const Case& c) {
  double e = 0, n = 0;
  for (int64_t i = 0; i < c.dims().m; ++i)
    for (int64_t j = 0; j < c.dims().n; ++j) {
      const size_t k = i * c.Ldc() + j;
      if (!std::isfinite(x[k]) || !std::isfinite(y[k])) return NAN;
      e += (x[k] - y[k]) * (x[k] - y[k]);
      n += y[k] * y[k];
    }
  return std::sqrt(e / std::max(n, 1e-300));
}

// One family's best on one shape.

std::string TritonKey(const Case& c) {
  const GemmContext& g = c.g();
  return std::string(ToString(c.prec())) + " " +
         (g.layout_a == Layout::kT ? "T" : "N") +
         (g.layout_b == Layout::kT ? "T" : "N") + " " + std::to_string(g.m) +
         " " + std::to_string(g.n) + " " + std::to_string(g.k) + " " +
         std::to_string(c.Lda()) + " " + std::to_string(c.Ldb());
}

StatusOr<std::map<std::string, double>> ReadTritonTimes(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read --triton " + path);
  std::map<std::string, double> out;
  std::string prec, lay, config;
  int64_t m, n, k, lda, ldb;
  double us;
  while (in >> prec >> lay >> m >> n >> k >> lda >> ldb >> us >> config)
    out[prec + " " + lay + " " + std::to_string(m) + " " + std::to_string(n) +
        " " + std::to_string(k) + " " + std::to_string(lda) + " " +
        std::to_string(ldb)] = us;
  return out;
}

double Tolerance(DType prec) {
  switch (prec) {
    case DType::kFp32:
      return 1e-4;
    case DType::kTf32:
      return 1e-3;
    default:
      return 2e-2;
  }
}

size_t OutputElements(const Case& c) {
  return static_cast<size_t>(c.dims().m) * c.Ldc();
}

void Allocate(const Case& c, Buffers* buf) {
  const GemmShape g = c.dims();
  size_t a_elems = 0, b_elems = 0;
  if (c.conv()) {
    const ConvContext& v = c.cv();
    a_elems = v.n * v.h * v.w * v.c;
    b_elems = v.k * v.r * v.s * v.c;
  } else {
    const bool at = c.g().layout_a == Layout::kT,
               bt = c.g().layout_b == Layout::kT;
    a_elems = (at ? g.k : g.m) * c.Lda();
    b_elems = (bt ? g.n : g.k) * c.Ldb();
  }
  const int es = c.ElementBytes();
  buf->a_bytes = a_elems * es;
  buf->b_bytes = b_elems * es;
  buf->c_bytes = OutputElements(c) * es;
  buf->ws_bytes = (c.conv() ? size_t{256} : size_t{64}) << 20;
  CHECK_CUDA(cudaMalloc(&buf->a, buf->a_bytes));
  CHECK_CUDA(cudaMalloc(&buf->b, buf->b_bytes));
  CHECK_CUDA(cudaMalloc(&buf->c, buf->c_bytes));
  CHECK_CUDA(cudaMalloc(&buf->c_ref, buf->c_bytes));
  CHECK_CUDA(cudaMalloc(&buf->ws, buf->ws_bytes));
  // Padded rows' tails are compared too: both outputs start equal there.
  CHECK_CUDA(cudaMemset(buf->c, 0, buf->c_bytes));
  CHECK_CUDA(cudaMemset(buf->c_ref, 0, buf->c_bytes));
  FillRandom(buf->a, a_elems, c.prec(), 1);
  FillRandom(buf->b, b_elems, c.prec(), 2);
}

}  // namespace blocktune::bench
