// The tensor-core GEMM families (gemm.mma: mma.sync, issue 17; gemm.wgmma:
// Hopper's wgmma.mma_async with TMA, issue 23) against cuBLASLt in the same
// precision, in one run, on one GPU. Every family is driven through the
// family seam (kernels/family.h: Parse, CanImplement, Generate) and the
// tuner's generic launcher (tuner/kernel_launch.h), as the daemon runs them,
// so a new generator version or parameter needs no change here.
//
// Per shape and family: the family's parameter space (gemm.mma: the grid
// of its issue-17 benchmark; others: their whole domain) is enumerated,
// the family's rules filter it for this device, a few sanity cuts keep
// tiles near the problem's size, and up to --configs of the rest (a prior
// list first, then a deterministic random sample) are generated,
// JIT-loaded in parallel and timed quickly; the best 4 of each family are
// checked against cuBLASLt's output and re-timed with more repetitions.
// cuBLASLt: the heuristic is asked for 16 algorithms (bf16/fp16:
// CUBLAS_COMPUTE_32F with A, B, C in that type; tf32:
// CUBLAS_COMPUTE_32F_FAST_TF32, fp32 storage), 64 MiB workspace, and every
// one returned is timed; the best counts. Timing: each launch is preceded by
// an L2 flush (outside the events), CUDA events around the launch alone
// (both kernels where K_G > 1; a gemm.wgmma launch encodes its two tensor
// maps on the host after the start event, as every launch through the
// daemon's launcher does), 3 warm-ups, the median of the repetitions.
// The figures printed are a last timing of cuBLASLt's fastest algorithm
// and every family's fastest round-robin (one launch each per round), so
// that they share the card's power state (a GPU at its power cap runs the
// first ~100 ms after an idle spell faster than the rest); the search's
// own times go to stderr. Inputs are random in [-1, 1]. Our kernels'
// outputs are compared with cuBLASLt's best (relative Frobenius error).
//
//   mma_bench [--quick] [--configs N] [--only S1,S2,..] [--flush write|read|none]
//             [--families gemm.mma,gemm.wgmma] [--triton TSV]
//             [--ptx-dir DIR] [--list-shapes] [--plan]
// --flush read (default): a kernel reads 256 MiB before each timed launch,
// so L2 holds clean lines, as after a layer that only read its weights.
// --flush write: a 256 MiB memset instead; it leaves L2 full of dirty
// lines, which the timed kernel writes back to DRAM as its reads evict
// them (mma_split.txt).
// --flush none: no flush; operands, code and constants stay in L2 (to
// separate what a flush costs a short kernel from the kernel itself).
// --families: the families to run, in that order (default: every
// registered tensor-core GEMM family the device runs).
// --plan: lists each shape's candidates per family for an H100 (no GPU).
// --ptx-dir: writes the PTX of each shape's best kernel per family there
// (for ptxas + cuobjdump -sass: HGMMA in gemm.wgmma's SASS).
//   mma_bench --profile "bf16 NT 4096 16 4096 [lda ldb ldc]" "bm=.." [reps]
// times one configuration of the first of --families (for ncu).
// --programs N (before --profile): at most N programs, walking the tiles
// grid-stride, for families whose kernels can (gemm.wgmma with cm = 1,
// conv.wgmma): what a persistent grid would give.
// --compile: load cubins compiled as the worker and eval_bench compile them
// (kernels/ptx_compiler.h) instead of PTX for the driver's JIT.
// --sustain S: the best configuration back to back for S seconds after it
// is timed (the per-launch time under a sustained load).
// ratio = cuBLASLt time / ours; > 1 means ours is faster.
//
//   mma_bench --floor
// The timing floor of this protocol: a kernel that does nothing (1 program
// of 32 threads; 132 x 128) and one whose 132 x 128 threads each load one
// cold 128-byte line (one DRAM round trip after a flush), timed as every
// kernel here is (events around the launch alone, round-robin, median of
// 101) after each kind of flush. No kernel timed this way, ours or the
// vendor's, can take less; a latency-bound layer's ratio is capped by
// (vendor - floor) against (ours - floor).
//
//   mma_bench --op conv [flags as above]
// The tensor-core convolution families (conv.mma, issue 18) against cuDNN
// in the same precision instead: NHWC input, KRSC filter (cuDNN's NHWC
// filter), NHWC output; bf16/fp16 with fp32 accumulation, tf32 on fp32
// data; math type CUDNN_TENSOR_OP_MATH. cudnnFindConvolutionForwardAlgorithmEx
// (256 MiB workspace; called twice, the first call warming cuDNN up) lists
// the algorithms that run, each with the math type
// it tried; each is timed here with that math type and the same flush,
// events and median as ours, and the best counts (its
// output is the reference). Groups: c56 (3x3, batch 1, 56x56, C = K
// 64-1024), hw (3x3, C = K = 256, H = W 8-256), r50 (ResNet-50's 3x3
// layers, batch 1 and 32, bf16 and tf32), r50_1x1 (its 1x1 and strided
// layers and the stem, batch 32), odd (C = 3, 5, 12, dilation, 5x5, 1x7).
#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef BLOCKTUNE_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/kernels/family_measure.h"
#include "kernels/ptx_compiler.h"

namespace blocktune::bench {
namespace {

std::vector<Case> Shapes(bool quick) {
  using L = Layout;
  const auto bf = DType::kBf16, fp = DType::kFp16, tf = DType::kTf32;
  std::vector<Case> s;
  // decode: weights A (M x K row-major), activations B stored N x K (NT).
  for (int64_t n : {1, 2, 4, 8, 16}) {
    s.push_back(Make("decode", bf, 4096, n, 4096, L::kN, L::kT));
    if (!quick || n == 1)
      s.push_back(Make("decode", bf, 16384, n, 8192, L::kN, L::kT));
  }
  if (!quick) s.push_back(Make("decode", bf, 8192, 4, 8192, L::kN, L::kT));
  // MLP N = 16: C = A * B^T.
  for (int64_t n : {1024, 4096, 7168})
    if (!quick || n == 7168)
      s.push_back(Make("mlp", bf, n, 16, n, L::kN, L::kT));
  // covariance 64 x 64 x K.
  for (int64_t k : {16384, 65536, 131072}) {
    if (quick && k != 131072) continue;
    s.push_back(Make("cov", bf, 64, 64, k, L::kN, L::kT));
    s.push_back(Make("cov", tf, 64, 64, k, L::kN, L::kT));
  }
  // square (issue 23's targets: 2048 - 8192). tf32 is NT: wgmma has no
  // transpose for 32-bit operands, so gemm.wgmma takes tf32 only with
  // K-contiguous A and B; NN would leave it to gemm.mma.
  for (int64_t n : {1024, 2048, 4096, 6144, 8192})
    if (!quick || n == 4096)
      s.push_back(Make("square", bf, n, n, n, L::kN, L::kN));
  // NT as well: K-major B, which gemm.wgmma's cluster pairs take with
  // 128 x 256 tiles (rule cluster_box).
  for (int64_t n : {2048, 4096, 8192})
    if (!quick || n == 4096)
      s.push_back(Make("square", bf, n, n, n, L::kN, L::kT));
  for (int64_t n : {1024, 2048, 4096, 8192})
    if (!quick || n == 4096)
      s.push_back(Make("square", fp, n, n, n, L::kN, L::kN));
  for (int64_t n : {1024, 2048, 4096, 8192})
    if (!quick || n == 4096)
      s.push_back(Make("square", tf, n, n, n, L::kN, L::kT));
  // tf32 NN (two row-major matrices) and TT: gemm.wgmma_rs, A read into
  // registers (NN as C^T = B^T A^T); before it, gemm.mma's alone.
  for (int64_t n : {1024, 2048, 4096, 6144, 8192})
    if (!quick || n == 4096)
      s.push_back(Make("square", tf, n, n, n, L::kN, L::kN));
  s.push_back(Make("square", tf, 4096, 4096, 4096, L::kT, L::kT));
  s.push_back(Make("deepbench", tf, 5124, 700, 2048, L::kN, L::kN));
  s.push_back(Make("deepbench", tf, 2560, 7000, 2560, L::kN, L::kN));
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
      s.push_back(Make("proj", bf, pr.tokens, pr.out, pr.in, L::kN, L::kT));
  // prefill (issue 23's target: tokens 2048 - 16384, hidden 4096 - 8192),
  // bf16 NT: a 7B-class layer (hidden 4096: fused QKV 12288, MLP 11008)
  // and a 70B-class one (hidden 8192: MLP 28672).
  for (Proj pr : {Proj{4096, 12288, 4096}, Proj{8192, 4096, 4096},
                  Proj{8192, 11008, 4096}, Proj{8192, 4096, 11008},
                  Proj{16384, 4096, 4096}, Proj{4096, 28672, 8192},
                  Proj{8192, 8192, 8192}, Proj{16384, 8192, 8192}})
    if (!quick || pr.tokens == 8192)
      s.push_back(
          Make("prefill", bf, pr.tokens, pr.out, pr.in, L::kN, L::kT));
  // odd sizes. 1023 x 4097 x 515 NN has lda = 515, ldb = 4097 tight: 2-byte
  // copies for gemm.mma, nothing for gemm.wgmma (TMA strides are multiples
  // of 16 bytes); the padded row is the 16-byte kernel beside it.
  s.push_back(Make("odd", bf, 1000, 1000, 1000, L::kN, L::kN));
  s.push_back(Make("odd", bf, 1023, 4097, 515, L::kN, L::kN, 520, 4104));
  s.push_back(Make("odd", bf, 1023, 4097, 515, L::kN, L::kN));
  // align: rows that are 16-byte but not 128-byte aligned (TMA reads them,
  // each 128-byte box row then spans two lines), beside the same problem
  // with rows padded to 128 bytes: what a pack into padded rows would buy.
  s.push_back(Make("align", bf, 1000, 1000, 1000, L::kN, L::kN));
  s.push_back(Make("align", bf, 1000, 1000, 1000, L::kN, L::kN, 1024, 1024));
  s.push_back(
      Make("align", bf, 1000, 1000, 1000, L::kN, L::kN, 1024, 1024, 1024));
  s.push_back(Make("align", bf, 1024, 1024, 1024, L::kN, L::kN));
  s.push_back(Make("align", bf, 2560, 7000, 2560, L::kN, L::kN));
  s.push_back(
      Make("align", bf, 2560, 7000, 2560, L::kN, L::kN, 0, 7040, 7040));
  s.push_back(Make("align", tf, 1023, 4097, 520, L::kN, L::kN, 0, 4128, 4128));
  s.push_back(Make("align", tf, 1000, 1000, 1000, L::kN, L::kN));
  s.push_back(
      Make("align", tf, 1000, 1000, 1000, L::kN, L::kN, 1024, 1024, 1024));
  // The evaluation's odd shapes with tight rows (gemm.wgmma_pk's cases).
  for (DType prec : {bf, tf}) {
    s.push_back(Make("align", prec, 1023, 4097, 520, L::kN, L::kN));
    s.push_back(Make("align", prec, 777, 333, 1555, L::kN, L::kT));
    s.push_back(Make("align", prec, 3000, 50, 3000, L::kT, L::kN));
  }
  return s;
}

// Issue 18's convolution groups (see the file comment).
std::vector<Case> ConvShapes(bool quick) {
  const auto bf = DType::kBf16, fp = DType::kFp16, tf = DType::kTf32;
  std::vector<Case> s;
  for (int64_t c : {64, 128, 256, 512, 1024})
    if (!quick || c == 64 || c == 512)
      s.push_back(MakeConv("c56", bf, 1, 56, c, c, 3, 1));
  for (int64_t hw : {8, 16, 32, 64, 128, 256})
    if (!quick || hw == 16)
      s.push_back(MakeConv("hw", bf, 1, hw, 256, 256, 3, 1));
  struct L {
    int64_t hw, c;
  };
  for (DType prec : {bf, tf})
    for (int64_t n : {1, 32})
      for (L l : {L{56, 64}, L{28, 128}, L{14, 256}, L{7, 512}})
        if (!quick || l.c == 128)
          s.push_back(MakeConv("r50", prec, n, l.hw, l.c, l.c, 3, 1));
  struct L1 {
    int64_t hw, c, k, rs, stride;
  };
  for (L1 l : {L1{56, 64, 256, 1, 1}, L1{56, 256, 64, 1, 1},
               L1{28, 512, 128, 1, 1}, L1{14, 1024, 256, 1, 1},
               L1{7, 2048, 512, 1, 1}, L1{56, 256, 512, 1, 2},
               L1{56, 128, 128, 3, 2}, L1{28, 256, 256, 3, 2},
               L1{14, 512, 512, 3, 2}, L1{224, 3, 64, 7, 2}})
    if (!quick || l.rs == 1)
      s.push_back(MakeConv("r50_1x1", bf, 32, l.hw, l.c, l.k, l.rs, l.stride));
  if (!quick) {
    for (DType prec : {bf, fp}) {
      s.push_back(MakeConv("odd", prec, 1, 56, 3, 32, 3, 1));
      s.push_back(MakeConv("odd", prec, 2, 31, 5, 48, 3, 1));
      s.push_back(MakeConv("odd", prec, 2, 28, 12, 64, 5, 1));
      s.push_back(MakeConv("odd", prec, 1, 28, 64, 64, 3, 1, -1, 2));
      s.push_back(MakeConv("odd", prec, 2, 17, 128, 128, 1, 1, -1, 1, 7));
    }
  }
  return s;
}

struct FamilyResult {
  double us = NAN, rel_err = NAN;
  std::string params, note;
  int tried = 0;
};

struct Row {
  std::string group, shape, prec;
  double lt_us = NAN, triton_us = NAN;  // lt: the vendor's (cuDNN for conv)
  int lt_algos = 0;
  std::string vendor_algo;
  std::vector<FamilyResult> fam;  // in the order of --families
  int best = -1;                  // index into fam
  double bytes = 0, flops = 0;
  double BestUs() const { return best >= 0 ? fam[best].us : NAN; }
};

// A configuration generated and loaded.
struct Loaded {
  Params params;
  std::unique_ptr<LoadedKernel> kernel;
};

std::string FileSafe(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.') ch = '_';
  return s;
}

double Geomean(const std::pair<double, int>& v) {
  return v.second > 0 ? std::exp(v.first / v.second) : NAN;
}

// mma_bench --floor (see the top of this file).
int TimeFloor(int sm_count) {
  static const char kPtx[] =
      ".version 7.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry bt_null()\n{\n  ret;\n}\n"
      ".visible .entry bt_touch(.param .u64 src, .param .u64 dst)\n{\n"
      "  .reg .pred %p;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<6>;\n"
      "  ld.param.u64 %rd1, [src];\n  ld.param.u64 %rd2, [dst];\n"
      "  cvta.to.global.u64 %rd1, %rd1;\n  cvta.to.global.u64 %rd2, %rd2;\n"
      "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n"
      "  mov.u32 %r3, %tid.x;\n  mad.lo.u32 %r4, %r1, %r2, %r3;\n"
      "  mul.wide.u32 %rd3, %r4, 128;\n  add.u64 %rd4, %rd1, %rd3;\n"
      "  ld.global.u32 %r5, [%rd4];\n"
      "  setp.eq.u32 %p, %r5, 305419896;\n"  // never: the buffer is zero
      "  @%p st.global.u32 [%rd2], %r5;\n  ret;\n}\n";
  auto m = cuda::Module::Load(kPtx);
  if (!m.ok()) {
    std::fprintf(stderr, "mma_bench --floor: %s\n", m.status().ToString().c_str());
    return 1;
  }
  auto null_fn = (*m)->GetFunction("bt_null");
  auto touch_fn = (*m)->GetFunction("bt_touch");
  if (!null_fn.ok() || !touch_fn.ok()) {
    std::fprintf(stderr, "mma_bench --floor: entry not found\n");
    return 1;
  }
  const unsigned programs = static_cast<unsigned>(sm_count);
  void *src = nullptr, *dst = nullptr;
  const size_t src_bytes = size_t{programs} * 128 * 128;
  CHECK_CUDA(cudaMalloc(&src, src_bytes));
  CHECK_CUDA(cudaMemset(src, 0, src_bytes));
  CHECK_CUDA(cudaMalloc(&dst, 4));
  uint64_t s = reinterpret_cast<uint64_t>(src), d = reinterpret_cast<uint64_t>(dst);
  const std::vector<Timer::Slot> slots = {
      {nullptr, [&] { return cuda::Launch(*null_fn, {1}, {32}, 0, {}).ok(); }},
      {nullptr,
       [&] { return cuda::Launch(*null_fn, {programs}, {128}, 0, {}).ok(); }},
      {nullptr, [&] {
         return cuda::Launch(*touch_fn, {programs}, {128}, 0, {&s, &d}).ok();
       }}};
  std::printf("# the timing floor: events around one launch, round-robin, "
              "median of 101, after each kind of flush (two rounds each)\n");
  std::printf("%-7s %12s %14s %26s\n", "flush", "empty 1x32",
              "empty Px128", "one cold line Px128");
  const std::pair<const char*, Timer::FlushMode> modes[] = {
      {"read", Timer::FlushMode::kRead},
      {"write", Timer::FlushMode::kWrite},
      {"none", Timer::FlushMode::kNone}};
  for (const auto& [name, mode] : modes) {
    Timer timer(mode);
    for (int round = 0; round < 2; ++round) {
      const std::vector<double> us = timer.TimeRoundRobin(slots, 101);
      std::printf("%-7s %12.2f %14.2f %26.2f   (P = %u)\n", name, us[0], us[1],
                  us[2], programs);
    }
  }
  cudaFree(src);
  cudaFree(dst);
  return 0;
}

int Main(int argc, char** argv) {
  bool quick = false;
  size_t configs = 60;
  std::string only, families_arg, ptx_dir;
  Timer::FlushMode flush = Timer::FlushMode::kRead;
  std::string profile_shape, profile_params;
  int profile_reps = 5;
  // --programs N: at most N programs of the main entry, walking the tiles
  // grid-stride (a persistent grid; gemm.wgmma without cluster pairs and
  // conv.wgmma only). 0: one program per tile.
  unsigned programs = 0;
  // --compile: load what the worker and eval_bench load (PtxCompiler: a
  // cubin from nvJitLink, or from the toolkit's ptxas for PTX that sets
  // its registers) instead of the PTX text for the driver's JIT.
  bool compile = false;
  // --sustain S: then the best configuration back to back (no flush, no
  // wait between launches) for S seconds, in batches of 20 launches; prints
  // the median per-launch time of the batches of the second half (a
  // sustained load, as a training or serving loop runs it).
  double sustain_s = 0;
  // --deadline S: start no new shape after S seconds, so that a run with a
  // time limit (a device call) still ends with its summary table for the
  // shapes it measured.
  double deadline_s = 0;
  // --plain-reduce: launch reduce entries that wait in griddepcontrol.wait
  // as ordinary launches, not programmatic dependent ones (to time both).
  bool plain_reduce = false;
  std::string triton_path;
  bool list_shapes = false, plan = false, floor = false;
  Op op = Op::kGemm;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--op") && i + 1 < argc)
      op = !std::strcmp(argv[++i], "conv") ? Op::kConv : Op::kGemm;
    else if (!std::strcmp(argv[i], "--configs") && i + 1 < argc)
      configs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--flush") && i + 1 < argc) {
      ++i;
      flush = !std::strcmp(argv[i], "read")   ? Timer::FlushMode::kRead
              : !std::strcmp(argv[i], "none") ? Timer::FlushMode::kNone
                                              : Timer::FlushMode::kWrite;
    }
    else if (!std::strcmp(argv[i], "--families") && i + 1 < argc)
      families_arg = argv[++i];
    else if (!std::strcmp(argv[i], "--ptx-dir") && i + 1 < argc)
      ptx_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--triton") && i + 1 < argc)
      triton_path = argv[++i];
    else if (!std::strcmp(argv[i], "--list-shapes"))
      list_shapes = true;
    else if (!std::strcmp(argv[i], "--plan"))
      plan = true;
    else if (!std::strcmp(argv[i], "--compile"))
      compile = true;
    else if (!std::strcmp(argv[i], "--floor"))
      floor = true;
    else if (!std::strcmp(argv[i], "--plain-reduce"))
      plain_reduce = true;
    else if (!std::strcmp(argv[i], "--sustain") && i + 1 < argc)
      sustain_s = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--deadline") && i + 1 < argc)
      deadline_s = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--programs") && i + 1 < argc)
      programs = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--profile") && i + 2 < argc) {
      profile_shape = argv[++i];
      profile_params = argv[++i];
      if (i + 1 < argc) profile_reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: mma_bench [--op gemm|conv] [--quick] [--configs N] "
                   "[--only S,..] "
                   "[--flush write|read|none] [--families F,..] [--ptx-dir DIR] "
                   "[--triton TSV] [--compile] [--plain-reduce] [--sustain S] "
                   "[--deadline S] "
                   "[--list-shapes] "
                   "[--plan] | --floor | "
                   "--profile \"bf16 NT m n k\" \"params\" [reps]\n");
      return 2;
    }
  }
  // --only: comma-separated substrings of "group shape prec", any may match.
  auto selected = [&](const Case& c) {
    if (only.empty()) return true;
    const std::string text = c.group + " " + ShapeText(c) + " " +
                             std::string(ToString(c.prec()));
    std::istringstream parts(only);
    for (std::string part; std::getline(parts, part, ',');)
      if (!part.empty() && text.find(part) != std::string::npos) return true;
    return false;
  };
  auto all_shapes = [&] {
    return op == Op::kConv ? ConvShapes(quick) : Shapes(quick);
  };
  if (list_shapes) {  // triton_bench.py --shapes format; needs no GPU
    for (const Case& c : all_shapes()) {
      if (c.conv()) {
        std::printf("%s %s %s\n", c.group.c_str(),
                    std::string(ToString(c.prec())).c_str(),
                    ToString(c.problem.ctx).c_str());
        continue;
      }
      if (!selected(c)) continue;
      const GemmContext& g = c.g();
      std::printf("%s %s %c%c %lld %lld %lld %lld %lld\n", c.group.c_str(),
                  std::string(ToString(c.prec())).c_str(),
                  g.layout_a == Layout::kT ? 'T' : 'N',
                  g.layout_b == Layout::kT ? 'T' : 'N', (long long)g.m,
                  (long long)g.n, (long long)g.k, (long long)c.Lda(),
                  (long long)c.Ldb());
    }
    return 0;
  }
  if (plan) {  // the candidates per shape and family on an H100; no GPU
    const KernelLimits h100;
    for (const Case& c : all_shapes()) {
      if (!selected(c)) continue;
      for (const KernelFamily* f : FamiliesFor(op, c.prec())) {
        // Whole names: "gemm.wgmma" is a prefix of "gemm.wgmma_rs".
        if (!families_arg.empty() &&
            ("," + families_arg + ",").find("," + std::string(f->name()) +
                                            ",") == std::string::npos)
          continue;
        const auto cands = Candidates(*f, c, h100, 132, configs, 17);
        std::printf("%s %s %s %s: %zu candidates%s%s\n", c.group.c_str(),
                    ShapeText(c).c_str(), std::string(ToString(c.prec())).c_str(),
                    std::string(f->name()).c_str(), cands.size(),
                    cands.empty() ? "" : ", first ",
                    cands.empty() ? "" : f->Format(cands[0]).c_str());
      }
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
  auto dev = (*driver)->Limits(0);
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().ToString().c_str());
    return 1;
  }
  KernelLimits limits;
  limits.max_threads_per_block = dev->max_threads_per_block;
  limits.max_dynamic_shared_bytes = dev->max_shared_per_block_optin;
  limits.registers_per_sm = dev->max_registers_per_sm;
  limits.compute_capability = dev->cc_major * 10 + dev->cc_minor;
  limits.sm_count = dev->sm_count;
  const std::string arch = "sm_" + std::to_string(limits.compute_capability);
  const int sm_count = dev->sm_count;
  if (floor) return TimeFloor(sm_count);

  // The families: --families, or every tensor-core GEMM family (bf16) this
  // device runs.
  std::vector<const KernelFamily*> families;
  if (!families_arg.empty()) {
    std::istringstream parts(families_arg);
    for (std::string name; std::getline(parts, name, ',');) {
      auto f = FindFamily(name);
      if (!f.ok()) {
        std::fprintf(stderr, "mma_bench: --families: %s\n",
                     f.status().ToString().c_str());
        return 2;
      }
      families.push_back(*f);
    }
  } else {
    // bf16's, then those of tf32 alone (gemm.wgmma_rs).
    for (DType d : {DType::kBf16, DType::kTf32})
      for (const KernelFamily* f : FamiliesFor(op, d))
        if (f->min_compute_capability() <= limits.compute_capability &&
            std::find(families.begin(), families.end(), f) == families.end())
          families.push_back(f);
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
  const char* const vendor = op == Op::kConv ? "cuDNN" : "cuBLASLt";
#ifdef BLOCKTUNE_HAVE_CUDNN
  cudnnHandle_t dnn = nullptr;
  if (op == Op::kConv) {
    cudnnCreate(&dnn);
    std::printf("# cuDNN %zu (NHWC, CUDNN_TENSOR_OP_MATH, the second of two "
                "cudnnFind Ex calls + our timing of each algorithm with its "
                "math type)\n",
                cudnnGetVersion());
  }
#else
  if (op == Op::kConv) {
    std::fprintf(stderr, "mma_bench: built without cuDNN: no --op conv\n");
    return 2;
  }
#endif
  std::printf(
      "# device %s, %d SMs, max SM clock %d MHz, memory clock %d MHz, "
      "L2 %d MB; driver %d, runtime %d, cuBLASLt %zu\n",
      prop.name, prop.multiProcessorCount, clock_khz / 1000, mem_khz / 1000,
      prop.l2CacheSize >> 20, drv, runtime, cublasLtGetVersion());
  std::printf("# families:");
  for (const KernelFamily* f : families)
    std::printf(" %s v%d", std::string(f->name()).c_str(), f->version());
  std::printf(" (PTX generated for %s, JIT-compiled by the driver)\n",
              arch.c_str());
  Timer timer(flush);
  std::printf("# L2 flush before each timed launch: %s\n",
              flush == Timer::FlushMode::kNone   ? "none (--flush none: L2 stays warm)"
              : flush == Timer::FlushMode::kRead ? "read 256 MiB (L2 left clean)"
                                             : "memset 256 MiB (L2 left dirty)");

  // Triton's times for the same shapes, measured in the same device call
  // by triton_bench.py --tsv: "prec layout m n k lda ldb us config".
  std::map<std::string, double> triton;
  if (!triton_path.empty()) {
    auto times = ReadTritonTimes(triton_path);
    if (!times.ok()) {
      std::fprintf(stderr, "mma_bench: %s\n",
                   times.status().ToString().c_str());
      return 2;
    }
    triton = std::move(*times);
    std::printf("# Triton: %zu shapes from %s (triton_bench.py, same call)\n",
                triton.size(), triton_path.c_str());
  }

  std::vector<Case> shapes;
  if (!profile_shape.empty() && profile_shape.rfind("conv", 0) == 0) {
    // --op conv --profile "conv n=.. h=.. ... dtype=bf16" "params"
    auto ctx = ContextFromString(profile_shape);
    if (!ctx.ok()) {
      std::fprintf(stderr, "mma_bench: --profile: %s\n",
                   ctx.status().ToString().c_str());
      return 2;
    }
    Case c;
    c.group = "profile";
    c.problem = Problem(*ctx);
    shapes.push_back(c);
    families.resize(std::min<size_t>(families.size(), 1));
  } else if (!profile_shape.empty()) {
    std::istringstream in(profile_shape);
    std::string prec, lay;
    int64_t m, n, k, lda = 0, ldb = 0, ldc = 0;
    in >> prec >> lay >> m >> n >> k;
    if (!(in >> lda >> ldb >> ldc)) lda = ldb = ldc = 0;
    auto dt = DTypeFromString(prec);
    if (!dt.ok() || lay.size() != 2) {
      std::fprintf(stderr,
                   "mma_bench: --profile \"bf16 NT m n k [lda ldb ldc]\"\n");
      return 2;
    }
    shapes.push_back(Make("profile", *dt, m, n, k,
                          lay[0] == 'T' ? Layout::kT : Layout::kN,
                          lay[1] == 'T' ? Layout::kT : Layout::kN, lda, ldb,
                          ldc));
    families.resize(std::min<size_t>(families.size(), 1));
  } else {
    shapes = all_shapes();
  }
  std::vector<Row> rows;
  const double started = NowSeconds();
  int left_out = 0;
  for (const Case& c : shapes) {
    if (!selected(c)) continue;
    if (deadline_s > 0 && NowSeconds() - started > deadline_s) {
      ++left_out;
      continue;
    }
    const GemmShape g = c.dims();
    Row row;
    row.group = c.group;
    row.shape = ShapeText(c);
    row.prec = std::string(ToString(c.prec()));
    if (!c.conv()) {
      auto it = triton.find(TritonKey(c));
      if (it != triton.end()) row.triton_us = it->second;
    }
    const int es = c.ElementBytes();
    row.bytes = es * MinBytes(c.problem.ctx) / SizeOf(c.prec());
    row.flops = 2.0 * g.m * g.n * g.k;
    Buffers buf;
    Allocate(c, &buf);
    const size_t c_elems = OutputElements(c);

    // The vendor first: its best algorithm's output is the reference.
    std::string vendor_algo;
    LtResult ltr;
#ifdef BLOCKTUNE_HAVE_CUDNN
    if (c.conv())
      ltr = TimeCudnn(dnn, c, buf, timer, 21, &vendor_algo);
    else
#endif
      ltr = TimeLt(lt, c, buf, timer, 21);
    row.vendor_algo = vendor_algo;
    row.lt_us = ltr.us;
    row.lt_algos = ltr.algos_timed;
    const std::vector<double> ref =
        std::isfinite(row.lt_us) ? ToDoubles(buf.c_ref, c_elems, c.prec())
                                 : std::vector<double>();
    const double tol = Tolerance(c.prec());

    // A, B and C of this shape with workspace `w`.
    auto operands = [&buf](void* w) {
      KernelOperands ops;
      ops.a = reinterpret_cast<uint64_t>(buf.a);
      ops.b = reinterpret_cast<uint64_t>(buf.b);
      ops.c = reinterpret_cast<uint64_t>(buf.c);
      ops.workspace = reinterpret_cast<uint64_t>(w);
      return ops;
    };
    // Each family's fastest, kept for the round-robin re-time below.
    struct Final {
      size_t family;
      std::unique_ptr<LoadedKernel> kernel;
      void* ws = nullptr;
      int64_t ws_bytes = 0;
    };
    std::vector<Final> finals;
    for (const KernelFamily* f : families) {
      FamilyResult fr;
      std::vector<Params> cands;
      if (!profile_params.empty()) {
        auto p = f->Parse(profile_params);
        if (!p.ok()) {
          std::fprintf(stderr, "mma_bench: %s\n", p.status().ToString().c_str());
          return 2;
        }
        cands.push_back(*p);
      } else if (f->Implements(c.prec())) {
        cands = Candidates(*f, c, limits, sm_count, configs, 17);
      }
      if (cands.empty()) {
        auto any = f->Default(c.problem, limits);
        fr.note = !f->Implements(c.prec())
                      ? "precision not implemented"
                      : (any.ok() ? "no candidate passed the cuts"
                                  : "no config: " + any.status().message());
      }
      // Generate and load every candidate, in parallel (driver JIT).
      std::vector<Loaded> loaded(cands.size());
      std::atomic<size_t> next{0};
      auto work = [&] {
        (void)(*ctx)->MakeCurrent();
        for (size_t i = next++; i < cands.size(); i = next++) {
          loaded[i].params = cands[i];
          auto gk = f->Generate(c.problem, cands[i], arch);
          if (!gk.ok()) {
            std::fprintf(stderr, "# %s %s: %s\n", row.shape.c_str(),
                         f->Format(cands[i]).c_str(),
                         gk.status().ToString().c_str());
            continue;
          }
          std::string image = gk->ptx;
          if (compile) {
            auto compiler = PtxCompiler::Get();
            auto cubin = compiler.ok() ? (*compiler)->Compile(
                                             gk->ptx, TargetOf(*gk, arch))
                                       : StatusOr<std::string>(compiler.status());
            if (!cubin.ok()) {
              std::fprintf(stderr, "# %s %s: %s\n", row.shape.c_str(),
                           f->Format(cands[i]).c_str(),
                           cubin.status().ToString().c_str());
              continue;
            }
            image = std::move(*cubin);
          }
          auto l = LoadedKernel::Load(c.problem, std::move(*gk), image,
                                      f->Shape(c.problem, cands[i]).split_k);
          if (l.ok() && plain_reduce) (*l)->set_dependent_reduce(false);
          if (l.ok())
            loaded[i].kernel = std::move(*l);
          else
            std::fprintf(stderr, "# %s %s: %s\n", row.shape.c_str(),
                         f->Format(cands[i]).c_str(),
                         l.status().ToString().c_str());
        }
      };
      std::vector<std::thread> pool;
      for (int t = 0; t < 12; ++t) pool.emplace_back(work);
      for (auto& t : pool) t.join();
      // Our workspace: the K_G partial sums and counters (zeroed before
      // each kernel: another kernel's partial sums may lie where its
      // counters are; every launch leaves its counters zero).
      int64_t ws_bytes = 16;
      for (const Loaded& l : loaded)
        if (l.kernel)
          ws_bytes = std::max(ws_bytes, l.kernel->kernel().workspace_bytes);
      void* ws = nullptr;
      CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
      auto launch_of = [&](const LoadedKernel& k) {
        return [&] { return k.Launch(operands(ws), programs).ok(); };
      };
      // Quick pass, then the fastest 4 again, each checked against the
      // reference first: a wrong kernel is counted and never timed as a
      // result.
      std::vector<std::pair<double, size_t>> quick_times;
      for (size_t i = 0; i < loaded.size(); ++i) {
        if (!loaded[i].kernel) continue;
        CHECK_CUDA(cudaMemset(ws, 0, ws_bytes));
        const double us =
            timer.Time(launch_of(*loaded[i].kernel),
                       profile_params.empty() ? 5 : profile_reps, 1);
        if (std::isfinite(us)) quick_times.push_back({us, i});
        std::fprintf(stderr, "# quick %s %s %s [%s] %.1f us\n",
                     row.shape.c_str(), row.prec.c_str(),
                     std::string(f->name()).c_str(),
                     f->Format(cands[i]).c_str(), us);
      }
      fr.tried = static_cast<int>(quick_times.size());
      std::sort(quick_times.begin(), quick_times.end());
      size_t best = SIZE_MAX;
      int retimed = 0, wrong = 0;
      for (size_t r = 0; r < quick_times.size() && retimed < 4; ++r) {
        const size_t i = quick_times[r].second;
        CHECK_CUDA(cudaMemset(ws, 0, ws_bytes));
        CHECK_CUDA(cudaMemset(buf.c, 0xff, buf.c_bytes));  // NaN
        launch_of(*loaded[i].kernel)();
        CHECK_CUDA(cudaDeviceSynchronize());
        double err = NAN;
        if (!ref.empty())
          err = RelErr(ToDoubles(buf.c, c_elems, c.prec()), ref, c);
        if (!ref.empty() && !(err <= tol)) {
          ++wrong;
          std::fprintf(stderr, "# WRONG %s %s %s %s: rel err %g\n",
                       row.shape.c_str(), row.prec.c_str(),
                       std::string(f->name()).c_str(),
                       f->Format(cands[i]).c_str(), err);
          continue;
        }
        ++retimed;
        const double us = timer.Time(launch_of(*loaded[i].kernel), 21);
        if (!(us >= fr.us)) {
          fr.us = us;
          fr.rel_err = err;
          best = i;
        }
      }
      if (best != SIZE_MAX && sustain_s > 0) {
        // Back to back: batches of 20 launches between two events.
        cudaEvent_t b0, b1;
        CHECK_CUDA(cudaEventCreate(&b0));
        CHECK_CUDA(cudaEventCreate(&b1));
        auto go = launch_of(*loaded[best].kernel);
        std::vector<double> batch_us;
        const double t0 = NowSeconds();
        while (NowSeconds() - t0 < sustain_s) {
          CHECK_CUDA(cudaMemset(ws, 0, ws_bytes));
          cudaEventRecord(b0);
          for (int l = 0; l < 20; ++l) go();
          cudaEventRecord(b1);
          cudaEventSynchronize(b1);
          float ms = 0;
          cudaEventElapsedTime(&ms, b0, b1);
          batch_us.push_back(ms * 1e3 / 20);
        }
        std::vector<double> tail(batch_us.begin() + batch_us.size() / 2,
                                 batch_us.end());
        std::printf("sustain %s %s %s %.1f s back to back: %zu launches, "
                    "per launch: first batch %.1f us, median of the second "
                    "half %.1f us\n",
                    row.shape.c_str(), row.prec.c_str(),
                    std::string(f->name()).c_str(), sustain_s,
                    20 * batch_us.size(), batch_us.front(),
                    tail.empty() ? NAN : Quantile(tail, 0.5));
        cudaEventDestroy(b0);
        cudaEventDestroy(b1);
      }
      if (best != SIZE_MAX) {
        fr.params = f->Format(cands[best]);
        if (!ptx_dir.empty()) {
          const std::string path =
              ptx_dir + "/" +
              FileSafe(row.group + "_" + row.shape + "_" + row.prec + "_" +
                       std::string(f->name())) +
              ".ptx";
          std::ofstream(path) << loaded[best].kernel->kernel().ptx;
        }
      }
      if (wrong > 0)
        fr.note += std::to_string(wrong) + " wrong kernels rejected";
      cudaFree(ws);
      if (best != SIZE_MAX) {
        Final fin{row.fam.size(), std::move(loaded[best].kernel)};
        fin.ws_bytes = std::max<int64_t>(16, fin.kernel->kernel().workspace_bytes);
        CHECK_CUDA(cudaMalloc(&fin.ws, fin.ws_bytes));
        finals.push_back(std::move(fin));
      }
      row.fam.push_back(fr);
    }
    // The figures printed: the vendor's fastest algorithm and each family's
    // fastest timed again round-robin (Timer::TimeRoundRobin), so that they
    // run in the same power state of the card; the times of the search
    // above, taken one after another, go to stderr.
    if (ltr.best && !finals.empty()) {
      std::vector<Timer::Slot> slots = {{nullptr, ltr.best}};
      for (const Final& fin : finals) {
        const LoadedKernel* k = fin.kernel.get();
        void* w = fin.ws;
        const int64_t bytes = fin.ws_bytes;
        slots.push_back({[w, bytes] { cudaMemset(w, 0, bytes); },
                         [&operands, k, w, programs] {
                           return k->Launch(operands(w), programs).ok();
                         }});
      }
      const std::vector<double> t = timer.TimeRoundRobin(slots, 21);
      std::fprintf(stderr, "# %s %s one after another: vendor %.1f us",
                   row.shape.c_str(), row.prec.c_str(), row.lt_us);
      row.lt_us = t[0];
      for (size_t j = 0; j < finals.size(); ++j) {
        FamilyResult& fr = row.fam[finals[j].family];
        std::fprintf(stderr, ", %s %.1f us",
                     std::string(families[finals[j].family]->name()).c_str(),
                     fr.us);
        fr.us = t[j + 1];
      }
      std::fprintf(stderr, "; round-robin: vendor %.1f us\n", row.lt_us);
    }
    for (Final& fin : finals) cudaFree(fin.ws);
    for (size_t j = 0; j < row.fam.size(); ++j)
      if (std::isfinite(row.fam[j].us) && !(row.fam[j].us >= row.BestUs()))
        row.best = static_cast<int>(j);
    std::printf("%-7s %-26s %-5s %s %9.1f us (%2d algos%s%s)", row.group.c_str(),
                row.shape.c_str(), row.prec.c_str(), vendor, row.lt_us,
                row.lt_algos, row.vendor_algo.empty() ? "" : ", best ",
                row.vendor_algo.c_str());
    for (size_t i = 0; i < families.size(); ++i) {
      const FamilyResult& fr = row.fam[i];
      std::printf("  %s %9.1f us ratio %5.2f [%s] %d tried%s%s",
                  std::string(families[i]->name()).c_str(), fr.us,
                  row.lt_us / fr.us, fr.params.c_str(), fr.tried,
                  fr.note.empty() ? "" : " ", fr.note.c_str());
    }
    std::printf("  best %s %.1f TFLOP/s\n",
                row.best >= 0
                    ? std::string(families[row.best]->name()).c_str()
                    : "none",
                row.flops / row.BestUs() * 1e-6);
    std::fflush(stdout);
    rows.push_back(row);
  }
  if (left_out > 0) {
    std::printf("# --deadline %.0f s: %d selected shape(s) not measured\n",
                deadline_s, left_out);
  }
  // Summary table (markdown).
  std::printf("\n| group | %s | prec | %s us (algos) |",
              op == Op::kConv ? "N HxW C K RxS stride" : "M x N x K layout",
              vendor);
  for (const KernelFamily* f : families)
    std::printf(" %s us | ratio |", std::string(f->name()).c_str());
  std::printf(
      " best | best ratio | Triton us | ratio Triton | best TFLOP/s | best "
      "GB/s | rel err vs vendor | best params |\n|---|---|---|---|");
  for (size_t i = 0; i < families.size(); ++i) std::printf("---|---|");
  std::printf("---|---|---|---|---|---|---|---|\n");
  // Per group: log-sums of the best ratio, of each family's, and of the
  // ratio to Triton; wins per family.
  std::map<std::string, std::pair<double, int>> geo, geo_triton;
  std::map<std::string, std::vector<std::pair<double, int>>> geo_fam;
  std::map<std::string, std::vector<int>> wins;
  for (const Row& r : rows) {
    std::printf("| %s | %s | %s | %.1f (%d) |", r.group.c_str(),
                r.shape.c_str(), r.prec.c_str(), r.lt_us, r.lt_algos);
    auto& gf = geo_fam[r.group];
    auto& w = wins[r.group];
    gf.resize(families.size());
    w.resize(families.size());
    for (size_t i = 0; i < families.size(); ++i) {
      const double ratio = r.lt_us / r.fam[i].us;
      std::printf(" %.1f | %.2f |", r.fam[i].us, ratio);
      if (std::isfinite(ratio)) {
        gf[i].first += std::log(ratio);
        gf[i].second += 1;
      }
    }
    const FamilyResult* b = r.best >= 0 ? &r.fam[r.best] : nullptr;
    const double ratio = r.lt_us / r.BestUs();
    std::printf(
        " %s | %.2f | %.1f | %.2f | %.1f | %.0f | %.1e | %s%s |\n",
        b ? std::string(families[r.best]->name()).c_str() : "none", ratio,
        r.triton_us, r.triton_us / r.BestUs(), r.flops / r.BestUs() * 1e-6,
        r.bytes / r.BestUs() * 1e-3, b ? b->rel_err : NAN,
        b ? b->params.c_str() : "", b && !b->note.empty()
                                        ? (" " + b->note).c_str()
                                        : "");
    if (std::isfinite(ratio)) {
      geo[r.group].first += std::log(ratio);
      geo[r.group].second += 1;
      ++w[r.best];
    }
    const double tr = r.triton_us / r.BestUs();
    if (std::isfinite(tr)) {
      geo_triton[r.group].first += std::log(tr);
      geo_triton[r.group].second += 1;
    }
  }
  for (const auto& [group, v] : geo) {
    std::printf("# geomean ratio %s: best %.2f over %d shapes", group.c_str(),
                Geomean(v), v.second);
    for (size_t i = 0; i < families.size(); ++i)
      std::printf("; %s %.2f over %d (best on %d)",
                  std::string(families[i]->name()).c_str(),
                  Geomean(geo_fam[group][i]), geo_fam[group][i].second,
                  wins[group][i]);
    std::printf("\n");
  }
  for (const auto& [group, v] : geo_triton)
    std::printf("# geomean ratio to Triton %s: %.2f over %d shapes\n",
                group.c_str(), Geomean(v), v.second);
  cublasLtDestroy(lt);
#ifdef BLOCKTUNE_HAVE_CUDNN
  if (dnn) cudnnDestroy(dnn);
#endif
  return 0;
}

}  // namespace
}  // namespace blocktune::bench

int main(int argc, char** argv) { return blocktune::bench::Main(argc, argv); }
