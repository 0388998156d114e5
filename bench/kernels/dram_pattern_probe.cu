// dram_pattern_probe: how fast can an H100 read the A operand of issue 18's
// MLP layer (7168 x 7168 fp32, row-major, 205.5 MB) in the access pattern
// that gemm.ffma_k uses, and how does that depend on the pattern's knobs?
//
// gemm.ffma_k's best kernel for 7168x16x7168 (KG=2, 128 rows per program,
// KC=64, ST=4) reads A at 2.59 TB/s (79.4 us); issue 18 asks for 77.8 us.
// This probe copies A global -> shared exactly as that kernel's stages do
// (cp.async 16 bytes, ROWS rows x KC floats per stage, ST stages in flight,
// the grid M/ROWS x KG) but does no arithmetic, so the time it prints is the
// memory side's floor for that pattern. Beside it: a linear read of the
// same bytes (every program a contiguous range), the ceiling for any
// pattern. Knobs: ROWS, KC (16..512: today's domain stops at 64), ST, KG,
// and ROT=1 (each program starts its K loop at a rotated stage, so that the
// programs do not all read the same columns at once).
//
// PF and PG (2026-12-07, session 17): besides the cp.async ring, a bulk L2
// prefetch (cp.async.bulk.prefetch.L2, sm_90) of every row's share of the
// stages PF beyond the ring's newest, PG stages per prefetch (PG * KC * 4
// contiguous bytes per row, issued every PG stages): more bytes in flight
// and longer runs per DRAM page without more shared memory. PF = 0: none.
//
// PROBE=ws (session 17): the same stream under the kernel's arithmetic. W
// FMAs per staged float (W = 16: the MLP layer's 16 columns) on 8 warps,
// two ways of feeding them: "lockstep", gemm.ffma_k's structure (every
// thread copies with cp.async; wait for the oldest stage, bar.sync, issue
// the copies of the stage ST - 1 ahead, compute), and "ws", warp
// specialisation (a ninth warp copies each row of a stage with one bulk
// copy, cp.async.bulk, into a ring guarded by full/empty mbarriers; the 8
// warps wait on a stage's full barrier, compute and release it, with no
// block-wide barrier). Rows are not padded in "ws" (the probe's reads are
// linear). The question: does the stream stay at its copy-only speed once
// the warps compute, and does ws keep it there where lockstep does not?
//
// Method (METHOD.md): CUDA events around each launch, 5 warm-ups, median of
// 21, L2 flushed by reading 256 MiB before every timed launch (FLUSH=memset:
// by writing it, as the first run did), A random.
// The check: every program's sum of the floats it staged is compared with
// the host's sum of the same floats (float64, relative 1e-4).
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o dram_pattern_probe
// dram_pattern_probe.cu (the device runs it; nothing here needs a GPU to
// build).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                        \
  do {                                                               \
    cudaError_t err_ = (x);                                          \
    if (err_ != cudaSuccess) {                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
                   cudaGetErrorString(err_));                        \
      std::exit(1);                                                  \
    }                                                                \
  } while (0)

constexpr int kThreads = 256;

__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s),
               "l"(gmem));
}
__device__ __forceinline__ void Commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// The L2 prefetch of `bytes` (a multiple of 16) from 16-byte aligned `gmem`.
__device__ __forceinline__ void PrefetchL2(const void* gmem, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(gmem),
               "r"(bytes)
               : "memory");
}
template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void WaitGroupRt(int n) {
  switch (n) {
    case 0: WaitGroup<0>(); break;
    case 1: WaitGroup<1>(); break;
    case 2: WaitGroup<2>(); break;
    case 3: WaitGroup<3>(); break;
    case 4: WaitGroup<4>(); break;
    default: WaitGroup<5>(); break;
  }
}

// Program (blockIdx.x = row tile, blockIdx.y = split g) stages rows
// [tile*rows, +rows) x its split's stages of kc floats through st buffers.
// Every thread then adds the floats of the stage at its own positions, so
// the copies cannot be dropped and the sum checks what was staged.
__global__ void __launch_bounds__(kThreads)
    TileRead(const float* __restrict__ a, int m, int k, int rows, int kc,
             int st, int kg, int rot, int pf, int pg,
             double* __restrict__ sums) {
  extern __shared__ float4 smem[];
  const int vpr = kc / 4;                // 16-byte vectors per row per stage
  const int per_stage = rows * vpr;      // vectors per stage
  const int stages_k = (k + kc - 1) / kc;
  const int per_split = (stages_k + kg - 1) / kg;
  const int s0 = blockIdx.y * per_split;
  const int ns = max(0, min(stages_k, s0 + per_split) - s0);
  const int row0 = blockIdx.x * rows;
  const int prog = blockIdx.x + gridDim.x * blockIdx.y;
  const int shift = rot ? (prog % max(ns, 1)) : 0;
  auto issue = [&](int i) {  // the i-th stage of this program, buffer i % st
    if (i < ns) {
      const int s = s0 + (i + shift) % ns;
      float4* buf = smem + (i % st) * per_stage;
      for (int v = threadIdx.x; v < per_stage; v += kThreads) {
        const int r = v / vpr, c = (v % vpr) * 4;
        const int gr = row0 + r, gc = s * kc + c;
        if (gr < m && gc < k)
          CpAsync16(buf + v, a + static_cast<size_t>(gr) * k + gc);
        else
          buf[v] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
    Commit();
  };
  // Stages [j, next multiple of pg) of every row of the tile into L2, for
  // j a multiple of pg or the first stage past the ring (the share stops
  // at the split's end and at K).
  auto prefetch = [&](int j) {
    if (pf <= 0 || j >= ns || (j % pg != 0 && j != st - 1) || rot) return;
    const int s = s0 + j;
    const int c0 = s * kc,
              c1 = min(k, min(s0 + ns, s0 + (j / pg + 1) * pg) * kc);
    for (int r = threadIdx.x; r < rows; r += kThreads) {
      const int gr = row0 + r;
      if (gr < m && c1 > c0)
        PrefetchL2(a + static_cast<size_t>(gr) * k + c0,
                   static_cast<unsigned>((c1 - c0) * 4 + 15) / 16 * 16);
    }
  };
  for (int j = st - 1; j < st - 1 + pf; ++j) prefetch(j);
  for (int i = 0; i < st - 1; ++i) issue(i);
  float acc = 0.f;
  for (int i = 0; i < ns; ++i) {
    WaitGroupRt(st - 2);
    __syncthreads();
    const float4* buf = smem + (i % st) * per_stage;
    for (int v = threadIdx.x; v < per_stage; v += kThreads) {
      const float4 x = buf[v];
      acc += (x.x + x.y) + (x.z + x.w);
    }
    __syncthreads();
    issue(i + st - 1);
    prefetch(i + st - 1 + pf);
  }
  WaitGroup<0>();
  sums[static_cast<size_t>(prog) * kThreads + threadIdx.x] = acc;
}

// W FMAs per float of x on four independent chains (the compute of the
// MLP layer: 16 columns per staged float).
__device__ __forceinline__ void Work(const float4& x, int w, float4& c) {
  for (int i = 0; i < w; ++i) {  // 4 FMAs: one per float
    c.x = fmaf(x.x, c.x, x.y);
    c.y = fmaf(x.y, c.y, x.z);
    c.z = fmaf(x.z, c.z, x.w);
    c.w = fmaf(x.w, c.w, x.x);
  }
}

// gemm.ffma_k's loop with W FMAs per float: wait for stage i, bar.sync,
// issue stage i + st - 1 (into the buffer stage i - 1 used), consume i.
// Exact tiles only (rows | m, kc * kg | k).
__global__ void __launch_bounds__(kThreads)
    LockstepRead(const float* __restrict__ a, int k, int rows, int kc, int st,
                 int kg, int w, double* __restrict__ sums,
                 float* __restrict__ sink) {
  extern __shared__ float4 smem[];
  const int vpr = kc / 4, per_stage = rows * vpr;
  const int ns = k / kc / kg, s0 = blockIdx.y * ns;
  const int row0 = blockIdx.x * rows;
  const int prog = blockIdx.x + gridDim.x * blockIdx.y;
  auto issue = [&](int i) {
    if (i < ns) {
      float4* buf = smem + (i % st) * per_stage;
      for (int v = threadIdx.x; v < per_stage; v += kThreads) {
        const int r = v / vpr, c = (v % vpr) * 4;
        CpAsync16(buf + v, a + static_cast<size_t>(row0 + r) * k +
                               (s0 + i) * kc + c);
      }
    }
    Commit();
  };
  for (int i = 0; i < st - 1; ++i) issue(i);
  float acc = 0.f;
  float4 c = make_float4(1.f, 1.f, 1.f, 1.f);
  for (int i = 0; i < ns; ++i) {
    WaitGroupRt(st - 2);
    __syncthreads();
    issue(i + st - 1);
    const float4* buf = smem + (i % st) * per_stage;
    for (int v = threadIdx.x; v < per_stage; v += kThreads) {
      const float4 x = buf[v];
      acc += (x.x + x.y) + (x.z + x.w);
      Work(x, w, c);
    }
  }
  WaitGroup<0>();
  sums[static_cast<size_t>(prog) * kThreads + threadIdx.x] = acc;
  if (c.x + c.y + c.z + c.w == 1234.5f) *sink = c.x;  // keeps the FMAs
}

__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void MbarInit(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar),
               "r"(count));
}
__device__ __forceinline__ void MbarExpectTx(unsigned bar, unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
      "r"(bytes)
      : "memory");
}
__device__ __forceinline__ void MbarArrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar)
               : "memory");
}
__device__ __forceinline__ void MbarWait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
}
__device__ __forceinline__ void BulkCopy(unsigned dst, const void* src,
                                         unsigned bytes, unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%0], [%1], %2, [%3];\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

// Warp specialised: warp 8 (the ninth) copies, warps 0-7 compute. The
// producer's lanes share a stage's rows, each row one bulk copy of kc
// floats completing on the stage's full barrier (lane 0 arms it with the
// stage's bytes first); a stage is refilled once its empty barrier has the
// 8 consumer warps' arrivals. Exact tiles only.
constexpr int kWsConsumers = 8 * 32;
__global__ void __launch_bounds__(kWsConsumers + 32)
    WsRead(const float* __restrict__ a, int k, int rows, int kc, int st,
           int kg, int w, double* __restrict__ sums,
           float* __restrict__ sink) {
  extern __shared__ __align__(128) unsigned char wsmem[];
  const int stage_bytes = rows * kc * 4;
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(
      wsmem + static_cast<size_t>(st) * stage_bytes);
  const unsigned full0 = SmemAddr(bars), empty0 = SmemAddr(bars + st);
  const int ns = k / kc / kg, s0 = blockIdx.y * ns;
  const int row0 = blockIdx.x * rows;
  const int prog = blockIdx.x + gridDim.x * blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < st; ++s) {
      MbarInit(full0 + 8 * s, 1);
      MbarInit(empty0 + 8 * s, kWsConsumers / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (warp == kWsConsumers / 32) {  // the producer
    for (int i = 0; i < ns; ++i) {
      const int s = i % st;
      if (i >= st) MbarWait(empty0 + 8 * s, ((i / st) - 1) & 1);
      if (lane == 0) MbarExpectTx(full0 + 8 * s, stage_bytes);
      __syncwarp();
      const unsigned dst = SmemAddr(wsmem + static_cast<size_t>(s) * stage_bytes);
      for (int r = lane; r < rows; r += 32)
        BulkCopy(dst + r * kc * 4,
                 a + static_cast<size_t>(row0 + r) * k + (s0 + i) * kc,
                 kc * 4, full0 + 8 * s);
    }
    return;
  }
  const int vpr = kc / 4, per_stage = rows * vpr;
  float acc = 0.f;
  float4 c = make_float4(1.f, 1.f, 1.f, 1.f);
  for (int i = 0; i < ns; ++i) {
    const int s = i % st;
    MbarWait(full0 + 8 * s, (i / st) & 1);
    const float4* buf = reinterpret_cast<const float4*>(
        wsmem + static_cast<size_t>(s) * stage_bytes);
    for (int v = threadIdx.x; v < per_stage; v += kWsConsumers) {
      const float4 x = buf[v];
      acc += (x.x + x.y) + (x.z + x.w);
      Work(x, w, c);
    }
    __syncwarp();
    if (lane == 0) MbarArrive(empty0 + 8 * s);
  }
  sums[static_cast<size_t>(prog) * kThreads + threadIdx.x] = acc;
  if (c.x + c.y + c.z + c.w == 1234.5f) *sink = c.x;
}

// Linear: program p reads the p-th contiguous 1/P of A with 16-byte loads.
__global__ void __launch_bounds__(kThreads)
    LinearRead(const float4* __restrict__ a, size_t n4,
               double* __restrict__ sums) {
  const size_t per = (n4 + gridDim.x - 1) / gridDim.x;
  const size_t b = blockIdx.x * per, e = min(n4, b + per);
  float acc = 0.f;
#pragma unroll 8
  for (size_t i = b + threadIdx.x; i < e; i += kThreads) {
    const float4 x = __ldcs(a + i);
    acc += (x.x + x.y) + (x.z + x.w);
  }
  sums[static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x] = acc;
}

// The L2 flush: a read of 256 MiB (five times the H100's L2), so no dirty
// line is left for the timed kernel to write back (a memset flush leaves
// up to 50 MB of them, a few us of write-back inside the next timing).
__global__ void FlushRead(const float4* __restrict__ p, size_t n4,
                          float* __restrict__ sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4;
       i += size_t(gridDim.x) * blockDim.x) {
    const float4 x = __ldcg(p + i);
    acc += x.x + x.w;
  }
  if (acc == 1234.5f) *sink = acc;  // never true for the zeroed buffer
}

__global__ void Fill(float* a, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    a[i] = (h & 0xffff) / 65536.0f - 0.5f;
  }
}

struct Timer {
  cudaEvent_t b, e;
  char* flush;
  size_t flush_bytes = 256u << 20;
  float* sink;
  bool read_flush = true;
  Timer() {
    CK(cudaEventCreate(&b));
    CK(cudaEventCreate(&e));
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMemset(flush, 0, flush_bytes));
    CK(cudaMalloc(&sink, sizeof(float)));
  }
  template <class F>
  double MedianUs(F launch) {
    for (int i = 0; i < 5; ++i) launch();
    std::vector<double> t;
    for (int i = 0; i < 21; ++i) {
      if (read_flush)
        FlushRead<<<1056, 256>>>(reinterpret_cast<const float4*>(flush),
                                 flush_bytes / 16, sink);
      else
        CK(cudaMemsetAsync(flush, i, flush_bytes));
      CK(cudaEventRecord(b));
      launch();
      CK(cudaEventRecord(e));
      CK(cudaEventSynchronize(e));
      float ms;
      CK(cudaEventElapsedTime(&ms, b, e));
      t.push_back(ms * 1e3);
    }
    CK(cudaGetLastError());
    std::nth_element(t.begin(), t.begin() + 10, t.end());
    return t[10];
  }
};

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 7168;
  const int k = argc > 2 ? std::atoi(argv[2]) : 7168;
  const size_t n = size_t(m) * k;
  const double bytes = n * 4.0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs; A %d x %d fp32 (%.1f MB)\n", prop.name,
              prop.multiProcessorCount, m, k, bytes / 1e6);
  float* a;
  CK(cudaMalloc(&a, n * 4));
  Fill<<<1024, 256>>>(a, n, 12345u);
  std::vector<float> host(n);
  CK(cudaMemcpy(host.data(), a, n * 4, cudaMemcpyDeviceToHost));
  double* sums;
  const size_t max_sums = size_t(1) << 22;
  CK(cudaMalloc(&sums, max_sums * sizeof(double)));
  CK(cudaFuncSetAttribute(TileRead,
                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                          prop.sharedMemPerBlockOptin));
  Timer timer;
  // FLUSH=memset: the first run's flush, for comparison.
  const char* flush_env = std::getenv("FLUSH");
  timer.read_flush = !(flush_env && std::string(flush_env) == "memset");
  std::printf("# L2 flush before each timed launch: %s of 256 MiB\n",
              timer.read_flush ? "a read" : "a memset");
  std::printf(
      "pattern\trows\tKC\tST\tKG\tROT\tprograms\tus\tTB/s\tcheck\tPF\t"
      "PG\n");
  // Linear ceiling, at 1, 2 and 4 programs per SM.
  for (int per_sm : {1, 2, 4, 8}) {
    const int grid = per_sm * prop.multiProcessorCount;
    const double us = timer.MedianUs([&] {
      LinearRead<<<grid, kThreads>>>(reinterpret_cast<const float4*>(a),
                                     n / 4, sums);
    });
    std::printf("linear\t-\t-\t-\t-\t-\t%d\t%.2f\t%.3f\t-\n", grid, us,
                bytes / us / 1e6);
  }
  struct Cfg { int rows, kc, st, kg, rot, pf = 0, pg = 1; };
  std::vector<Cfg> cfgs;
  // PROBE=pf: only the prefetch study (the MLP grid, and with M <= 128 a
  // covariance-like grid of one row tile split many ways).
  const char* probe_env = std::getenv("PROBE");
  const bool pf_only = probe_env && std::string(probe_env) == "pf";
  if (!pf_only) {
    for (int rows : {64, 128})
      for (int kc : {32, 64, 128, 256})
        for (int st : {2, 3, 4})
          for (int kg : {1, 2, 4, 7})
            for (int rot : {0, 1}) cfgs.push_back({rows, kc, st, kg, rot});
    for (int kc : {512}) for (int st : {2, 3}) for (int kg : {2, 7})
      cfgs.push_back({64, kc, st, kg, 0});
  }
  // The check of a TileRead, LockstepRead or WsRead launch: the first and
  // last split of every fifth row tile, each program's threads' sums
  // (sums[prog * kThreads + t]) against the host's sum of its rows and its
  // split's `split_cols` columns; the worst relative error.
  std::vector<double> dev_sums;
  auto worst_sum_error = [&](dim3 grid, int rows, int split_cols) {
    dev_sums.resize(size_t(grid.x) * grid.y * kThreads);
    CK(cudaMemcpy(dev_sums.data(), sums, dev_sums.size() * 8,
                  cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int y = 0; y < (int)grid.y; y += std::max(1, (int)grid.y - 1))
      for (int x = 0; x < (int)grid.x; x += std::max(1, (int)grid.x / 5)) {
        const int prog = x + grid.x * y;
        double got = 0, want = 0, mag = 0;
        for (int t = 0; t < kThreads; ++t)
          got += dev_sums[size_t(prog) * kThreads + t];
        const int c0 = y * split_cols, c1 = std::min(k, (y + 1) * split_cols);
        for (int r = x * rows; r < std::min(m, (x + 1) * rows); ++r)
          for (int col = c0; col < c1; ++col) {
            want += host[size_t(r) * k + col];
            mag += std::fabs(host[size_t(r) * k + col]);
          }
        worst = std::max(worst, std::fabs(got - want) / std::max(mag, 1.0));
      }
    return worst;
  };
  if (probe_env && std::string(probe_env) == "ws") {
    // The pipeline study: the MLP grid (128 rows, K_G = 2), lockstep and
    // warp-specialised, KC 64 / 128, ST 2-4 (6 for ws at KC = 64, whose
    // rows are not padded), W 0, 8, 16, 32 FMAs per float.
    CK(cudaFuncSetAttribute(LockstepRead,
                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                            prop.sharedMemPerBlockOptin));
    CK(cudaFuncSetAttribute(WsRead, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            prop.sharedMemPerBlockOptin));
    float* sink;
    CK(cudaMalloc(&sink, sizeof(float)));
    const int rows = 128, kg = 2;
    std::printf("mode\trows\tKC\tST\tKG\tW\tprograms\tus\tTB/s\tcheck\n");
    for (int ws : {0, 1})
      for (int kc : {64, 128})
        for (int st : {2, 3, 4, 6})
          for (int w : {0, 8, 16, 32}) {
            if (m % rows || k % (kc * kg)) continue;
            const size_t shared =
                ws ? size_t(st) * rows * kc * 4 + 16 * st
                   : size_t(st) * rows * kc * 4;
            if (shared > prop.sharedMemPerBlockOptin) continue;
            if (!ws && st == 6) continue;
            dim3 grid(m / rows, kg);
            const int programs = grid.x * grid.y;
            const double us = timer.MedianUs([&] {
              if (ws)
                WsRead<<<grid, kWsConsumers + 32, shared>>>(a, k, rows, kc,
                                                            st, kg, w, sums,
                                                            sink);
              else
                LockstepRead<<<grid, kThreads, shared>>>(a, k, rows, kc, st,
                                                         kg, w, sums, sink);
            });
            // The consumers' partial sums (the producer writes none).
            const double worst = worst_sum_error(grid, rows, k / kg);
            std::printf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.3f\t%s\n",
                        ws ? "ws" : "lockstep", rows, kc, st, kg, w, programs,
                        us, bytes / us / 1e6, worst < 1e-4 ? "ok" : "FAIL");
            std::fflush(stdout);
          }
    return 0;
  }
  if (m > 128) {
    for (int kc : {32, 64, 128})
      for (int st : {2, 3, 4})
        for (int pf : {0, 1, 2, 4, 8})
          for (int pg : {1, 2, 4}) {
            if ((pf == 0 && pg > 1) || (pg > 1 && pf < pg)) continue;
            cfgs.push_back({128, kc, st, 2, 0, pf, pg});
          }
  } else {
    for (int kg : {64, 128, 256, 512})
      for (int kc : {32, 64})
        for (int st : {2, 3, 4})
          for (int pf : {0, 2, 64})
            cfgs.push_back({64, kc, st, kg, 0, pf, pf > 2 ? 4 : 1});
  }
  for (const Cfg& c : cfgs) {
    const size_t shared = size_t(c.st) * c.rows * c.kc * 4;
    if (shared > prop.sharedMemPerBlockOptin) continue;
    dim3 grid((m + c.rows - 1) / c.rows, c.kg);
    const int programs = grid.x * grid.y;
    if (size_t(programs) * kThreads > max_sums) continue;
    const double us = timer.MedianUs([&] {
      TileRead<<<grid, kThreads, shared>>>(a, m, k, c.rows, c.kc, c.st, c.kg,
                                           c.rot, c.pf, c.pg, sums);
    });
    const int stages_k = (k + c.kc - 1) / c.kc;
    const int per_split = (stages_k + c.kg - 1) / c.kg;
    const double worst = worst_sum_error(grid, c.rows, per_split * c.kc);
    std::printf("tile\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.3f\t%s\t%d\t%d\n",
                c.rows, c.kc, c.st, c.kg, c.rot, programs, us,
                bytes / us / 1e6, worst < 1e-4 ? "ok" : "FAIL", c.pf, c.pg);
    std::fflush(stdout);
  }
  return 0;
}
