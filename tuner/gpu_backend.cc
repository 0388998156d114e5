// The real GPU behind a worker: the measurement protocol of DESIGN.md,
// "Measuring a kernel".
//
//  * inputs: A and B are 1 GiB buffers of uniform [-1, 1) floats made on
//    the GPU once; every sample reads its operands from their start.
//  * check: the first time this worker runs a kernel (and for a fraction
//    of later runs) the output is poisoned with NaN, the kernel runs once,
//    and the output is compared with a float64 reference at 1024 sampled
//    points and scanned for NaN or infinity (tuner/check_ptx.h). A wrong
//    kernel is a wrong_result, never a time.
//  * timing: one warm-up run (the checked run, when there is one), then
//    runs timed one by one with events, each after writing a scratch
//    buffer of twice the L2's size so no run finds its operands in cache.
//    At least 5 runs and 0.5 ms of kernel time, at most 50; a kernel
//    slower than 5 ms gets 3 runs, one slower than 50 ms 2 (their
//    run-to-run spread is small, and they are most of a campaign's GPU
//    time). Median and (p90 - p10) / median; over 10 % spread measures
//    again, keeping the steadier measurement.
//  * the SM clock: a probe kernel compares %clock64 with %globaltimer over
//    20 us right after the timed runs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <list>
#include <map>
#include <random>

#include "kernels/cuda_driver.h"
#include "kernels/gemm_launch.h"
#include "kernels/ptx_compiler.h"
#include "tuner/check_ptx.h"
#include "tuner/worker.h"

namespace blocktune {
namespace {

using Clock = std::chrono::steady_clock;

// Driver errors after which the context is unusable (CUDA's "sticky"
// errors): the worker must exit for the GPU to be usable again.
bool IsSticky(const Status& s) {
  static const char* kSticky[] = {
      "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
      "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
      "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_HARDWARE_STACK_ERROR",
      "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_LAUNCH_TIMEOUT",
      "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
      "CUDA_ERROR_UNKNOWN"};
  for (const char* name : kSticky) {
    if (s.message().find(name) != std::string::npos) return true;
  }
  return false;
}

struct Timing {
  double median_s = 0, spread = 0;
  int runs = 0;
};

Timing Summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  Timing out;
  out.runs = static_cast<int>(t.size());
  auto at = [&](double q) { return t[static_cast<size_t>(q * (t.size() - 1) + 0.5)]; };
  out.median_s = t.size() % 2 ? t[t.size() / 2]
                              : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  out.spread = out.median_s > 0 ? (at(0.9) - at(0.1)) / out.median_s : 0;
  return out;
}

class GpuBackend : public WorkerBackend {
 public:
  GpuBackend(int ordinal, const GpuBackendOptions& options)
      : ordinal_(ordinal), options_(options) {}

  tuner::WorkerHello Open() override {
    tuner::WorkerHello h;
    Status s = OpenDevice(&h);
    if (!s.ok()) h.set_error(s.message());
    return h;
  }

  void Prepare(PreparedSample* s) override {
    const auto start = Clock::now();
    auto kernel = GenerateKernel(s->ctx, s->xb, arch_);
    if (!kernel.ok()) {
      s->status = kernel.status();
      s->failure = "compile_error";
      return;
    }
    s->kernel = std::move(*kernel);
    if (compiler_ != nullptr) {
      auto cubin = compiler_->Compile(s->kernel.ptx, arch_);
      if (!cubin.ok()) {
        s->status = cubin.status();
        s->failure = "compile_error";
        return;
      }
      s->image = std::move(*cubin);
    } else {
      s->image = s->kernel.ptx;  // the driver JITs it at load
    }
    s->compile_s = std::chrono::duration<double>(Clock::now() - start).count();
  }

  tuner::WorkResult Measure(const PreparedSample& s, bool* broken) override {
    tuner::WorkResult r;
    r.set_compile_s(s.compile_s);
    if (!s.status.ok()) {
      r.set_status(s.failure);
      r.set_error(s.status.message());
      return r;
    }
    Status st = MeasureOnGpu(s, &r);
    if (!st.ok()) {
      r.set_status(r.status().empty() ? "launch_error" : r.status());
      r.set_error(st.message());
      if (IsSticky(st)) *broken = true;
    }
    return r;
  }

 private:
  Status OpenDevice(tuner::WorkerHello* h) {
    BT_ASSIGN_OR_RETURN(cuda::Driver * driver, cuda::Driver::Get());
    BT_ASSIGN_OR_RETURN(context_, cuda::Context::Open(ordinal_));
    BT_RETURN_IF_ERROR(context_->MakeCurrent());
    BT_ASSIGN_OR_RETURN(DeviceFingerprint fp, driver->Fingerprint(ordinal_));
    BT_ASSIGN_OR_RETURN(limits_, driver->Limits(ordinal_));
    arch_ = fp.Arch();
    auto compiler = PtxCompiler::Get();
    if (compiler.ok()) {
      compiler_ = *compiler;
      fp.ptxas_version = compiler_->version();
    } else {
      fp.ptxas_version = "driver JIT " + fp.driver_version;
    }
    ToHello(fp, h);

    std::string image = CheckPtx();
    if (compiler_ != nullptr) {
      BT_ASSIGN_OR_RETURN(image, compiler_->Compile(CheckPtx(), arch_));
    }
    BT_ASSIGN_OR_RETURN(helpers_, cuda::Module::Load(image));
    BT_ASSIGN_OR_RETURN(fill_, helpers_->GetFunction("blocktune_fill"));
    BT_ASSIGN_OR_RETURN(check_gemm_, helpers_->GetFunction("blocktune_check_gemm"));
    BT_ASSIGN_OR_RETURN(check_conv_, helpers_->GetFunction("blocktune_check_conv"));
    BT_ASSIGN_OR_RETURN(nonfinite_,
                        helpers_->GetFunction("blocktune_count_nonfinite"));
    BT_ASSIGN_OR_RETURN(clock_, helpers_->GetFunction("blocktune_clock"));

    const size_t bytes = static_cast<size_t>(options_.buffer_bytes);
    BT_ASSIGN_OR_RETURN(a_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(b_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(c_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(w_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(flush_, cuda::DeviceBuffer::Allocate(
                                    2 * static_cast<size_t>(limits_.l2_bytes)));
    BT_ASSIGN_OR_RETURN(scratch_, cuda::DeviceBuffer::Allocate(64));
    BT_RETURN_IF_ERROR(Fill(a_, 0x5eed0001u));
    BT_RETURN_IF_ERROR(Fill(b_, 0x5eed0002u));
    for (int i = 0; i < options_.max_runs * 2; ++i) {
      BT_ASSIGN_OR_RETURN(auto e0, cuda::Event::Create());
      BT_ASSIGN_OR_RETURN(auto e1, cuda::Event::Create());
      starts_.push_back(std::move(e0));
      stops_.push_back(std::move(e1));
    }
    return context_->Synchronize();
  }

  Status Fill(const cuda::DeviceBuffer& buffer, uint32_t seed) {
    uint64_t ptr = buffer.address();
    uint32_t count = static_cast<uint32_t>(buffer.bytes() / 4);
    return cuda::Launch(fill_, {1024}, {256}, 0, {&ptr, &count, &seed});
  }

  StatusOr<LoadedGemm*> Load(const PreparedSample& s, bool* fresh) {
    const std::string key = s.item.context() + " " + ToString(s.xb);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.second);
      *fresh = false;
      return it->second.first.get();
    }
    BT_ASSIGN_OR_RETURN(auto gemm, LoadedGemm::Load(s.ctx, s.kernel, s.image));
    if (cache_.size() >= 64) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    LoadedGemm* out = gemm.get();
    cache_[key] = {std::move(gemm), lru_.begin()};
    *fresh = true;
    return out;
  }

  GemmOperands Operands(const Context& ctx) const {
    GemmOperands ops;
    ops.a = a_.address();
    ops.b = b_.address();
    ops.c = c_.address();
    ops.workspace = w_.address();
    if (const auto* g = std::get_if<GemmContext>(&ctx)) {
      ops.lda = g->layout_a == Layout::kT ? g->m : g->k;
      ops.ldb = g->layout_b == Layout::kT ? g->k : g->n;
      ops.ldc = g->n;
    }
    return ops;
  }

  // Runs the kernel once on a poisoned output and checks it.
  Status Check(const Context& ctx, const LoadedGemm& gemm,
               const GemmOperands& ops, tuner::WorkResult* r) {
    const GemmShape g = ImplicitGemm(ctx);
    const size_t outputs = static_cast<size_t>(g.m * g.n);
    BT_RETURN_IF_ERROR(c_.Fill32Async(0xffffffffu, outputs));  // NaN
    BT_RETURN_IF_ERROR(scratch_.Fill32Async(0));
    BT_RETURN_IF_ERROR(gemm.Launch(ops));
    uint64_t a = ops.a, b = ops.b, c = ops.c, err = scratch_.address();
    uint32_t points = static_cast<uint32_t>(options_.check_points);
    uint32_t seed = static_cast<uint32_t>(rng_());
    const unsigned blocks = (points + 127) / 128;
    if (const auto* gc = std::get_if<GemmContext>(&ctx)) {
      uint32_t m = gc->m, n = gc->n, k = gc->k, lda = ops.lda, ldb = ops.ldb,
               ldc = ops.ldc, ta = gc->layout_a == Layout::kT,
               tb = gc->layout_b == Layout::kT;
      BT_RETURN_IF_ERROR(cuda::Launch(
          check_gemm_, {blocks}, {128}, 0,
          {&a, &b, &c, &err, &m, &n, &k, &lda, &ldb, &ldc, &ta, &tb, &points,
           &seed}));
    } else {
      const auto& cv = std::get<ConvContext>(ctx);
      uint32_t v[15] = {
          uint32_t(cv.n), uint32_t(cv.h), uint32_t(cv.w), uint32_t(cv.c),
          uint32_t(cv.k), uint32_t(cv.r), uint32_t(cv.s), uint32_t(cv.P()),
          uint32_t(cv.Q()), uint32_t(cv.pad_h), uint32_t(cv.pad_w),
          uint32_t(cv.stride_h), uint32_t(cv.stride_w),
          uint32_t(cv.dilation_h), uint32_t(cv.dilation_w)};
      std::vector<void*> args = {&a, &b, &c, &err};
      for (uint32_t& x : v) args.push_back(&x);
      args.push_back(&points);
      args.push_back(&seed);
      BT_RETURN_IF_ERROR(cuda::Launch(check_conv_, {blocks}, {128}, 0, args));
    }
    uint64_t counter = scratch_.address() + 8;
    uint32_t count = static_cast<uint32_t>(outputs);
    const unsigned scan_blocks =
        static_cast<unsigned>(std::min<size_t>(1024, (outputs + 255) / 256));
    BT_RETURN_IF_ERROR(
        cuda::Launch(nonfinite_, {scan_blocks}, {256}, 0, {&c, &count, &counter}));
    BT_RETURN_IF_ERROR(context_->Synchronize());
    uint32_t words[4] = {};
    BT_RETURN_IF_ERROR(scratch_.CopyToHost(words, sizeof(words)));
    float max_error = 0;
    std::memcpy(&max_error, &words[0], 4);
    const uint32_t nonfinite = words[2];
    r->set_verified(true);
    r->set_max_error(max_error);
    if (nonfinite > 0 || !(max_error <= options_.tolerance)) {
      r->set_status("wrong_result");
      char text[256];
      std::snprintf(text, sizeof(text),
                    "%u of %zu outputs NaN or infinite; max relative error "
                    "%.3g at %u sampled points (tolerance %.1g)",
                    nonfinite, outputs, double(max_error), points,
                    options_.tolerance);
      r->set_error(text);
    }
    return OkStatus();
  }

  // Times `runs` launches, each after an L2 flush, with its own events.
  Status TimeRuns(const LoadedGemm& gemm, const GemmOperands& ops, int runs,
                  std::vector<double>* times) {
    for (int done = 0; done < runs;) {
      const int batch = std::min<int>(runs - done, starts_.size());
      for (int i = 0; i < batch; ++i) {
        BT_RETURN_IF_ERROR(flush_.Fill32Async(static_cast<uint32_t>(done + i)));
        BT_RETURN_IF_ERROR(starts_[i]->Record());
        BT_RETURN_IF_ERROR(gemm.Launch(ops));
        BT_RETURN_IF_ERROR(stops_[i]->Record());
      }
      BT_RETURN_IF_ERROR(stops_[batch - 1]->Synchronize());
      for (int i = 0; i < batch; ++i) {
        BT_ASSIGN_OR_RETURN(float ms, stops_[i]->MillisecondsSince(*starts_[i]));
        times->push_back(ms * 1e-3);
      }
      done += batch;
    }
    return OkStatus();
  }

  StatusOr<double> SmClockMhz() {
    uint64_t out = scratch_.address() + 16;
    uint32_t spin_ns = 20000;
    BT_RETURN_IF_ERROR(cuda::Launch(clock_, {1}, {1}, 0, {&out, &spin_ns}));
    BT_RETURN_IF_ERROR(context_->Synchronize());
    uint64_t words[8] = {};  // [2]: nanoseconds, [3]: cycles
    BT_RETURN_IF_ERROR(scratch_.CopyToHost(words, sizeof(words)));
    return words[2] > 0 ? 1e3 * double(words[3]) / double(words[2]) : 0.0;
  }

  Status MeasureOnGpu(const PreparedSample& s, tuner::WorkResult* r) {
    bool fresh = false;
    BT_ASSIGN_OR_RETURN(LoadedGemm * gemm, Load(s, &fresh));
    const GemmOperands ops = Operands(s.ctx);
    const bool verify =
        fresh || std::uniform_real_distribution<>(0, 1)(rng_) <
                     options_.verify_fraction;
    if (verify) {
      BT_RETURN_IF_ERROR(Check(s.ctx, *gemm, ops, r));
      if (r->status() == "wrong_result") return OkStatus();
    }
    // The checked run warms the kernel up; without one, an untimed run
    // does. The first timed run sets how many more to time.
    std::vector<double> times;
    if (!verify) BT_RETURN_IF_ERROR(TimeRuns(*gemm, ops, 1, &times));
    times.clear();
    BT_RETURN_IF_ERROR(TimeRuns(*gemm, ops, 1, &times));
    const double t = times[0];
    int runs = options_.min_runs;
    if (t > 0.05) runs = 2;
    else if (t > 0.005) runs = 3;
    else
      runs = std::clamp(static_cast<int>(std::ceil(options_.min_time_s / t)),
                        options_.min_runs, options_.max_runs);
    BT_RETURN_IF_ERROR(TimeRuns(*gemm, ops, runs - 1, &times));
    Timing best = Summarize(times);
    int measurements = 1;
    if (best.spread > options_.max_spread && runs >= options_.min_runs) {
      times.clear();
      BT_RETURN_IF_ERROR(TimeRuns(*gemm, ops, runs, &times));
      Timing again = Summarize(times);
      measurements = 2;
      if (again.spread < best.spread) best = again;
    }
    BT_ASSIGN_OR_RETURN(double mhz, SmClockMhz());
    r->set_status("ok");
    r->set_median_s(best.median_s);
    r->set_spread(best.spread);
    r->set_repetitions(best.runs);
    r->set_sm_clock_mhz(mhz);
    r->set_measurements(measurements);
    return OkStatus();
  }

  const int ordinal_;
  const GpuBackendOptions options_;
  std::unique_ptr<cuda::Context> context_;
  cuda::DeviceLimits limits_;
  std::string arch_ = "sm_90";
  const PtxCompiler* compiler_ = nullptr;
  std::unique_ptr<cuda::Module> helpers_;
  cuda::Function fill_, check_gemm_, check_conv_, nonfinite_, clock_;
  cuda::DeviceBuffer a_, b_, c_, w_, flush_, scratch_;
  std::vector<std::unique_ptr<cuda::Event>> starts_, stops_;
  std::map<std::string, std::pair<std::unique_ptr<LoadedGemm>,
                                  std::list<std::string>::iterator>>
      cache_;
  std::list<std::string> lru_;
  std::mt19937_64 rng_{12345};
};

}  // namespace

std::unique_ptr<WorkerBackend> NewGpuBackend(int ordinal,
                                             const GpuBackendOptions& options) {
  return std::make_unique<GpuBackend>(ordinal, options);
}

}  // namespace blocktune
