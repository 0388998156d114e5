// What the family benchmarks share (bench/kernels/mma_bench, the
// tensor-core families against the vendor; bench/kernels/eval_bench, the
// evaluation of blocktune's answers in every precision): a problem and its
// device buffers, random operands, the L2-flushed event timer, the vendor
// libraries in the problem's own precision (cuBLASLt: the best of its
// heuristic's algorithms; cuDNN: the best of cudnnFind's), a family's
// benchmark candidates, and the check against the vendor's output.
//
// Every kernel is driven through the family seam (kernels/family.h) and the
// tuner's generic launcher (tuner/kernel_launch.h), as the daemon runs it.
// Precisions: bf16 and fp16 (fp32 accumulation), tf32 (fp32 storage,
// CUBLAS_COMPUTE_32F_FAST_TF32 / CUDNN_TENSOR_OP_MATH) and fp32 (TF32 off:
// CUBLAS_COMPUTE_32F / CUDNN_FMA_MATH).
#ifndef BLOCKTUNE_BENCH_KERNELS_FAMILY_MEASURE_H_
#define BLOCKTUNE_BENCH_KERNELS_FAMILY_MEASURE_H_

#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef BLOCKTUNE_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "bench/timing.h"
#include "kernels/cuda_driver.h"
#include "kernels/family.h"
#include "tuner/check_ptx.h"
#include "tuner/kernel_launch.h"

namespace blocktune::bench {

#define CHECK_CUDA(x)                                                \
  do {                                                               \
    cudaError_t e = (x);                                             \
    if (e != cudaSuccess) {                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
                   cudaGetErrorString(e));                           \
      std::exit(1);                                                  \
    }                                                                \
  } while (0)

// One benchmarked GEMM or convolution: a shape group ("square",
// "prefill", ...) and the problem (the context's dtype is the precision:
// bf16, fp16, tf32 with fp32 storage, or fp32).
struct Case {
  std::string group;
  Problem problem;
  const GemmContext& g() const { return std::get<GemmContext>(problem.ctx); }
  bool conv() const { return std::holds_alternative<ConvContext>(problem.ctx); }
  const ConvContext& cv() const { return std::get<ConvContext>(problem.ctx); }
  // The GEMM's, or the convolution's implicit GEMM's, M, N and K.
  GemmShape dims() const { return ImplicitGemm(problem.ctx); }
  DType prec() const { return DTypeOf(problem.ctx); }
  int64_t Lda() const { return LeadingDims(problem)[0]; }
  int64_t Ldb() const { return LeadingDims(problem)[1]; }
  int64_t Ldc() const { return conv() ? cv().k : LeadingDims(problem)[2]; }
  int ElementBytes() const { return SizeOf(prec()); }
};

Case Make(const char* group, DType prec, int64_t m, int64_t n, int64_t k,
          Layout la, Layout lb, int64_t lda = 0, int64_t ldb = 0,
          int64_t ldc = 0);
Case MakeConv(const char* group, DType prec, int64_t n, int64_t hw, int64_t c,
              int64_t k, int64_t rs, int64_t stride, int64_t pad = -1,
              int64_t dilation = 1, int64_t s = 0, int64_t w = 0);

cudaDataType_t CudaType(DType p);

// Device buffers of one shape: A, B, C (ours), C (cuBLASLt) and cuBLASLt's
// workspace.
struct Buffers {
  Buffers() = default;
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  void *a = nullptr, *b = nullptr, *c = nullptr, *c_ref = nullptr,
       *ws = nullptr;
  size_t a_bytes = 0, b_bytes = 0, c_bytes = 0, ws_bytes = 0;
  ~Buffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(c_ref);
    cudaFree(ws);
  }
};

// Allocates A, B, C, C (reference) and a vendor workspace (64 MiB for a
// GEMM, 256 MiB for a convolution) for `c`, and fills A and B with random
// values in [-1, 1] (seeds 1 and 2). Exits on a CUDA error.
void Allocate(const Case& c, Buffers* buf);
// Elements of C, with its leading dimension.
size_t OutputElements(const Case& c);

void FillRandom(void* dev, size_t elems, DType prec, uint64_t seed);
// `elems` values of `prec` on the device, as doubles.
std::vector<double> ToDoubles(const void* dev, size_t elems, DType prec);

class Timer {
 public:
  // What runs before each timed launch (see mma_bench --flush): a 256 MiB
  // memset (L2 left dirty), a kernel reading 256 MiB (L2 left clean), or
  // nothing (L2 and the instruction and constant caches stay warm; to tell
  // a flush's cost from the kernel's).
  enum class FlushMode { kWrite, kRead, kNone };
  explicit Timer(FlushMode flush = FlushMode::kWrite) : flush_mode_(flush) {
    if (flush_mode_ != FlushMode::kNone) {
      CHECK_CUDA(cudaMalloc(&flush_, kFlushBytes));
      CHECK_CUDA(cudaMemset(flush_, 0, kFlushBytes));
    }
    CHECK_CUDA(cudaEventCreate(&start_));
    CHECK_CUDA(cudaEventCreate(&stop_));
    if (flush_mode_ == FlushMode::kRead) {
      auto m = cuda::Module::Load(CheckPtx());  // the tuner's helpers
      if (!m.ok()) {
        std::fprintf(stderr, "flush kernel: %s\n", m.status().ToString().c_str());
        std::exit(1);
      }
      module_ = std::move(*m);
      read_ = *module_->GetFunction("blocktune_flush_read");
    }
  }
  void Flush(int r) {
    switch (flush_mode_) {
      case FlushMode::kNone:
        return;
      case FlushMode::kWrite:
        cudaMemsetAsync(flush_, r & 0xff, kFlushBytes);
        return;
      case FlushMode::kRead: {
        uint64_t p = reinterpret_cast<uint64_t>(flush_), n = kFlushBytes / 16;
        (void)cuda::Launch(read_, {132 * 8}, {512}, 0, {&p, &n});
        return;
      }
    }
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

  // One launcher of a round-robin timing: `prepare` (may be empty) runs
  // before the flush, outside the timed region (a workspace's counters
  // zeroed, say).
  struct Slot {
    std::function<void()> prepare;
    std::function<bool()> launch;
  };
  // Median microseconds of each slot's `reps` launches, timed round-robin:
  // each round launches every slot once, each after an L2 flush, so that all
  // of them run in the same state of the card. A GPU at its power cap runs
  // the first ~100 ms of work after an idle spell at its boost clock and
  // then slower (an H200 at 700 W: 1980 MHz, then 1400-1600 MHz for a large
  // bf16 GEMM, bench/results/h200/power/), so kernels timed one after
  // another are not timed alike. Each timed launch follows an untimed one
  // of the same slot (then the flush), as each of Time's follows the one
  // before: interleaved without it, short kernels timed 1-15% slower than
  // alone, and some cuDNN calls 2-4x (an H200, bench/results/h200/power/).
  // NaN for a slot whose launch failed.
  std::vector<double> TimeRoundRobin(const std::vector<Slot>& slots, int reps,
                                     int warmups = 3) {
    std::vector<bool> ok(slots.size(), true);
    std::vector<std::vector<double>> us(slots.size());
    for (int r = -warmups; r < reps; ++r) {
      for (size_t i = 0; i < slots.size(); ++i) {
        const Slot& sl = slots[i];
        auto prepare = [&sl] {
          if (sl.prepare) sl.prepare();
        };
        if (!ok[i]) continue;
        if (r >= 0) {  // the untimed launch before a timed one
          prepare();
          if (!(ok[i] = sl.launch())) continue;
        }
        prepare();
        if (r >= 0) Flush(r);
        cudaEventRecord(start_);
        if (!(ok[i] = sl.launch())) continue;
        cudaEventRecord(stop_);
        cudaEventSynchronize(stop_);
        float ms = 0;
        cudaEventElapsedTime(&ms, start_, stop_);
        if (r >= 0) us[i].push_back(ms * 1e3);
      }
    }
    std::vector<double> out(slots.size(), NAN);
    if (cudaGetLastError() != cudaSuccess) return out;
    for (size_t i = 0; i < slots.size(); ++i)
      if (ok[i] && !us[i].empty()) out[i] = Quantile(us[i], 0.5);
    return out;
  }

 private:
  static constexpr size_t kFlushBytes = size_t{256} << 20;
  void* flush_ = nullptr;
  cudaEvent_t start_, stop_;
  FlushMode flush_mode_ = FlushMode::kWrite;
  std::unique_ptr<cuda::Module> module_;
  cuda::Function read_;
};

struct LtResult {
  double us = NAN;
  int algos_timed = 0;
  int algos_offered = 0;
  // Launches the fastest algorithm once more (into buf.c_ref; it owns what
  // it needs, so it outlives the call, not the handle); empty if none ran.
  std::function<bool()> best;
};

// The best cuBLASLt heuristic algorithm, timed one by one; its output is
// left in buf.c_ref.
LtResult TimeLt(cublasLtHandle_t lt, const Case& pr, Buffers& buf,
                Timer& timer, int reps);
#ifdef BLOCKTUNE_HAVE_CUDNN
// cuDNN's best algorithm for a convolution in the case's precision, timed
// one by one; its output is left in buf.c_ref.
LtResult TimeCudnn(cudnnHandle_t h, const Case& pr, Buffers& buf, Timer& timer,
                   int reps, std::string* best_name);
#endif

// The candidates of family `f` for `c` (see family_measure.cc): a prior
// first, then a deterministic random sample of the bench domain that passes
// the rules and a tuner's cuts; at most `limit`.
std::vector<Params> Candidates(const KernelFamily& f, const Case& c,
                               const KernelLimits& limits, int sm_count,
                               size_t limit, uint64_t seed);

// "bf16 NT 4096 16 4096 4096 4096": a GEMM's key in triton_bench.py's
// --shapes and --tsv files (precision, layouts, m, n, k, lda, ldb).
std::string TritonKey(const Case& c);
// triton_bench.py --tsv's times ("key us config" lines) by TritonKey;
// NOT_FOUND when the file cannot be read.
StatusOr<std::map<std::string, double>> ReadTritonTimes(const std::string& path);

// "4096x4096x4096 NN" or "n1 56x56 c64 k64 3x3 s1".
std::string ShapeText(const Case& c);

// ||x - y|| / ||y|| over C's M x N entries; NaN anywhere gives NaN.
double RelErr(const std::vector<double>& x, const std::vector<double>& y,
              const Case& c);

// The check's bound on RelErr against the vendor: 2e-2 for bf16 and fp16,
// 1e-3 for tf32, 1e-4 for fp32.
double Tolerance(DType prec);

}  // namespace blocktune::bench

#endif  // BLOCKTUNE_BENCH_KERNELS_FAMILY_MEASURE_H_
