// gemm.mma against cuBLASLt in the same precision (issue 17's shape
// families), in one run, on one GPU.
//
// Per shape: the family's parameter space is enumerated, CanImplementMma
// filters it, a few sanity cuts keep tiles near the problem's size, and up
// to --configs of the rest (a deterministic random sample) are generated,
// JIT-loaded in parallel and timed quickly; the best 4 are re-timed with
// more repetitions. cuBLASLt: the heuristic is asked for 16 algorithms
// (bf16/fp16: CUBLAS_COMPUTE_32F with A, B, C in that type; tf32:
// CUBLAS_COMPUTE_32F_FAST_TF32, fp32 storage), 64 MiB workspace, and every
// one returned is timed; the best counts. Timing: each launch is preceded by
// a 256 MiB memset (outside the events) that flushes the 50 MB L2, CUDA
// events around the launch alone, 3 warm-ups, the median of the
// repetitions. Inputs are random in [-1, 1]. Our best kernel's output is
// compared with cuBLASLt's best (relative Frobenius error).
//
//   mma_bench [--quick] [--configs N] [--only S1,S2,..] [--flush write|read]
// --flush write (default): a 256 MiB memset before each timed launch; it
// leaves L2 full of dirty lines, which the timed kernel writes back to DRAM
// as its reads evict them (on the H100 about as many bytes as a 32 MB
// operand). --flush read: a kernel reads the 256 MiB instead, so L2 holds
// clean lines, as after a layer that only read its weights.
//   mma_bench --profile "bf16 NT 4096 16 4096" "bm=.. bn=.." [reps]
// ratio = cuBLASLt time / ours; > 1 means gemm.mma is faster.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/timing.h"
#include "kernels/cuda_driver.h"
#include "kernels/gemm_mma_launch.h"

namespace blocktune::bench {
namespace {

#define CHECK_CUDA(x)                                                \
  do {                                                               \
    cudaError_t e = (x);                                             \
    if (e != cudaSuccess) {                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
                   cudaGetErrorString(e));                           \
      std::exit(1);                                                  \
    }                                                                \
  } while (0)

struct Shape {
  std::string family;
  MmaProblem problem;
};

MmaProblem Make(MmaPrecision prec, int64_t m, int64_t n, int64_t k, Layout la,
                Layout lb, int64_t lda = 0, int64_t ldb = 0) {
  MmaProblem p;
  p.precision = prec;
  p.ctx.m = m;
  p.ctx.n = n;
  p.ctx.k = k;
  p.ctx.layout_a = la;
  p.ctx.layout_b = lb;
  p.ctx.dtype = StorageType(prec);
  p.lda = lda;
  p.ldb = ldb;
  return p;
}

std::vector<Shape> Shapes(bool quick) {
  using L = Layout;
  const auto bf = MmaPrecision::kBf16, fp = MmaPrecision::kFp16,
             tf = MmaPrecision::kTf32;
  std::vector<Shape> s;
  // decode: weights A (M x K row-major), activations B stored N x K (NT).
  for (int64_t n : {1, 2, 4, 8, 16}) {
    s.push_back({"decode", Make(bf, 4096, n, 4096, L::kN, L::kT)});
    if (!quick || n == 1)
      s.push_back({"decode", Make(bf, 16384, n, 8192, L::kN, L::kT)});
  }
  if (!quick) s.push_back({"decode", Make(bf, 8192, 4, 8192, L::kN, L::kT)});
  // MLP N = 16: C = A * B^T.
  for (int64_t n : {1024, 4096, 7168})
    if (!quick || n == 7168)
      s.push_back({"mlp", Make(bf, n, 16, n, L::kN, L::kT)});
  // covariance 64 x 64 x K.
  for (int64_t k : {16384, 65536, 131072}) {
    if (quick && k != 131072) continue;
    s.push_back({"cov", Make(bf, 64, 64, k, L::kN, L::kT)});
    s.push_back({"cov", Make(tf, 64, 64, k, L::kN, L::kT)});
  }
  // square.
  for (int64_t n : {1024, 2048, 4096, 8192})
    if (!quick || n == 4096)
      s.push_back({"square", Make(bf, n, n, n, L::kN, L::kN)});
  for (int64_t n : {1024, 4096, 8192})
    if (!quick || n == 4096)
      s.push_back({"square", Make(fp, n, n, n, L::kN, L::kN)});
  for (int64_t n : {1024, 2048, 4096})
    if (!quick || n == 4096)
      s.push_back({"square", Make(tf, n, n, n, L::kN, L::kN)});
  // transformer projections, bf16: Y (tokens x out) = X (tokens x in) *
  // W^T with W stored out x in as a linear layer keeps it (NT); BERT-base
  // (768, FFN 3072), 7B-class attention (4096) and MLP (11008), 70B-class
  // hidden 8192.
  struct Proj {
    int64_t tokens, out, in;
  };
  for (Proj pr : {Proj{512, 768, 768}, Proj{1024, 3072, 768},
                  Proj{4096, 768, 3072}, Proj{2048, 4096, 4096},
                  Proj{4096, 11008, 4096}, Proj{4096, 4096, 11008},
                  Proj{2048, 8192, 8192}})
    if (!quick || pr.in == 4096)
      s.push_back(
          {"proj", Make(bf, pr.tokens, pr.out, pr.in, L::kN, L::kT)});
  // odd sizes. 1023 x 4097 x 515 NN has lda = 515, ldb = 4097 tight: 2-byte
  // copies since v2; the padded row is the 16-byte-copy kernel beside it.
  s.push_back({"odd", Make(bf, 1000, 1000, 1000, L::kN, L::kN)});
  s.push_back({"odd", Make(bf, 1023, 4097, 515, L::kN, L::kN, 520, 4104)});
  s.push_back({"odd", Make(bf, 1023, 4097, 515, L::kN, L::kN)});
  return s;
}

cudaDataType_t CudaType(MmaPrecision p) {
  switch (p) {
    case MmaPrecision::kBf16:
      return CUDA_R_16BF;
    case MmaPrecision::kFp16:
      return CUDA_R_16F;
    case MmaPrecision::kTf32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

// Device buffers of one shape: A, B, C (ours), C (cuBLASLt), workspace,
// and the L2 flush buffer.
struct Buffers {
  void *a = nullptr, *b = nullptr, *c = nullptr, *c_ref = nullptr,
       *ws = nullptr, *ws_ours = nullptr;
  size_t a_bytes = 0, b_bytes = 0, c_bytes = 0, ws_bytes = 0;
  ~Buffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(c_ref);
    cudaFree(ws);
    cudaFree(ws_ours);
  }
};

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

void FillRandom(void* dev, size_t elems, MmaPrecision prec, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<float>((s >> 40) * (1.0 / (1ull << 24)) * 2.0 - 1.0);
  };
  if (prec == MmaPrecision::kTf32) {
    std::vector<float> h(elems);
    for (auto& v : h) v = next();
    CHECK_CUDA(cudaMemcpy(dev, h.data(), elems * 4, cudaMemcpyHostToDevice));
  } else {
    std::vector<uint16_t> h(elems);
    for (auto& v : h) {
      const float f = next();
      if (prec == MmaPrecision::kBf16) {
        v = ToBf16(f);
      } else {
        const _Float16 x = static_cast<_Float16>(f);
        std::memcpy(&v, &x, 2);
      }
    }
    CHECK_CUDA(cudaMemcpy(dev, h.data(), elems * 2, cudaMemcpyHostToDevice));
  }
}

std::vector<double> ToDoubles(const void* dev, size_t elems,
                              MmaPrecision prec) {
  std::vector<double> out(elems);
  if (prec == MmaPrecision::kTf32) {
    std::vector<float> h(elems);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, elems * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < elems; ++i) out[i] = h[i];
  } else {
    std::vector<uint16_t> h(elems);
    CHECK_CUDA(cudaMemcpy(h.data(), dev, elems * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < elems; ++i) {
      if (prec == MmaPrecision::kBf16) {
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

// A kernel that reads n 16-byte words (grid-stride) and stores nothing
// (the store is predicated on a sum no input makes): the read flush.
constexpr char kFlushReadPtx[] = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry flush_read(.param .u64 pp, .param .u64 pn)
{
  .reg .pred %p;
  .reg .b32 %a, %b, %c, %d, %s, %t;
  .reg .b64 %ptr, %n, %i, %stride, %addr;
  ld.param.u64 %ptr, [pp];
  cvta.to.global.u64 %ptr, %ptr;
  ld.param.u64 %n, [pn];
  mov.u32 %t, %ctaid.x;
  mov.u32 %s, %ntid.x;
  mul.wide.u32 %i, %t, %s;
  mov.u32 %t, %tid.x;
  cvt.u64.u32 %addr, %t;
  add.u64 %i, %i, %addr;
  mov.u32 %t, %nctaid.x;
  mul.wide.u32 %stride, %t, %s;
  mov.u32 %s, 0;
LOOP:
  setp.ge.u64 %p, %i, %n;
  @%p bra DONE;
  shl.b64 %addr, %i, 4;
  add.u64 %addr, %addr, %ptr;
  ld.global.cg.v4.u32 {%a, %b, %c, %d}, [%addr];
  xor.b32 %s, %s, %a;
  xor.b32 %s, %s, %b;
  xor.b32 %s, %s, %c;
  xor.b32 %s, %s, %d;
  add.u64 %i, %i, %stride;
  bra LOOP;
DONE:
  setp.eq.u32 %p, %s, 0x12345679;
  @%p st.global.u32 [%ptr], %s;
  ret;
}
)";

class Timer {
 public:
  // read_flush: read the flush buffer before each timed launch instead of
  // writing it (see --flush).
  explicit Timer(bool read_flush = false) : read_flush_(read_flush) {
    CHECK_CUDA(cudaMalloc(&flush_, kFlushBytes));
    CHECK_CUDA(cudaMemset(flush_, 0, kFlushBytes));
    CHECK_CUDA(cudaEventCreate(&start_));
    CHECK_CUDA(cudaEventCreate(&stop_));
    if (read_flush_) {
      auto m = cuda::Module::Load(kFlushReadPtx);
      if (!m.ok()) {
        std::fprintf(stderr, "flush kernel: %s\n", m.status().ToString().c_str());
        std::exit(1);
      }
      module_ = std::move(*m);
      read_ = *module_->GetFunction("flush_read");
    }
  }
  void Flush(int r) {
    if (!read_flush_) {
      cudaMemsetAsync(flush_, r & 0xff, kFlushBytes);
      return;
    }
    uint64_t p = reinterpret_cast<uint64_t>(flush_), n = kFlushBytes / 16;
    (void)cuda::Launch(read_, {132 * 8}, {512}, 0, {&p, &n});
  }
  ~Timer() {
    cudaFree(flush_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  // Median microseconds of `reps` launches, each after an L2 flush; NaN if
  // a launch fails.
  template <typename F>
  double Time(F&& launch, int reps, int warmups = 3) {
    for (int i = 0; i < warmups; ++i)
      if (!launch()) return NAN;
    std::vector<double> us;
    for (int r = 0; r < reps; ++r) {
      Flush(r);
      cudaEventRecord(start_);
      if (!launch()) return NAN;
      cudaEventRecord(stop_);
      cudaEventSynchronize(stop_);
      float ms = 0;
      cudaEventElapsedTime(&ms, start_, stop_);
      us.push_back(ms * 1e3);
    }
    if (cudaGetLastError() != cudaSuccess) return NAN;
    return Quantile(us, 0.5);
  }

 private:
  static constexpr size_t kFlushBytes = size_t{256} << 20;
  void* flush_ = nullptr;
  cudaEvent_t start_, stop_;
  bool read_flush_ = false;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function read_;
};

struct LtResult {
  double us = NAN;
  int algos_timed = 0;
  int algos_offered = 0;
};

// The best cuBLASLt heuristic algorithm, timed one by one; its output is
// left in buf.c_ref. Row-major C = op(A) op(B) is column-major C^T =
// op(B)^T op(A)^T: cuBLASLt's "A" is our B.
LtResult TimeLt(cublasLtHandle_t lt, const MmaProblem& pr, Buffers& buf,
                Timer& timer, int reps) {
  const GemmContext& g = pr.ctx;
  const bool at = g.layout_a == Layout::kT, bt = g.layout_b == Layout::kT;
  cublasOperation_t ta = bt ? CUBLAS_OP_T : CUBLAS_OP_N,
                    tb = at ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasComputeType_t compute = pr.precision == MmaPrecision::kTf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = CudaType(pr.precision);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                 sizeof(ta));
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                 sizeof(tb));
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatrixLayoutCreate(&la, type, bt ? g.k : g.n, bt ? g.n : g.k,
                             pr.Ldb());
  cublasLtMatrixLayoutCreate(&lb, type, at ? g.m : g.k, at ? g.k : g.m,
                             pr.Lda());
  cublasLtMatrixLayoutCreate(&lc, type, g.n, g.m, pr.Ldc());
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  size_t ws_bytes = buf.ws_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref,
                                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &ws_bytes, sizeof(ws_bytes));
  cublasLtMatmulHeuristicResult_t results[16];
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 16, results,
                                 &found);
  LtResult r;
  r.algos_offered = found;
  const float alpha = 1, beta = 0;
  int best = -1;
  for (int i = 0; i < found; ++i) {
    const double us = timer.Time(
        [&] {
          return cublasLtMatmul(lt, desc, &alpha, buf.b, la, buf.a, lb, &beta,
                                buf.c_ref, lc, buf.c_ref, lc, &results[i].algo,
                                buf.ws, ws_bytes,
                                nullptr) == CUBLAS_STATUS_SUCCESS;
        },
        reps);
    if (!std::isfinite(us)) continue;
    ++r.algos_timed;
    if (!(us >= r.us)) {
      r.us = us;
      best = i;
    }
  }
  if (best >= 0) {
    cudaMemset(buf.c_ref, 0xff, buf.c_bytes);
    cublasLtMatmul(lt, desc, &alpha, buf.b, la, buf.a, lb, &beta, buf.c_ref, lc,
                   buf.c_ref, lc, &results[best].algo, buf.ws, ws_bytes,
                   nullptr);
    cudaDeviceSynchronize();
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  return r;
}

// Candidates: the grid of the family's space, filtered by CanImplementMma
// and by cuts a tuner's prior would make (tiles at most ~2x the problem,
// at least a quarter wave of programs, K_G * BK * 2 <= K), sampled.
std::vector<MmaParams> Candidates(const MmaProblem& pr, int sm_count,
                                  size_t limit, uint64_t seed) {
  const GemmContext& g = pr.ctx;
  std::vector<MmaParams> out;
  for (int64_t bm : {16, 32, 64, 128, 256})
    for (int64_t bn : {8, 16, 32, 64, 128, 256})
      for (int64_t bk : {16, 32, 64, 128, 256})
        for (int64_t wm : {1, 2, 4})
          for (int64_t wn : {1, 2, 4})
            for (int64_t st : {3, 4, 5})
              for (int64_t kg : {1, 2, 4, 8, 16, 32, 64, 128, 256})
                for (int64_t gm : {1, 8})
                  for (int64_t sk : {0, 1}) {
                    if (sk == 1 && kg == 1) continue;
                    MmaParams p{bm, bn, bk, wm, wn, st, kg, gm, sk};
                    if (!ValidateMmaParams(p).ok() ||
                        !CanImplementMma(pr, p).ok())
                      continue;
                    if (bm > 2 * g.m + 16 || bn > 2 * g.n + 8) continue;
                    if (bn > 8 && bn > 2 * g.n) continue;
                    const int64_t tiles =
                        ((g.m + bm - 1) / bm) * ((g.n + bn - 1) / bn);
                    if (gm > 1 && tiles < 4 * sm_count) continue;
                    if (tiles * kg * 4 < sm_count) continue;
                    if (kg > 1 && kg * bk * 2 > g.k) continue;
                    if (kg > 1 && tiles >= 2 * sm_count) continue;
                    const int64_t warps = wm * wn;
                    if (warps < 2 && bm * bn >= 64 * 64) continue;
                    out.push_back(p);
                  }
  std::mt19937_64 rng(seed);
  std::shuffle(out.begin(), out.end(), rng);
  // A prior, as a tuner's would be: the usual mma.sync shapes for large
  // products (64x64 or 64x32 warp tiles; BK 64 with 3 stages did best on
  // square 4096 bf16 with the pipelined loop, v2) and streaming shapes for
  // skinny ones (one warp per 16 rows, deep K stages, no split), first.
  const char* const kPrior[] = {
      "bm=128 bn=128 bk=64 wm=2 wn=2 st=3 kg=1 gm=8",
      "bm=128 bn=256 bk=64 wm=2 wn=4 st=3 kg=1 gm=8",
      "bm=256 bn=128 bk=64 wm=4 wn=2 st=3 kg=1 gm=8",
      "bm=128 bn=256 bk=32 wm=2 wn=4 st=4 kg=1 gm=8",
      "bm=128 bn=128 bk=64 wm=2 wn=2 st=3 kg=1 gm=1",
      "bm=128 bn=128 bk=32 wm=2 wn=2 st=4 kg=1 gm=8",
      "bm=128 bn=256 bk=32 wm=2 wn=4 st=3 kg=1 gm=8",
      "bm=256 bn=128 bk=32 wm=4 wn=2 st=3 kg=1 gm=8",
      "bm=128 bn=128 bk=32 wm=2 wn=4 st=4 kg=1 gm=8",
      "bm=128 bn=128 bk=64 wm=2 wn=4 st=3 kg=1 gm=8",
      "bm=128 bn=64 bk=64 wm=2 wn=2 st=4 kg=1 gm=8",
      "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=1 gm=1",
      "bm=16 bn=8 bk=128 wm=1 wn=1 st=5 kg=1 gm=1",
      "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=1 gm=1",
      "bm=16 bn=16 bk=128 wm=1 wn=1 st=5 kg=1 gm=1",
      "bm=32 bn=16 bk=128 wm=2 wn=1 st=4 kg=1 gm=1",
      "bm=64 bn=8 bk=128 wm=4 wn=1 st=4 kg=2 gm=1 sk=1",
      "bm=64 bn=16 bk=128 wm=4 wn=1 st=4 kg=2 gm=1 sk=1",
      "bm=64 bn=8 bk=64 wm=4 wn=1 st=5 kg=4 gm=1 sk=1",
      "bm=16 bn=64 bk=128 wm=1 wn=4 st=4 kg=64 gm=1 sk=1",
      "bm=16 bn=64 bk=64 wm=1 wn=4 st=4 kg=128 gm=1",
      "bm=16 bn=64 bk=64 wm=1 wn=4 st=4 kg=128 gm=1 sk=1",
      "bm=32 bn=64 bk=128 wm=2 wn=2 st=4 kg=64 gm=1 sk=1",
      "bm=64 bn=64 bk=128 wm=2 wn=2 st=3 kg=32 gm=1 sk=1",
      // split-K (v2): the tree (sk=1) and the reduce entry behind a
      // programmatic dependent launch (sk=0), for skinny and covariance
      // shapes.
      "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=4 gm=1 sk=1",
      "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=2 gm=1 sk=1",
      "bm=16 bn=8 bk=128 wm=1 wn=1 st=5 kg=4 gm=1 sk=1",
      "bm=64 bn=8 bk=128 wm=4 wn=1 st=5 kg=4 gm=1 sk=1",
      "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=4 gm=1 sk=0",
      "bm=32 bn=16 bk=128 wm=2 wn=1 st=4 kg=4 gm=1 sk=1",
      "bm=16 bn=16 bk=128 wm=1 wn=1 st=5 kg=4 gm=1 sk=1",
      "bm=64 bn=16 bk=128 wm=4 wn=1 st=4 kg=4 gm=1 sk=1",
      "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=128 gm=1 sk=1",
      "bm=64 bn=64 bk=128 wm=2 wn=2 st=3 kg=64 gm=1 sk=1",
      "bm=32 bn=64 bk=64 wm=2 wn=2 st=4 kg=128 gm=1 sk=1",
      "bm=16 bn=64 bk=128 wm=1 wn=4 st=4 kg=128 gm=1 sk=1",
      "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=256 gm=1 sk=1",
      "bm=64 bn=64 bk=32 wm=2 wn=2 st=5 kg=128 gm=1 sk=1",
      "bm=64 bn=64 bk=64 wm=2 wn=2 st=4 kg=128 gm=1 sk=0",
      "bm=16 bn=8 bk=128 wm=1 wn=1 st=5 kg=2 gm=1 sk=1",
      "bm=32 bn=8 bk=128 wm=2 wn=1 st=5 kg=2 gm=1 sk=0",
      "bm=32 bn=8 bk=128 wm=2 wn=1 st=4 kg=8 gm=1 sk=1",
      // bk = 256 (v2): 512 contiguous bytes per row and stage.
      "bm=32 bn=8 bk=256 wm=2 wn=1 st=4 kg=1 gm=1 sk=0",
      "bm=16 bn=8 bk=256 wm=1 wn=1 st=5 kg=1 gm=1 sk=0",
      "bm=16 bn=8 bk=256 wm=1 wn=1 st=4 kg=2 gm=1 sk=1",
      "bm=32 bn=8 bk=256 wm=2 wn=1 st=3 kg=2 gm=1 sk=1",
      "bm=32 bn=16 bk=256 wm=2 wn=1 st=3 kg=2 gm=1 sk=1",
      "bm=16 bn=16 bk=256 wm=1 wn=1 st=4 kg=2 gm=1 sk=1",
      "bm=16 bn=64 bk=256 wm=1 wn=4 st=3 kg=64 gm=1 sk=0",
      "bm=16 bn=64 bk=256 wm=1 wn=4 st=3 kg=64 gm=1 sk=1",
      "bm=32 bn=64 bk=256 wm=2 wn=2 st=3 kg=64 gm=1 sk=0"};
  std::vector<MmaParams> prior;
  for (const char* text : kPrior) {
    MmaParams p = *MmaParamsFromString(text);
    auto it = std::find(out.begin(), out.end(), p);
    if (it != out.end()) {
      out.erase(it);
      prior.push_back(p);
    }
  }
  out.insert(out.begin(), prior.begin(), prior.end());
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string ShapeText(const MmaProblem& pr) {
  const GemmContext& g = pr.ctx;
  char s[128];
  std::snprintf(s, sizeof(s), "%lldx%lldx%lld %s%s%s", (long long)g.m,
                (long long)g.n, (long long)g.k, ToString(g.layout_a).data(),
                ToString(g.layout_b).data(),
                (pr.lda || pr.ldb) ? " ld-padded" : "");
  return s;
}

double RelErr(const std::vector<double>& x, const std::vector<double>& y,
              const MmaProblem& pr) {
  double e = 0, n = 0;
  for (int64_t i = 0; i < pr.ctx.m; ++i)
    for (int64_t j = 0; j < pr.ctx.n; ++j) {
      const size_t k = i * pr.Ldc() + j;
      if (!std::isfinite(x[k]) || !std::isfinite(y[k])) return NAN;
      e += (x[k] - y[k]) * (x[k] - y[k]);
      n += y[k] * y[k];
    }
  return std::sqrt(e / std::max(n, 1e-300));
}

struct Row {
  std::string family, shape, prec, params, note;
  double ours_us = NAN, lt_us = NAN, rel_err = NAN, triton_us = NAN;
  int tried = 0, lt_algos = 0;
  double bytes = 0, flops = 0;
};

int Main(int argc, char** argv) {
  bool quick = false;
  size_t configs = 60;
  std::string only;
  bool read_flush = false;
  std::string profile_shape, profile_params;
  int profile_reps = 5;
  std::string triton_path;
  bool list_shapes = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--configs") && i + 1 < argc)
      configs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--flush") && i + 1 < argc)
      read_flush = !std::strcmp(argv[++i], "read");
    else if (!std::strcmp(argv[i], "--triton") && i + 1 < argc)
      triton_path = argv[++i];
    else if (!std::strcmp(argv[i], "--list-shapes"))
      list_shapes = true;
    else if (!std::strcmp(argv[i], "--profile") && i + 2 < argc) {
      profile_shape = argv[++i];
      profile_params = argv[++i];
      if (i + 1 < argc) profile_reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: mma_bench [--quick] [--configs N] [--only S,..] "
                   "[--flush write|read] [--triton TSV] [--list-shapes] | "
                   "--profile \"bf16 NT m n k\" \"params\" [reps]\n");
      return 2;
    }
  }
  // --only: comma-separated substrings of "family shape prec", any may match.
  auto selected = [&](const std::string& family, const MmaProblem& pr) {
    if (only.empty()) return true;
    const std::string text = family + " " + ShapeText(pr) + " " +
                             std::string(ToString(pr.precision));
    std::istringstream parts(only);
    for (std::string part; std::getline(parts, part, ',');)
      if (!part.empty() && text.find(part) != std::string::npos) return true;
    return false;
  };
  if (list_shapes) {  // triton_bench.py --shapes format; needs no GPU
    for (const Shape& shape : Shapes(quick)) {
      const MmaProblem& pr = shape.problem;
      if (!selected(shape.family, pr)) continue;
      const GemmContext& g = pr.ctx;
      std::printf("%s %s %c%c %lld %lld %lld %lld %lld\n", shape.family.c_str(),
                  std::string(ToString(pr.precision)).c_str(),
                  g.layout_a == Layout::kT ? 'T' : 'N',
                  g.layout_b == Layout::kT ? 'T' : 'N', (long long)g.m,
                  (long long)g.n, (long long)g.k, (long long)pr.Lda(),
                  (long long)pr.Ldb());
    }
    return 0;
  }
  auto driver = cuda::Driver::Get();
  if (!driver.ok()) {
    std::fprintf(stderr, "%s\n", driver.status().ToString().c_str());
    return 1;
  }
  auto ctx = cuda::Context::Open(0);
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().ToString().c_str());
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0, mem_khz = 0, runtime = 0, drv = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&drv);
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  std::printf(
      "# device %s, %d SMs, max SM clock %d MHz, memory clock %d MHz, "
      "L2 %d MB; driver %d, runtime %d, cuBLASLt %zu; gemm.mma v%d\n",
      prop.name, prop.multiProcessorCount, clock_khz / 1000, mem_khz / 1000,
      prop.l2CacheSize >> 20, drv, runtime, cublasLtGetVersion(),
      kGemmMmaGeneratorVersion);
  Timer timer(read_flush);
  std::printf("# L2 flush before each timed launch: %s\n",
              read_flush ? "read 256 MiB (L2 left clean)"
                         : "memset 256 MiB (L2 left dirty)");

  // Triton's times for the same shapes, measured in the same device call
  // by triton_bench.py --tsv: "prec layout m n k lda ldb us config".
  std::map<std::string, std::pair<double, std::string>> triton;
  if (!triton_path.empty()) {
    std::ifstream in(triton_path);
    if (!in) {
      std::fprintf(stderr, "mma_bench: cannot read --triton %s\n",
                   triton_path.c_str());
      return 2;
    }
    std::string prec, lay, config;
    int64_t m, n, k, lda, ldb;
    double us;
    while (in >> prec >> lay >> m >> n >> k >> lda >> ldb >> us >> config) {
      triton[prec + " " + lay + " " + std::to_string(m) + " " +
             std::to_string(n) + " " + std::to_string(k) + " " +
             std::to_string(lda) + " " + std::to_string(ldb)] = {us, config};
    }
    std::printf("# Triton: %zu shapes from %s (triton_bench.py, same call)\n",
                triton.size(), triton_path.c_str());
  }

  std::vector<Shape> shapes;
  if (!profile_shape.empty()) {
    std::istringstream in(profile_shape);
    std::string prec, lay;
    int64_t m, n, k;
    in >> prec >> lay >> m >> n >> k;
    shapes.push_back(
        {"profile", Make(*MmaPrecisionFromString(prec), m, n, k,
                         lay[0] == 'T' ? Layout::kT : Layout::kN,
                         lay[1] == 'T' ? Layout::kT : Layout::kN)});
  } else {
    shapes = Shapes(quick);
  }
  std::vector<Row> rows;
  for (const Shape& shape : shapes) {
    const MmaProblem& pr = shape.problem;
    const GemmContext& g = pr.ctx;
    Row row;
    row.family = shape.family;
    row.shape = ShapeText(pr);
    row.prec = std::string(ToString(pr.precision));
    if (!selected(row.family, pr)) continue;
    {
      const std::string key =
          row.prec + " " + (g.layout_a == Layout::kT ? "T" : "N") +
          (g.layout_b == Layout::kT ? "T" : "N") + " " + std::to_string(g.m) +
          " " + std::to_string(g.n) + " " + std::to_string(g.k) + " " +
          std::to_string(pr.Lda()) + " " + std::to_string(pr.Ldb());
      auto it = triton.find(key);
      if (it != triton.end()) row.triton_us = it->second.first;
    }
    const int es = ElementBytes(pr.precision);
    row.bytes = double(es) * (g.m * g.k + g.k * g.n + g.m * g.n);
    row.flops = 2.0 * g.m * g.n * g.k;
    std::vector<MmaParams> cands;
    if (!profile_params.empty()) {
      cands.push_back(*MmaParamsFromString(profile_params));
    } else {
      cands = Candidates(pr, prop.multiProcessorCount, configs, 17);
    }
    if (cands.empty()) {
      MmaParams any;
      Status why = CanImplementMma(pr, any);
      row.note = "no config: " + why.ToString();
    }
    Buffers buf;
    int64_t ours_ws = 4;
    const bool at = g.layout_a == Layout::kT, bt = g.layout_b == Layout::kT;
    const size_t a_elems = (at ? g.k : g.m) * pr.Lda(),
                 b_elems = (bt ? g.n : g.k) * pr.Ldb(),
                 c_elems = g.m * pr.Ldc();
    buf.a_bytes = a_elems * es;
    buf.b_bytes = b_elems * es;
    buf.c_bytes = c_elems * es;
    int64_t max_ws = 64 << 20;
    CHECK_CUDA(cudaMalloc(&buf.a, buf.a_bytes));
    CHECK_CUDA(cudaMalloc(&buf.b, buf.b_bytes));
    CHECK_CUDA(cudaMalloc(&buf.c, buf.c_bytes));
    CHECK_CUDA(cudaMalloc(&buf.c_ref, buf.c_bytes));
    FillRandom(buf.a, a_elems, pr.precision, 1);
    FillRandom(buf.b, b_elems, pr.precision, 2);

    // Generate and load every candidate, in parallel (driver JIT).
    std::vector<std::unique_ptr<LoadedMma>> loaded(cands.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      (void)(*ctx)->MakeCurrent();
      for (size_t i = next++; i < cands.size(); i = next++) {
        auto l = LoadedMma::Create(pr, cands[i]);
        if (l.ok())
          loaded[i] = std::move(*l);
        else
          std::fprintf(stderr, "# %s %s: %s\n", row.shape.c_str(),
                       ToString(cands[i]).c_str(),
                       l.status().ToString().c_str());
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < 12; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
    // Workspace for cuBLASLt (64 MiB) and, apart, for our K_G partial sums
    // and the split-K tree's counters (zeroed once; every launch leaves
    // them zero).
    ours_ws = 4;
    for (const auto& l : loaded)
      if (l) ours_ws = std::max<int64_t>(ours_ws, l->kernel().workspace_bytes);
    buf.ws_bytes = max_ws;
    CHECK_CUDA(cudaMalloc(&buf.ws, buf.ws_bytes));
    CHECK_CUDA(cudaMalloc(&buf.ws_ours, ours_ws));
    CHECK_CUDA(cudaMemset(buf.ws_ours, 0, ours_ws));

    auto launch_of = [&](const LoadedMma& k) {
      return [&] {
        MmaOperands ops;
        ops.a = reinterpret_cast<uint64_t>(buf.a);
        ops.b = reinterpret_cast<uint64_t>(buf.b);
        ops.c = reinterpret_cast<uint64_t>(buf.c);
        ops.workspace = reinterpret_cast<uint64_t>(buf.ws_ours);
        return k.Launch(ops).ok();
      };
    };
    // cuBLASLt first: its best algorithm's output is the reference.
    const int lt_reps = 21;
    LtResult ltr = TimeLt(lt, pr, buf, timer, lt_reps);
    row.lt_us = ltr.us;
    row.lt_algos = ltr.algos_timed;
    const std::vector<double> ref =
        std::isfinite(row.lt_us) ? ToDoubles(buf.c_ref, c_elems, pr.precision)
                                 : std::vector<double>();
    const double tol = pr.precision == MmaPrecision::kTf32 ? 1e-3 : 2e-2;
    // Quick pass (the workspace's split-K counters zeroed before each
    // kernel: another kernel's partial sums may lie where its counters
    // are), then the fastest again, each checked against the reference
    // first: a wrong kernel is counted and never timed as a result.
    std::vector<std::pair<double, size_t>> quick_times;
    for (size_t i = 0; i < loaded.size(); ++i) {
      if (!loaded[i]) continue;
      CHECK_CUDA(cudaMemset(buf.ws_ours, 0, ours_ws));
      const double us = timer.Time(
          launch_of(*loaded[i]), profile_params.empty() ? 5 : profile_reps, 1);
      if (std::isfinite(us)) quick_times.push_back({us, i});
      std::fprintf(stderr, "# quick %s %s [%s] %.1f us\n", row.shape.c_str(),
                   row.prec.c_str(), ToString(cands[i]).c_str(), us);
    }
    row.tried = static_cast<int>(quick_times.size());
    std::sort(quick_times.begin(), quick_times.end());
    size_t best = SIZE_MAX;
    int retimed = 0, wrong = 0;
    for (size_t r = 0; r < quick_times.size() && retimed < 4; ++r) {
      const size_t i = quick_times[r].second;
      CHECK_CUDA(cudaMemset(buf.ws_ours, 0, ours_ws));
      CHECK_CUDA(cudaMemset(buf.c, 0xff, buf.c_bytes));  // NaN
      launch_of (*loaded[i])();
      CHECK_CUDA(cudaDeviceSynchronize());
      double err = NAN;
      if (!ref.empty())
        err = RelErr(ToDoubles(buf.c, c_elems, pr.precision), ref, pr);
      if (!ref.empty() && !(err <= tol)) {
        ++wrong;
        std::fprintf(stderr, "# WRONG %s %s %s: rel err %g\n",
                     row.shape.c_str(), row.prec.c_str(),
                     ToString(cands[i]).c_str(), err);
        continue;
      }
      ++retimed;
      const double us = timer.Time(launch_of(*loaded[i]), 21);
      if (!(us >= row.ours_us)) {
        row.ours_us = us;
        row.rel_err = err;
        best = i;
      }
    }
    if (best != SIZE_MAX) row.params = ToString(cands[best]);
    if (wrong > 0)
      row.note += std::to_string(wrong) + " wrong kernels rejected";
    std::printf(
        "%-7s %-26s %-5s ours %9.1f us  cuBLASLt %9.1f us (%2d algos)  "
        "ratio %5.2f  %6.0f GB/s  %6.1f TFLOP/s  err %.1e  [%s] %d tried %s\n",
        row.family.c_str(), row.shape.c_str(), row.prec.c_str(), row.ours_us,
        row.lt_us, row.lt_algos, row.lt_us / row.ours_us,
        row.bytes / row.ours_us * 1e-3, row.flops / row.ours_us * 1e-6,
        row.rel_err, row.params.c_str(), row.tried, row.note.c_str());
    std::fflush(stdout);
    rows.push_back(row);
  }
  // Summary table (markdown).
  std::printf(
      "\n| family | M x N x K layout | prec | gemm.mma us | cuBLASLt us "
      "(algos) | ratio | Triton us | ratio Triton | ours GB/s | ours TFLOP/s "
      "| rel err vs cuBLASLt | best params |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::map<std::string, std::pair<double, int>> geo, geo_triton;
  for (const Row& r : rows) {
    std::printf(
        "| %s | %s | %s | %.1f | %.1f (%d) | %.2f | %.1f | %.2f | %.0f | %.1f "
        "| %.1e | %s%s |\n",
        r.family.c_str(), r.shape.c_str(), r.prec.c_str(), r.ours_us, r.lt_us,
        r.lt_algos, r.lt_us / r.ours_us, r.triton_us, r.triton_us / r.ours_us,
        r.bytes / r.ours_us * 1e-3, r.flops / r.ours_us * 1e-6, r.rel_err,
        r.params.c_str(), r.note.empty() ? "" : (" " + r.note).c_str());
    const double ratio = r.lt_us / r.ours_us;
    if (std::isfinite(ratio)) {
      geo[r.family].first += std::log(ratio);
      geo[r.family].second += 1;
    }
    const double tr = r.triton_us / r.ours_us;
    if (std::isfinite(tr)) {
      geo_triton[r.family].first += std::log(tr);
      geo_triton[r.family].second += 1;
    }
  }
  for (const auto& [fam, v] : geo)
    std::printf("# geomean ratio %s: %.2f over %d shapes\n", fam.c_str(),
                std::exp(v.first / v.second), v.second);
  for (const auto& [fam, v] : geo_triton)
    std::printf("# geomean ratio to Triton %s: %.2f over %d shapes\n",
                fam.c_str(), std::exp(v.first / v.second), v.second);
  cublasLtDestroy(lt);
  return 0;
}

}  // namespace
}  // namespace blocktune::bench

int main(int argc, char** argv) { return blocktune::bench::Main(argc, argv); }
