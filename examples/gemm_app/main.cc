// gemm_app: an application using blocktune end to end.
//
//   1. asks blocktuned for a GEMM block shape (or, built with
//      -DBLOCKTUNE_TUNED_HEADER=\"tuned_gemm.h\" and run with
//      --config header, takes it from an exported header, no query);
//   2. fetches that kernel's PTX and launch geometry (GetKernel);
//   3. loads and launches it through the CUDA driver API on random data;
//   4. checks C against cuBLAS (TF32 off) and prints both times.
//
//   gemm_app [--server ADDR] [--config daemon|header] [--m M --n N --k K]
//            [--layout NN|NT|TN|TT] [--reps R]
//
// Exit 0 when the result matches cuBLAS.
#include <blocktune/client.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#ifdef BLOCKTUNE_TUNED_HEADER
#include BLOCKTUNE_TUNED_HEADER
#endif

namespace {

#define CHECK_CU(call)                                                     \
  do {                                                                     \
    CUresult r_ = (call);                                                  \
    if (r_ != CUDA_SUCCESS) {                                              \
      const char* s_ = nullptr;                                            \
      cuGetErrorString(r_, &s_);                                           \
      std::fprintf(stderr, "%s: %s\n", #call, s_ ? s_ : "?");              \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)
#define CHECK_RT(call)                                                     \
  do {                                                                     \
    cudaError_t r_ = (call);                                               \
    if (r_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(r_));     \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)
#define CHECK_BLAS(call)                                                   \
  do {                                                                     \
    cublasStatus_t r_ = (call);                                            \
    if (r_ != CUBLAS_STATUS_SUCCESS) {                                     \
      std::fprintf(stderr, "%s: cuBLAS status %d\n", #call, int(r_));      \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

struct Flags {
  std::string server = "127.0.0.1:50051";
  std::string config = "daemon";
  blocktune::GemmProblem problem{4096, 4096, 4096};
  int reps = 20;
};

Flags Parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--server") f.server = next();
    else if (a == "--config") f.config = next();
    else if (a == "--m") f.problem.m = std::atoll(next().c_str());
    else if (a == "--n") f.problem.n = std::atoll(next().c_str());
    else if (a == "--k") f.problem.k = std::atoll(next().c_str());
    else if (a == "--reps") f.reps = std::atoi(next().c_str());
    else if (a == "--layout") {
      const std::string l = next();
      if (l.size() != 2 || (l[0] != 'N' && l[0] != 'T') || (l[1] != 'N' && l[1] != 'T')) {
        std::fprintf(stderr, "--layout must be NN, NT, TN or TT, got '%s'\n", l.c_str());
        std::exit(2);
      }
      f.problem.a_transposed = l[0] == 'T';
      f.problem.b_transposed = l[1] == 'T';
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (f.problem.m < 1 || f.problem.n < 1 || f.problem.k < 1 || f.reps < 1) {
    std::fprintf(stderr, "--m, --n, --k and --reps must be at least 1\n");
    std::exit(2);
  }
  if (f.config != "daemon" && f.config != "header") {
    std::fprintf(stderr, "--config must be daemon or header\n");
    std::exit(2);
  }
  return f;
}

// Median of `reps` timed runs of `run`, each after the L2 is flushed
// (a 256 MiB memset), so no run reads its operands from cache.
template <typename Run>
double MedianSeconds(int reps, void* flush, size_t flush_bytes, Run&& run) {
  cudaEvent_t start, stop;
  CHECK_RT(cudaEventCreate(&start));
  CHECK_RT(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) run();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    CHECK_RT(cudaMemsetAsync(flush, i, flush_bytes));
    CHECK_RT(cudaEventRecord(start));
    run();
    CHECK_RT(cudaEventRecord(stop));
    CHECK_RT(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_RT(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1e-3);
  }
  CHECK_RT(cudaGetLastError());
  std::sort(times.begin(), times.end());
  CHECK_RT(cudaEventDestroy(start));
  CHECK_RT(cudaEventDestroy(stop));
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = Parse(argc, argv);
  const blocktune::GemmProblem& p = f.problem;
  blocktune::Client client(f.server);

  // 1. The block shape.
  std::optional<blocktune::BlockConfig> config;
  std::string how;
  if (f.config == "header") {
#ifdef BLOCKTUNE_TUNED_HEADER
    namespace tuned = blocktune::tuned;
    const tuned::Layout layout =
        p.a_transposed ? (p.b_transposed ? tuned::Layout::TT : tuned::Layout::TN)
                       : (p.b_transposed ? tuned::Layout::NT : tuned::Layout::NN);
    const tuned::Config c = tuned::gemm_config(p.m, p.n, p.k, layout);
    config = blocktune::BlockConfig{c.block.ml, c.block.nl, c.block.ms,
                                    c.block.ns, c.block.u,  c.block.kg};
    static const char* const kMatch[] = {"exact", "predicted", "nearest", "default"};
    how = std::string("header, ") + kMatch[static_cast<int>(c.match)];
#else
    std::fprintf(stderr, "--config header: built without BLOCKTUNE_TUNED_HEADER\n");
    return 2;
#endif
  }

  // 2. The kernel (with config unset, the daemon's answer for the problem).
  auto kernel = client.GetKernel(p, config);
  if (!kernel) {
    std::fprintf(stderr, "GetKernel: %s: %s\n", blocktune::ToString(kernel.error().code),
                 kernel.error().message.c_str());
    return 1;
  }
  if (kernel->answer) {
    how = std::string("daemon, ") + blocktune::ToString(kernel->answer->match);
    if (kernel->answer->predicted_seconds > 0) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), ", predicted %.1f us",
                    kernel->answer->predicted_seconds * 1e6);
      how += buf;
    }
  }

  // 3. Load it into the runtime's context.
  CHECK_RT(cudaFree(nullptr));
  CUcontext ctx;
  CHECK_CU(cuCtxGetCurrent(&ctx));
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(sizeof(log))};
  CUmodule module;
  if (cuModuleLoadDataEx(&module, kernel->ptx.c_str(), 2, options, values) != CUDA_SUCCESS) {
    std::fprintf(stderr, "PTX does not load:\n%s\n", log);
    return 1;
  }
  CUfunction entry, reduce = nullptr;
  CHECK_CU(cuModuleGetFunction(&entry, module, kernel->entry.c_str()));
  if (!kernel->reduce_entry.empty())
    CHECK_CU(cuModuleGetFunction(&reduce, module, kernel->reduce_entry.c_str()));

  // Random operands; C poisoned with NaN so unwritten elements show.
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t lda = p.a_transposed ? m : k, ldb = p.b_transposed ? k : n, ldc = n;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> ha(m * k), hb(k * n);
  for (float& v : ha) v = uniform(rng);
  for (float& v : hb) v = uniform(rng);
  float *a, *b, *c, *ref, *workspace = nullptr;
  void* flush;
  const size_t flush_bytes = size_t{256} << 20;
  CHECK_RT(cudaMalloc(&a, ha.size() * 4));
  CHECK_RT(cudaMalloc(&b, hb.size() * 4));
  CHECK_RT(cudaMalloc(&c, m * n * 4));
  CHECK_RT(cudaMalloc(&ref, m * n * 4));
  CHECK_RT(cudaMalloc(&flush, flush_bytes));
  if (kernel->workspace_bytes > 0) CHECK_RT(cudaMalloc(&workspace, kernel->workspace_bytes));
  CHECK_RT(cudaMemcpy(a, ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
  CHECK_RT(cudaMemcpy(b, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
  CHECK_RT(cudaMemset(c, 0xff, m * n * 4));

  // The argument array, built from the parameter layout GetKernel gave.
  CUdeviceptr pa = reinterpret_cast<CUdeviceptr>(a), pb = reinterpret_cast<CUdeviceptr>(b),
              pc = reinterpret_cast<CUdeviceptr>(c),
              pw = reinterpret_cast<CUdeviceptr>(workspace);
  uint32_t um = m, un = n, uk = k, ulda = lda, uldb = ldb, uldc = ldc, ukg = kernel->grid[2];
  float alpha = 1.f, beta = 0.f;
  auto args_for = [&](const std::vector<blocktune::KernelParam>& params) {
    std::vector<void*> args;
    for (const blocktune::KernelParam& q : params) {
      const std::string& x = q.name;
      void* v = x == "A" ? static_cast<void*>(&pa) : x == "B" ? static_cast<void*>(&pb)
              : x == "C" ? static_cast<void*>(&pc) : x == "W" ? static_cast<void*>(&pw)
              : x == "M" ? static_cast<void*>(&um) : x == "N" ? static_cast<void*>(&un)
              : x == "K" ? static_cast<void*>(&uk) : x == "lda" ? static_cast<void*>(&ulda)
              : x == "ldb" ? static_cast<void*>(&uldb) : x == "ldc" ? static_cast<void*>(&uldc)
              : x == "K_G" ? static_cast<void*>(&ukg) : x == "alpha" ? static_cast<void*>(&alpha)
              : x == "beta" ? static_cast<void*>(&beta) : nullptr;
      if (v == nullptr) {
        std::fprintf(stderr, "unknown kernel parameter %s\n", x.c_str());
        std::exit(1);
      }
      args.push_back(v);
    }
    return args;
  };
  std::vector<void*> main_args = args_for(kernel->params);
  std::vector<void*> reduce_args = args_for(kernel->reduce_params);
  auto ours = [&] {
    CHECK_CU(cuLaunchKernel(entry, kernel->grid[0], kernel->grid[1], kernel->grid[2],
                            kernel->block[0], kernel->block[1], kernel->block[2], 0,
                            nullptr, main_args.data(), nullptr));
    if (reduce) {
      CHECK_CU(cuLaunchKernel(reduce, kernel->reduce_grid[0], kernel->reduce_grid[1],
                              kernel->reduce_grid[2], kernel->reduce_block[0],
                              kernel->reduce_block[1], kernel->reduce_block[2], 0,
                              nullptr, reduce_args.data(), nullptr));
    }
  };

  // 4. cuBLAS, FP32 (no TF32). Row-major C = op(A) op(B) is column-major
  // C^T = op(B)^T op(A)^T.
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH));
  auto cublas = [&] {
    CHECK_BLAS(cublasSgemm(blas, p.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                           p.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
                           b, ldb, a, lda, &beta, ref, ldc));
  };

  ours();
  cublas();
  CHECK_RT(cudaDeviceSynchronize());
  std::vector<float> hc(m * n), href(m * n);
  CHECK_RT(cudaMemcpy(hc.data(), c, m * n * 4, cudaMemcpyDeviceToHost));
  CHECK_RT(cudaMemcpy(href.data(), ref, m * n * 4, cudaMemcpyDeviceToHost));
  double diff = 0, norm = 0;
  bool finite = true;
  for (size_t i = 0; i < hc.size(); ++i) {
    finite &= std::isfinite(hc[i]);
    diff += double(hc[i] - href[i]) * double(hc[i] - href[i]);
    norm += double(href[i]) * double(href[i]);
  }
  const double rel = std::sqrt(diff / std::max(norm, 1e-30));
  const bool ok = finite && rel < 1e-5;

  const double t_ours = MedianSeconds(f.reps, flush, flush_bytes, ours);
  const double t_blas = MedianSeconds(f.reps, flush, flush_bytes, cublas);
  const double flops = 2.0 * double(m) * double(n) * double(k);
  cudaDeviceProp prop;
  CHECK_RT(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  std::printf("gemm m=%lld n=%lld k=%lld layout=%c%c\n", (long long)m, (long long)n,
              (long long)k, p.a_transposed ? 'T' : 'N', p.b_transposed ? 'T' : 'N');
  std::printf("block shape: %s (%s)\n", kernel->config.ToString().c_str(), how.c_str());
  std::printf("kernel: %s %s grid %ux%ux%u block %u%s\n", kernel->entry.c_str(),
              kernel->arch.c_str(), kernel->grid[0], kernel->grid[1], kernel->grid[2],
              kernel->block[0], reduce ? " + reduce" : "");
  std::printf("check vs cuBLAS: relative error %.2e, %s\n", rel,
              ok ? "ok" : (finite ? "MISMATCH" : "NaN (unwritten or wrong)"));
  std::printf("blocktune %9.1f us %7.2f TFLOP/s\n", t_ours * 1e6, flops / t_ours / 1e12);
  std::printf("cuBLAS    %9.1f us %7.2f TFLOP/s\n", t_blas * 1e6, flops / t_blas / 1e12);
  std::printf("speed-up (cuBLAS time / blocktune time): %.2fx\n", t_blas / t_ours);
  return ok ? 0 : 1;
}
