// gemm_app: an application using blocktune end to end.
//
//   1. asks blocktuned for the best kernel configuration of a GEMM in the
//      precision --dtype names (Query: family, generator version,
//      parameters, and how it was chosen); for fp32 it may instead, built
//      with -DBLOCKTUNE_TUNED_HEADER=\"tuned_gemm.h\" and run with
//      --config header, take a block shape from an exported header, with
//      no query;
//   2. fetches that configuration's PTX and launch needs (GetKernel):
//      entry, geometry, dynamic shared memory, workspace and counters,
//      alignment, and the parameter list, which it fills by name;
//   3. loads and launches it through the CUDA driver API on random data:
//      dynamic shared memory above 48 KiB opted in with cuFuncSetAttribute,
//      the workspace's counters zeroed once before the first launch, the
//      reduce entry after the main one where the kernel has one;
//   4. checks C against cuBLAS in the same precision and prints both
//      times (cudaEvent, 3 warm-up runs, median of --reps, L2 flushed).
//
// Per --dtype (C is in the input type; alpha = 1, beta = 0 in fp32):
//   fp32  A, B, C fp32; usually a gemm.ffma kernel (FFMA); cuBLAS
//         cublasSgemm with CUBLAS_PEDANTIC_MATH (no TF32).
//   tf32  A, B, C fp32 storage, tensor-core math on tf32-rounded inputs
//         (gemm.mma); cuBLAS cublasGemmEx, CUDA_R_32F,
//         CUBLAS_COMPUTE_32F_FAST_TF32.
//   bf16  A, B, C bf16, fp32 accumulation (gemm.mma); cuBLAS cublasGemmEx,
//         CUDA_R_16BF, CUBLAS_COMPUTE_32F.
//   fp16  as bf16 with CUDA_R_16F.
// The check is blocktune's scaled bound (tuner/check_ptx.h, CheckBoundFor)
// on the difference of two results that each approximate the exact
// product of the rounded inputs:
//   |C - C_cublas| <= 2 * (c * u * sum_k |a_ik||b_kj| + u_out * |C_cublas|)
// with c = 168 for fp32 and 3 otherwise, u the unit roundoff of the math
// (fp32 2^-24, tf32 2^-11, bf16 2^-8, fp16 2^-11) and u_out that of the
// stored output; sum_k |a||b| comes from an fp32 cuBLAS GEMM of |A| and |B|.
//
//   gemm_app [--server ADDR] [--config daemon|header] [--m M --n N --k K]
//            [--layout NN|NT|TN|TT] [--dtype fp32|tf32|bf16|fp16]
//            [--family NAME] [--reps R]
//
// gemm_app fills the parameters of the GEMM entries by name (A, B, C, W,
// M, N, K, lda, ldb, ldc, alpha, beta, K_G) and encodes the TMA tensor maps
// a gemm.wgmma entry takes for A, B and C (Kernel::tensor_maps, with
// cuTensorMapEncodeTiled, once: the operands do not move); a parameter it
// does not know is refused with its name. Exit 0 when the result is within
// the bound.
#include <blocktune/client.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
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
  std::string family;  // empty: every family of the precision
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
    else if (a == "--family") f.family = next();
    else if (a == "--dtype") {
      const std::string d = next();
      auto dtype = blocktune::DTypeFromString(d);
      if (!dtype) {
        std::fprintf(stderr, "--dtype must be one of fp32, tf32, bf16, fp16; got '%s'\n",
                     d.c_str());
        std::exit(2);
      }
      f.problem.dtype = *dtype;
    }
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
  if (f.config == "header" && f.problem.dtype != blocktune::DType::kFp32) {
    std::fprintf(stderr, "--config header: this example reads fp32 block shapes "
                         "from a header; use --config daemon for --dtype %s\n",
                 blocktune::ToString(f.problem.dtype));
    std::exit(2);
  }
  return f;
}

// Host-side element conversions (round to nearest even; finite inputs).
uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t ToBf16(float f) {
  uint32_t u = Bits(f);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float Bf16ToFloat(uint16_t h) { return FromBits(uint32_t{h} << 16); }
uint16_t ToFp16(float f) {  // |f| < 65504
  const uint32_t u = Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (a < 6.103515625e-05f) {  // below fp16's smallest normal: multiples of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.f));
  }
  const uint32_t au = u & 0x7fffffff;
  const uint32_t mant = au & 0x7fffff;
  uint32_t h = ((((au >> 23) - 127 + 15)) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // may carry into the exponent
  return sign | static_cast<uint16_t>(h);
}
float Fp16ToFloat(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float v = e == 0    ? std::ldexp(float(m), -24)
                  : e == 31 ? (m ? NAN : INFINITY)
                            : std::ldexp(float(1024 + m), e - 25);
  return (h & 0x8000) ? -v : v;
}

// Storage bytes per element and blocktune's check constants
// (tuner/check_ptx.cc CheckBoundFor, kernels/operation.h MathRoundoff).
struct Precision {
  int bytes;
  double c, u_math, u_out;
};
Precision PrecisionOf(blocktune::DType d) {
  switch (d) {
    case blocktune::DType::kTf32: return {4, 3, std::ldexp(1.0, -11), std::ldexp(1.0, -24)};
    case blocktune::DType::kBf16: return {2, 3, std::ldexp(1.0, -8), std::ldexp(1.0, -8)};
    case blocktune::DType::kFp16: return {2, 3, std::ldexp(1.0, -11), std::ldexp(1.0, -11)};
    case blocktune::DType::kFp32: break;
  }
  return {4, 168, std::ldexp(1.0, -24), std::ldexp(1.0, -24)};
}

// A matrix in `dtype`'s storage on the host: the stored bits, and the
// values they hold as floats (rounded, so |a| and the reference see what
// the GPU sees).
struct HostMatrix {
  std::vector<unsigned char> bytes;
  std::vector<float> values;
};
HostMatrix RandomMatrix(int64_t elements, blocktune::DType dtype, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  const int size = PrecisionOf(dtype).bytes;
  HostMatrix m;
  m.bytes.resize(elements * size);
  m.values.resize(elements);
  for (int64_t i = 0; i < elements; ++i) {
    const float x = uniform(rng);
    if (dtype == blocktune::DType::kBf16) {
      const uint16_t h = ToBf16(x);
      std::memcpy(&m.bytes[i * 2], &h, 2);
      m.values[i] = Bf16ToFloat(h);
    } else if (dtype == blocktune::DType::kFp16) {
      const uint16_t h = ToFp16(x);
      std::memcpy(&m.bytes[i * 2], &h, 2);
      m.values[i] = Fp16ToFloat(h);
    } else {  // fp32, tf32: fp32 storage (the kernel rounds tf32 itself)
      std::memcpy(&m.bytes[i * 4], &x, 4);
      m.values[i] = x;
    }
  }
  return m;
}

std::vector<float> ToFloats(const std::vector<unsigned char>& bytes, blocktune::DType dtype) {
  const int size = PrecisionOf(dtype).bytes;
  std::vector<float> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) {
    if (size == 4) {
      std::memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      out[i] = dtype == blocktune::DType::kBf16 ? Bf16ToFloat(h) : Fp16ToFloat(h);
    }
  }
  return out;
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
  const blocktune::DType dtype = p.dtype;
  const Precision prec = PrecisionOf(dtype);
  blocktune::Client client(f.server);

  // 1. The configuration: from the daemon (any family of the precision,
  // or --family), or an fp32 block shape from the header.
  std::optional<blocktune::BlockConfig> header_config;
  std::string how;
  if (f.config == "header") {
#ifdef BLOCKTUNE_TUNED_HEADER
    namespace tuned = blocktune::tuned;
    const tuned::Layout layout =
        p.a_transposed ? (p.b_transposed ? tuned::Layout::TT : tuned::Layout::TN)
                       : (p.b_transposed ? tuned::Layout::NT : tuned::Layout::NN);
    const tuned::Config c = tuned::gemm_config(p.m, p.n, p.k, layout);
    header_config = blocktune::BlockConfig{c.block.ml, c.block.nl, c.block.ms,
                                           c.block.ns, c.block.u,  c.block.kg};
    static const char* const kMatch[] = {"exact", "predicted", "nearest", "default"};
    how = std::string("header, ") + kMatch[static_cast<int>(c.match)];
#else
    std::fprintf(stderr, "--config header: built without BLOCKTUNE_TUNED_HEADER\n");
    return 2;
#endif
  }

  // 2. The kernel: the header's block shape, or the daemon's answer named
  // back to GetKernel (so the kernel is exactly the configuration asked).
  blocktune::Result<blocktune::Kernel> kernel =
      blocktune::Error{blocktune::ErrorCode::kInternal, "not asked"};
  std::string note;
  if (header_config) {
    kernel = client.GetKernel(p, header_config);
  } else {
    blocktune::QueryOptions q;
    q.family = f.family;
    auto answer = client.Query(p, q);
    if (!answer) {
      std::fprintf(stderr, "Query: %s: %s\n", blocktune::ToString(answer.error().code),
                   answer.error().message.c_str());
      return 1;
    }
    how = std::string("daemon, ") + blocktune::ToString(answer->match);
    if (answer->predicted_seconds > 0) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), ", predicted %.1f us", answer->predicted_seconds * 1e6);
      how += buf;
    }
    note = answer->provenance.note;
    blocktune::KernelOptions k;
    k.config = answer->kernel_config;
    kernel = client.GetKernel(p, k);
  }
  if (!kernel) {
    std::fprintf(stderr, "GetKernel: %s: %s\n", blocktune::ToString(kernel.error().code),
                 kernel.error().message.c_str());
    return 1;
  }
  std::string param_names;
  for (const blocktune::KernelParam& q : kernel->params) param_names += " " + q.name;
  std::printf("kernel: %s (%s)\n", kernel->kernel_config.ToString().c_str(), how.c_str());
  if (!note.empty()) std::printf("note: %s\n", note.c_str());
  std::printf("entry: %s%s\n", kernel->entry.c_str(), param_names.c_str());
  std::fflush(stdout);

  // Operands: leading dimensions tight, as the daemon checked the
  // configuration against them.
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t lda = p.a_transposed ? m : k, ldb = p.b_transposed ? k : n, ldc = n;
  if (lda % kernel->align_a != 0 || ldb % kernel->align_b != 0 ||
      ldc % kernel->align_c != 0) {
    std::fprintf(stderr,
                 "%s needs lda a multiple of %lld, ldb of %lld and ldc of %lld "
                 "elements; this problem has %lld, %lld and %lld\n",
                 kernel->kernel_config.family.c_str(), (long long)kernel->align_a,
                 (long long)kernel->align_b, (long long)kernel->align_c,
                 (long long)lda, (long long)ldb, (long long)ldc);
    return 1;
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
  CUfunction entry, reduce = nullptr, pack = nullptr;
  CHECK_CU(cuModuleGetFunction(&entry, module, kernel->entry.c_str()));
  if (!kernel->pack_entry.empty())
    CHECK_CU(cuModuleGetFunction(&pack, module, kernel->pack_entry.c_str()));
  if (!kernel->reduce_entry.empty())
    CHECK_CU(cuModuleGetFunction(&reduce, module, kernel->reduce_entry.c_str()));
  const unsigned dynamic_shared = static_cast<unsigned>(kernel->dynamic_shared_bytes);
  if (dynamic_shared > 48 * 1024) {
    CHECK_CU(cuFuncSetAttribute(entry, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(dynamic_shared)));
  }

  // Random operands in the precision; C poisoned (all ones: NaN in every
  // type) so unwritten elements show.
  std::mt19937 rng(1);
  const HostMatrix ha = RandomMatrix(m * k, dtype, rng);
  const HostMatrix hb = RandomMatrix(k * n, dtype, rng);
  const size_t c_bytes = size_t(m) * n * prec.bytes;
  void *a, *b, *c, *ref, *workspace = nullptr;
  float *abs_a, *abs_b, *abs_sum;
  void* flush;
  const size_t flush_bytes = size_t{256} << 20;
  CHECK_RT(cudaMalloc(&a, ha.bytes.size()));
  CHECK_RT(cudaMalloc(&b, hb.bytes.size()));
  CHECK_RT(cudaMalloc(&c, c_bytes));
  CHECK_RT(cudaMalloc(&ref, c_bytes));
  CHECK_RT(cudaMalloc(&abs_a, ha.values.size() * 4));
  CHECK_RT(cudaMalloc(&abs_b, hb.values.size() * 4));
  CHECK_RT(cudaMalloc(&abs_sum, size_t(m) * n * 4));
  CHECK_RT(cudaMalloc(&flush, flush_bytes));
  if (kernel->workspace_bytes > 0) CHECK_RT(cudaMalloc(&workspace, kernel->workspace_bytes));
  CHECK_RT(cudaMemcpy(a, ha.bytes.data(), ha.bytes.size(), cudaMemcpyHostToDevice));
  CHECK_RT(cudaMemcpy(b, hb.bytes.data(), hb.bytes.size(), cudaMemcpyHostToDevice));
  CHECK_RT(cudaMemset(c, 0xff, c_bytes));
  {
    std::vector<float> abs_host(ha.values.size());
    for (size_t i = 0; i < abs_host.size(); ++i) abs_host[i] = std::fabs(ha.values[i]);
    CHECK_RT(cudaMemcpy(abs_a, abs_host.data(), abs_host.size() * 4, cudaMemcpyHostToDevice));
    abs_host.resize(hb.values.size());
    for (size_t i = 0; i < abs_host.size(); ++i) abs_host[i] = std::fabs(hb.values[i]);
    CHECK_RT(cudaMemcpy(abs_b, abs_host.data(), abs_host.size() * 4, cudaMemcpyHostToDevice));
  }
  // Counters the kernel keeps in its workspace start at zero; every launch
  // leaves them zero, so once is enough.
  if (kernel->counter_offset >= 0 && kernel->workspace_bytes > kernel->counter_offset) {
    CHECK_RT(cudaMemset(static_cast<char*>(workspace) + kernel->counter_offset, 0,
                        kernel->workspace_bytes - kernel->counter_offset));
  }

  // The argument array, built by name from the parameter list GetKernel
  // gave (families differ in it).
  CUdeviceptr pa = reinterpret_cast<CUdeviceptr>(a), pb = reinterpret_cast<CUdeviceptr>(b),
              pc = reinterpret_cast<CUdeviceptr>(c),
              pw = reinterpret_cast<CUdeviceptr>(workspace);
  const int64_t kg = kernel->kernel_config.Get("kg").value_or(kernel->grid[2]);
  uint32_t um = m, un = n, uk = k, ulda = lda, uldb = ldb, uldc = ldc,
           ukg = static_cast<uint32_t>(kg);
  float alpha = 1.f, beta = 0.f;
  // TMA tensor maps (gemm.wgmma): encoded for A's, B's and C's addresses (or
  // the workspace's plus an offset: gemm.wgmma_pk's packed operands) as
  // GetKernel describes them, passed by value.
  std::vector<CUtensorMap> maps(kernel->tensor_maps.size());
  for (size_t i = 0; i < maps.size(); ++i) {
    const blocktune::TensorMap& t = kernel->tensor_maps[i];
    const cuuint64_t dims[2] = {t.dims[0], t.dims[1]};
    const cuuint64_t strides[1] = {t.row_stride_bytes};
    const cuuint32_t box[2] = {t.box[0], t.box[1]};
    const cuuint32_t element_strides[2] = {1, 1};
    CHECK_CU(cuTensorMapEncodeTiled(
        &maps[i], static_cast<CUtensorMapDataType>(t.data_type), 2,
        t.operand == 'A'   ? a
        : t.operand == 'B' ? b
        : t.operand == 'W' ? static_cast<char*>(workspace) + t.offset
                           : c,
        dims, strides, box, element_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  }
  auto args_for = [&](const std::vector<blocktune::KernelParam>& params) {
    std::vector<void*> args;
    for (size_t i = 0; i < params.size(); ++i) {
      const blocktune::KernelParam& q = params[i];
      const std::string& x = q.name;
      void* map = nullptr;
      if (&params == &kernel->params) {
        for (size_t j = 0; j < maps.size(); ++j)
          if (kernel->tensor_maps[j].param_index == static_cast<int>(i)) map = &maps[j];
      }
      if (map != nullptr) {
        args.push_back(map);
        continue;
      }
      void* v = x == "A" ? static_cast<void*>(&pa) : x == "B" ? static_cast<void*>(&pb)
              : x == "C" ? static_cast<void*>(&pc) : x == "W" ? static_cast<void*>(&pw)
              : x == "M" ? static_cast<void*>(&um) : x == "N" ? static_cast<void*>(&un)
              : x == "K" ? static_cast<void*>(&uk) : x == "lda" ? static_cast<void*>(&ulda)
              : x == "ldb" ? static_cast<void*>(&uldb) : x == "ldc" ? static_cast<void*>(&uldc)
              : x == "K_G" ? static_cast<void*>(&ukg) : x == "alpha" ? static_cast<void*>(&alpha)
              : x == "beta" ? static_cast<void*>(&beta) : nullptr;
      if (v == nullptr) {
        std::fprintf(stderr,
                     "gemm_app does not know kernel parameter '%s' (%s) of %s; "
                     "pass --family gemm.mma or gemm.wgmma\n",
                     x.c_str(), q.type.c_str(), kernel->kernel_config.family.c_str());
        std::exit(2);
      }
      args.push_back(v);
    }
    return args;
  };
  std::vector<void*> main_args = args_for(kernel->params);
  std::vector<void*> reduce_args = args_for(kernel->reduce_params);
  // A persistent kernel (gemm.wgmma_ps) was measured with as many programs
  // as the device holds at once, in whole clusters; any grid computes the
  // same result.
  unsigned grid_x = kernel->grid[0];
  if (kernel->persistent) {
    CUdevice device;
    int sms = 0, resident = 0;
    CHECK_CU(cuCtxGetDevice(&device));
    CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
    CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &resident, entry, static_cast<int>(kernel->block[0] * kernel->block[1] * kernel->block[2]),
        dynamic_shared));
    const unsigned cluster = std::max(kernel->cluster, 1u);
    const unsigned programs = static_cast<unsigned>(sms * std::max(resident, 1));
    grid_x = std::max(cluster, std::min(grid_x, programs) / cluster * cluster);
  }
  auto ours = [&] {
    if (pack) {  // gemm.mma_pk, gemm.wgmma_pk: the entry's arguments, before it
      CHECK_CU(cuLaunchKernel(pack, kernel->pack_grid[0], kernel->pack_grid[1],
                              kernel->pack_grid[2], kernel->pack_block[0],
                              kernel->pack_block[1], kernel->pack_block[2], 0, nullptr,
                              main_args.data(), nullptr));
    }
    CHECK_CU(cuLaunchKernel(entry, grid_x, kernel->grid[1], kernel->grid[2],
                            kernel->block[0], kernel->block[1], kernel->block[2],
                            dynamic_shared, nullptr, main_args.data(), nullptr));
    if (reduce) {
      CHECK_CU(cuLaunchKernel(reduce, kernel->reduce_grid[0], kernel->reduce_grid[1],
                              kernel->reduce_grid[2], kernel->reduce_block[0],
                              kernel->reduce_block[1], kernel->reduce_block[2], 0,
                              nullptr, reduce_args.data(), nullptr));
    }
  };

  // 4. cuBLAS in the same precision. Row-major C = op(A) op(B) is
  // column-major C^T = op(B)^T op(A)^T.
  // `pedantic` computes fp32 (the fp32 reference, and sum_k |a||b|) with no
  // TF32; `blas` the other precisions with the compute type asked.
  cublasHandle_t blas, pedantic;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasCreate(&pedantic));
  CHECK_BLAS(cublasSetMathMode(pedantic, CUBLAS_PEDANTIC_MATH));
  const cublasOperation_t op_b = p.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = p.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto pedantic_sgemm = [&](const float* x, const float* y, float* out) {
    CHECK_BLAS(cublasSgemm(pedantic, op_b, op_a, n, m, k, &alpha, y, ldb, x, lda, &beta,
                           out, ldc));
  };
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (dtype == blocktune::DType::kTf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (dtype == blocktune::DType::kBf16) type = CUDA_R_16BF;
  if (dtype == blocktune::DType::kFp16) type = CUDA_R_16F;
  auto cublas = [&] {
    if (dtype == blocktune::DType::kFp32) {
      pedantic_sgemm(static_cast<const float*>(a), static_cast<const float*>(b),
                     static_cast<float*>(ref));
      return;
    }
    CHECK_BLAS(cublasGemmEx(blas, op_b, op_a, n, m, k, &alpha, b, type, ldb, a, type, lda,
                            &beta, ref, type, ldc, compute, CUBLAS_GEMM_DEFAULT));
  };

  ours();
  cublas();
  pedantic_sgemm(abs_a, abs_b, abs_sum);  // sum_k |a_ik||b_kj|
  CHECK_RT(cudaDeviceSynchronize());
  std::vector<unsigned char> hc_bytes(c_bytes), href_bytes(c_bytes);
  std::vector<float> hsum(size_t(m) * n);
  CHECK_RT(cudaMemcpy(hc_bytes.data(), c, c_bytes, cudaMemcpyDeviceToHost));
  CHECK_RT(cudaMemcpy(href_bytes.data(), ref, c_bytes, cudaMemcpyDeviceToHost));
  CHECK_RT(cudaMemcpy(hsum.data(), abs_sum, hsum.size() * 4, cudaMemcpyDeviceToHost));
  const std::vector<float> hc = ToFloats(hc_bytes, dtype), href = ToFloats(href_bytes, dtype);
  double diff = 0, norm = 0, worst = 0;  // worst: |c - ref| / bound
  int64_t outside = 0, not_finite = 0;
  for (size_t i = 0; i < hc.size(); ++i) {
    if (!std::isfinite(hc[i])) {
      ++not_finite;
      continue;
    }
    const double d = std::fabs(double(hc[i]) - double(href[i]));
    const double bound =
        2 * (prec.c * prec.u_math * double(hsum[i]) + prec.u_out * std::fabs(double(href[i])));
    if (d > bound) ++outside;
    if (bound > 0) worst = std::max(worst, d / bound);
    else if (d > 0) worst = INFINITY;
    diff += d * d;
    norm += double(href[i]) * double(href[i]);
  }
  const double rel = std::sqrt(diff / std::max(norm, 1e-30));
  const bool ok = not_finite == 0 && outside == 0;

  const double t_ours = MedianSeconds(f.reps, flush, flush_bytes, ours);
  const double t_blas = MedianSeconds(f.reps, flush, flush_bytes, cublas);
  const double flops = 2.0 * double(m) * double(n) * double(k);
  cudaDeviceProp prop;
  CHECK_RT(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  std::printf("gemm m=%lld n=%lld k=%lld layout=%c%c dtype=%s\n", (long long)m,
              (long long)n, (long long)k, p.a_transposed ? 'T' : 'N',
              p.b_transposed ? 'T' : 'N', blocktune::ToString(dtype));
  if (kernel->config.ml > 0)
    std::printf("block shape: %s (%s)\n", kernel->config.ToString().c_str(), how.c_str());
  std::printf("launch: %s %s grid %ux%ux%u block %u, %u B dynamic shared%s%s\n",
              kernel->entry.c_str(), kernel->arch.c_str(), grid_x, kernel->grid[1],
              kernel->grid[2], kernel->block[0], dynamic_shared,
              reduce ? " + reduce" : "",
              kernel->counter_offset >= 0 ? ", counters zeroed" : "");
  std::printf("check vs cuBLAS %s: relative error %.2e, worst |diff|/bound %.3f, "
              "%lld outside the bound, %lld not finite: %s\n",
              blocktune::ToString(dtype), rel, worst, (long long)outside,
              (long long)not_finite,
              ok ? "ok" : (not_finite ? "NaN (unwritten or wrong)" : "MISMATCH"));
  std::printf("blocktune %9.1f us %7.2f TFLOP/s\n", t_ours * 1e6, flops / t_ours / 1e12);
  std::printf("cuBLAS    %9.1f us %7.2f TFLOP/s\n", t_blas * 1e6, flops / t_blas / 1e12);
  std::printf("speed-up (cuBLAS time / blocktune time): %.2fx\n", t_blas / t_ours);
  return ok ? 0 : 1;
}
