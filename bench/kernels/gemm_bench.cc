// Sweeps block shapes of the generated fp32 GEMM for thesis families and
// times the best against cublasSgemm (TF32 off), in one run, on one GPU.
// Per shape: CanImplement-valid block shapes are timed with CUDA events
// (2 warm-up launches, then the median of `reps`), inputs are random and
// rotated across copies so small problems are not timed from L2; the best
// kernel's output is checked against cuBLAS's.
//
//   gemm_bench [--quick]   --quick: fewer shapes and block shapes
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench/timing.h"
#include "kernels/cuda_driver.h"
#include "kernels/gemm_launch.h"

namespace blocktune {
namespace {

using cuda::DeviceBuffer;

struct Problem {
  const char* family;
  GemmContext ctx;
};

struct Operands {
  std::vector<DeviceBuffer> a, b;  // rotated copies
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

int64_t Ld(const GemmContext& g, char which) {
  if (which == 'a') return g.layout_a == Layout::kT ? g.m : g.k;
  return g.layout_b == Layout::kT ? g.k : g.n;
}

std::vector<BlockShape> Candidates(const GemmContext& g, int sm_count,
                                   bool quick, std::mt19937& rng) {
  std::vector<BlockShape> out;
  KernelLimits limits;
  for (int64_t ml : {16, 32, 64, 128, 256})
    for (int64_t nl : {16, 32, 64, 128, 256})
      for (int64_t ms : {2, 4, 8})
        for (int64_t ns : {1, 2, 4, 8})
          for (int64_t u : {4, 8, 16})
            for (int64_t kg : {1, 2, 4, 8, 16, 32}) {
              BlockShape xb{ml, nl, ms, ns, u, kg};
              if (!Validate(xb).ok() || !CanImplement(g, xb, limits).ok())
                continue;
              const int64_t threads = xb.ThreadsPerProgram();
              if (threads < 32 || threads > 512) continue;
              if (ml > 2 * g.m + 16 || nl > 2 * g.n + 16) continue;
              // Thesis §4.2.1: at least rho * N_SM programs, rho = 0.5; and
              // no more splits than steps of K.
              if (ProgramsInGrid(g, xb) * 2 < sm_count) continue;
              if (kg * u > g.k) continue;
              out.push_back(xb);
            }
  std::shuffle(out.begin(), out.end(), rng);
  out.resize(std::min<size_t>(out.size(), quick ? 40 : 250));
  return out;
}

StatusOr<double> TimeOurs(const GemmContext& g, const BlockShape& xb,
                          Operands& ops, int reps) {
  BT_ASSIGN_OR_RETURN(auto gemm, LoadedGemm::Create(g, xb, "sm_90"));
  const int64_t workspace = gemm->kernel().workspace_bytes;
  if (ops.w.bytes() < static_cast<size_t>(workspace)) {
    BT_ASSIGN_OR_RETURN(ops.w, DeviceBuffer::Allocate(workspace));
  }
  GemmOperands args;
  args.c = ops.c.address();
  args.workspace = ops.w.address();
  args.lda = Ld(g, 'a');
  args.ldb = Ld(g, 'b');
  args.ldc = g.n;
  auto launch = [&](size_t copy) {
    args.a = ops.a[copy].address();
    args.b = ops.b[copy].address();
    return gemm->Launch(args);
  };
  BT_ASSIGN_OR_RETURN(auto start, cuda::Event::Create());
  BT_ASSIGN_OR_RETURN(auto stop, cuda::Event::Create());
  for (int i = 0; i < 2; ++i) BT_RETURN_IF_ERROR(launch(i % ops.a.size()));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    BT_RETURN_IF_ERROR(start->Record());
    BT_RETURN_IF_ERROR(launch(r % ops.a.size()));
    BT_RETURN_IF_ERROR(stop->Record());
    BT_RETURN_IF_ERROR(stop->Synchronize());
    BT_ASSIGN_OR_RETURN(float t, stop->MillisecondsSince(*start));
    ms.push_back(t);
  }
  return bench::Quantile(ms, 0.5);
}

double TimeCublas(cublasHandle_t h, const GemmContext& g, Operands& ops,
                  int reps) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  const float alpha = 1, beta = 0;
  auto op = [](Layout l) { return l == Layout::kT ? CUBLAS_OP_T : CUBLAS_OP_N; };
  auto launch = [&](size_t copy) {
    cublasSgemm(h, op(g.layout_b), op(g.layout_a), g.n, g.m, g.k, &alpha,
                reinterpret_cast<const float*>(ops.b[copy].address()), Ld(g, 'b'),
                reinterpret_cast<const float*>(ops.a[copy].address()), Ld(g, 'a'),
                &beta, reinterpret_cast<float*>(ops.c.address()), g.n);
  };
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) launch(i % ops.a.size());
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start);
    launch(r % ops.a.size());
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return bench::Quantile(ms, 0.5);
}

int Main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
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
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);  // no TF32

  std::vector<Problem> problems = {
      {"square", Gemm(1024, 1024, 1024, Layout::kN, Layout::kN)},
      {"square", Gemm(4096, 4096, 4096, Layout::kN, Layout::kN)},
      {"mlp", Gemm(4096, 16, 4096, Layout::kN, Layout::kT)},
      {"mlp", Gemm(7168, 16, 7168, Layout::kN, Layout::kT)},
      {"cov", Gemm(64, 64, 65536, Layout::kN, Layout::kT)},
  };
  if (!quick) {
    problems.insert(problems.begin() + 1,
                    {"square", Gemm(2048, 2048, 2048, Layout::kN, Layout::kN)});
    problems.push_back({"cov", Gemm(64, 64, 131072, Layout::kN, Layout::kT)});
  }
  std::mt19937 rng(1);
  std::printf("%-7s %-34s %6s %10s %10s %7s %8s  %s\n", "family", "shape",
              "tried", "ours_us", "cublas_us", "ratio", "relerr", "best x_B");
  for (const Problem& p : problems) {
    const GemmContext& g = p.ctx;
    const int64_t a_elems = g.m * g.k, b_elems = g.k * g.n;
    const double pair_bytes = 4.0 * (a_elems + b_elems);
    const size_t copies = std::clamp<size_t>(
        static_cast<size_t>(std::ceil(200e6 / pair_bytes)), 1, 16);
    Operands ops;
    std::uniform_real_distribution<float> uni(-1, 1);
    std::vector<float> host(std::max(a_elems, b_elems));
    for (size_t c = 0; c < copies; ++c) {
      for (float& v : host) v = uni(rng);
      ops.a.push_back(DeviceBuffer::Allocate(a_elems * 4).value());
      (void)ops.a.back().CopyFromHost(host.data(), a_elems * 4);
      ops.b.push_back(DeviceBuffer::Allocate(b_elems * 4).value());
      (void)ops.b.back().CopyFromHost(host.data(), b_elems * 4);
    }
    ops.c = DeviceBuffer::Allocate(g.m * g.n * 4).value();
    const double flops = Flops(Context(g));
    const int reps = std::clamp<int>(static_cast<int>(2e10 / flops), 10, 200);

    double best_ms = 1e30;
    BlockShape best{};
    int tried = 0;
    for (const BlockShape& xb : Candidates(g, fp.sm_count, quick, rng)) {
      auto ms = TimeOurs(g, xb, ops, std::max(5, reps / 4));
      if (!ms.ok()) continue;
      ++tried;
      if (*ms < best_ms) {
        best_ms = *ms;
        best = xb;
      }
    }
    // Re-time the best with the full repetition count, then check it.
    best_ms = TimeOurs(g, best, ops, reps).value();
    std::vector<float> ours(g.m * g.n), ref(g.m * g.n);
    (void)ops.c.CopyToHost(ours.data(), ours.size() * 4);  // last copy's run
    const double cublas_ms = TimeCublas(handle, g, ops, reps);
    cudaDeviceSynchronize();
    (void)ops.c.CopyToHost(ref.data(), ref.size() * 4);
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err += (ours[i] - ref[i]) * double(ours[i] - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    char shape[64];
    std::snprintf(shape, sizeof(shape), "M=%lld N=%lld K=%lld %s%s",
                  (long long)g.m, (long long)g.n, (long long)g.k,
                  ToString(g.layout_a).data(), ToString(g.layout_b).data());
    std::printf("%-7s %-34s %6d %10.1f %10.1f %7.2f %8.1e  %s\n", p.family,
                shape, tried, best_ms * 1e3, cublas_ms * 1e3,
                cublas_ms / best_ms, std::sqrt(err / norm),
                ToString(best).c_str());
    std::fflush(stdout);
  }
  cublasDestroy(handle);
  return 0;
}

}  // namespace
}  // namespace blocktune

int main(int argc, char** argv) { return blocktune::Main(argc, argv); }
