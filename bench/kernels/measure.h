// What the kernel benchmarks share: operands, event timing, the generated
// kernels, and the vendor baselines (cuBLAS, cublasLt, cuDNN), all fp32 with
// TF32 off.
//
// Timing protocol: CUDA events around each launch, 2 warm-ups, the median of
// `reps`; inputs are random in [-1, 1] and rotated across copies of >= 200 MB
// in all, so no launch reads its inputs from the 50 MB L2.
#ifndef BLOCKTUNE_BENCH_KERNELS_MEASURE_H_
#define BLOCKTUNE_BENCH_KERNELS_MEASURE_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#ifdef BLOCKTUNE_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <cmath>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_launch.h"

namespace blocktune::bench {

// Rotated input copies, the output and the split-K workspace.
struct Operands {
  std::vector<cuda::DeviceBuffer> a, b;
  cuda::DeviceBuffer c, w;
};

// Random inputs for `ctx`, enough copies for >= 200 MB, and C.
StatusOr<Operands> MakeOperands(const Context& ctx, std::mt19937& rng);

GemmContext Gemm(int64_t m, int64_t n, int64_t k, Layout la, Layout lb);
ConvContext Conv(int64_t n, int64_t hw, int64_t c, int64_t k, int64_t rs,
                 int64_t stride);

// Repetitions that give ~20 GFLOP of work, in [10, 200].
int RepsFor(const Context& ctx);

// The sweep's block shapes: CanImplement-valid, 32..512 threads, at least
// half as many programs as SMs (thesis §4.2.1, rho = 0.5), at least 4 steps
// of K per split; up to 40 dense thread tiles first, then random order;
// at most `limit`; ST among `stages` (ST > 1 only where K has the steps).
std::vector<BlockShape> SweepCandidates(const Context& ctx, int sm_count,
                                        size_t limit, std::mt19937& rng,
                                        std::initializer_list<int64_t> stages = {1});

// Median milliseconds of `reps` event-timed launches after 2 warm-ups;
// launch(i) uses input copy i % copies.
StatusOr<double> TimeLaunches(const std::function<Status(size_t)>& launch,
                              size_t copies, int reps);

// Times a loaded k(x_B). With `output`, runs it once more on input copy 0
// (the one the vendor's reference uses) and copies C there.
StatusOr<double> TimeOurs(const Context& ctx, const LoadedGemm& kernel,
                          Operands& ops, int reps,
                          std::vector<float>* output = nullptr);
// Generates, loads (through the driver's JIT) and times k(x_B).
StatusOr<double> TimeOurs(const Context& ctx, const BlockShape& xb,
                          Operands& ops, int reps,
                          std::vector<float>* output = nullptr);

// The vendor library's time for one shape, and its output as the reference.
struct VendorTime {
  double sgemm_ms = NAN;  // cublasSgemm as called
  double lt_ms = NAN;     // the best cublasLt heuristic candidate
  int lt_candidates = 0;
  double dnn_ms = NAN;  // the best cudnnFind algorithm, NHWC or NCHW
  int dnn_algorithms = 0;
  std::string dnn_algo;    // "nchw algo1"
  double best_ms = NAN;    // the least of the above
  bool reference = false;  // ops.c holds the vendor's output for input copy 0
  std::string error;       // why there is no time or no reference
};

// cuBLAS (PEDANTIC math: no TF32), cublasLt and cuDNN handles on the current
// device, and the vendor's side of a comparison.
class Vendor {
 public:
  Vendor();
  ~Vendor();
  Vendor(const Vendor&) = delete;
  Vendor& operator=(const Vendor&) = delete;

  // GEMM: cublasSgemm and the best cublasLt candidate, then cublasSgemm on
  // input copy 0 into a NaN-poisoned C. Convolution: the best cuDNN
  // algorithm over NCHW and NHWC tensors; the NHWC one runs last and leaves
  // its output in C.
  VendorTime Time(const Context& ctx, Operands& ops, int reps);

 private:
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
#ifdef BLOCKTUNE_HAVE_CUDNN
  cudnnHandle_t dnn_ = nullptr;
#endif
};

// ||ours - ref|| / ||ref||; NaN anywhere gives NaN.
double RelativeError(const std::vector<float>& ours,
                     const std::vector<float>& ref);

// "M=4096 N=16 K=4096 NT" or "N=1 H=W=56 C=64 K=64 3x3".
std::string Describe(const Context& ctx);

}  // namespace blocktune::bench

#endif  // BLOCKTUNE_BENCH_KERNELS_MEASURE_H_
