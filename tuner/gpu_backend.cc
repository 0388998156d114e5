// The real GPU behind a worker: the measurement protocol of DESIGN.md,
// "Measuring a kernel".
//
//  * any family: the kernel is generated through its family
//    (kernels/family.h) and launched from its named entry parameters
//    (tuner/kernel_launch.h), with the opt-in shared memory it asks for.
//  * inputs: A and B are 1 GiB buffers of uniform [-1, 1) values made on
//    the GPU, in the storage type of the sample's precision (f32 for fp32
//    and tf32, or rounded to f16 / bf16); they are made again only when a
//    sample needs another type. Every sample reads its operands from their
//    start.
//  * check: the first time this worker runs a kernel (and for a fraction
//    of later runs) the output is poisoned with NaN, the kernel runs once,
//    and the output is compared with a float64 reference from the same
//    stored inputs at 1024 sampled points, with the precision's error
//    bound (tuner/check_ptx.h CheckBoundFor), and scanned for NaN or
//    infinity. A wrong kernel is a wrong_result, never a time.
//  * workspace counters (GeneratedKernel::counter_offset) are zeroed before
//    a sample's first launch: the workspace buffer is shared by every
//    sample, and each launch leaves its counters zero again.
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
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <random>

#include "kernels/cuda_driver.h"
#include "kernels/ptx_compiler.h"
#include "tuner/check_ptx.h"
#include "tuner/compile_cache.h"
#include "tuner/device_profile.h"
#include "tuner/kernel_launch.h"
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
    if (!GenerateKernel(s)) return;
    if (compiler_ != nullptr) {
      Compiled(s, compiled_.Get(s->kernel.ptx, TargetOf(s->kernel, arch_),
                                CompileFn()));
    } else {
      s->image = s->kernel.ptx;  // the driver JITs it at load
    }
    s->compile_s = Seconds(Clock::now() - start);
  }

  // A sample whose PTX another compile thread is compiling now goes on
  // with that thread, and this one takes the next sample.
  void PrepareThen(std::unique_ptr<PreparedSample> s,
                   const Prepared& done) override {
    if (compiler_ == nullptr) {  // the driver JITs at load: nothing to share
      Prepare(s.get());
      done(std::move(s));
      return;
    }
    const auto start = Clock::now();
    if (!GenerateKernel(s.get())) {
      done(std::move(s));
      return;
    }
    PreparedSample* sample = s.get();
    auto holder = std::make_shared<std::unique_ptr<PreparedSample>>(std::move(s));
    auto finish = [this, holder, done, start](const StatusOr<std::string>& cubin) {
      PreparedSample* p = holder->get();
      Compiled(p, cubin);
      p->compile_s = Seconds(Clock::now() - start);
      done(std::move(*holder));
    };
    // gemm.wgmma's PTX is for sm_90a, not the device's generic arch.
    std::optional<StatusOr<std::string>> now = compiled_.GetOrDefer(
        sample->kernel.ptx, TargetOf(sample->kernel, arch_), CompileFn(),
        finish);
    if (now) finish(*now);
  }

  static double Seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
  }

  // The rules for this GPU, then the PTX; false (the sample's failure
  // set) when either refuses.
  bool GenerateKernel(PreparedSample* s) {
    const auto start = Clock::now();
    // What cannot run on this GPU (shared memory, alignment, compute
    // capability ...) is refused with the rule's reason, not launched.
    if (Status fits = s->family->CanImplement(s->problem, s->params, limits_);
        !fits.ok()) {
      s->status = FailedPrecondition("cannot run on this GPU: " + fits.message());
      s->failure = "compile_error";
      return false;
    }
    auto kernel = s->family->Generate(s->problem, s->params, arch_);
    if (!kernel.ok()) {
      s->status = kernel.status();
      s->failure = "compile_error";
      return false;
    }
    s->kernel = std::move(*kernel);
    std::lock_guard lock(account_mu_);
    generate_s_ += Seconds(Clock::now() - start);
    return true;
  }

  CompileCache::Compile CompileFn() {
    return [this](const std::string& ptx, const std::string& target) {
      const auto start = Clock::now();
      PtxCompiler::Report report;
      auto cubin = compiler_->Compile(ptx, target, &report);
      std::lock_guard lock(account_mu_);
      compile_s_ += Seconds(Clock::now() - start);
      // setmaxnreg kernels: a whole program (ptxas or the driver's JIT).
      if (report.path != "nvJitLink") ++whole_program_;
      return cubin;
    };
  }

  static void Compiled(PreparedSample* s, const StatusOr<std::string>& cubin) {
    if (!cubin.ok()) {
      s->status = cubin.status();
      s->failure = "compile_error";
      return;
    }
    s->image = *cubin;
  }

  std::string TimeReport() const override {
    double generate_s, compile_s;
    int64_t whole_program;
    {
      std::lock_guard lock(account_mu_);
      generate_s = generate_s_;
      compile_s = compile_s_;
      whole_program = whole_program_;
    }
    char text[480];
    std::snprintf(text, sizeof(text),
                  "of that: load %.1f s, check %.1f s, timed runs %.1f s, "
                  "clock %.1f s; compile threads: %.1f s generating, %.1f s "
                  "compiling %lld texts (%lld samples reused one; %lld "
                  "setmaxnreg texts as a whole program)",
                  load_s_, check_s_, runs_s_, clock_s_, generate_s, compile_s,
                  static_cast<long long>(compiled_.compiles()),
                  static_cast<long long>(compiled_.hits()),
                  static_cast<long long>(whole_program));
    return text;
  }

  tuner::WorkResult Measure(const PreparedSample& s, bool* broken) override {
    tuner::WorkResult r;
    r.set_compile_s(s.compile_s);
    if (!BeginResult(s, &r)) return r;
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
    BT_ASSIGN_OR_RETURN(device_limits_, driver->Limits(ordinal_));
    BT_ASSIGN_OR_RETURN(DeviceProfile profile, ProfileFromDevice(ordinal_));
    limits_ = profile.Limits();
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
    BT_ASSIGN_OR_RETURN(fill_16_, helpers_->GetFunction("blocktune_fill_16"));
    BT_ASSIGN_OR_RETURN(set32_, helpers_->GetFunction("blocktune_set32"));
    BT_ASSIGN_OR_RETURN(check_gemm_, helpers_->GetFunction("blocktune_check_gemm"));
    BT_ASSIGN_OR_RETURN(check_conv_, helpers_->GetFunction("blocktune_check_conv"));
    BT_ASSIGN_OR_RETURN(nonfinite_,
                        helpers_->GetFunction("blocktune_count_nonfinite"));
    BT_ASSIGN_OR_RETURN(clock_, helpers_->GetFunction("blocktune_clock"));
    BT_ASSIGN_OR_RETURN(flush_read_,
                        helpers_->GetFunction("blocktune_flush_read"));

    const size_t bytes = static_cast<size_t>(options_.buffer_bytes);
    BT_ASSIGN_OR_RETURN(a_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(b_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(c_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(w_, cuda::DeviceBuffer::Allocate(bytes));
    BT_ASSIGN_OR_RETURN(flush_, cuda::DeviceBuffer::Allocate(
                                    2 * static_cast<size_t>(device_limits_.l2_bytes)));
    BT_ASSIGN_OR_RETURN(scratch_, cuda::DeviceBuffer::Allocate(64));
    BT_RETURN_IF_ERROR(FillInputs(CheckType(DType::kFp32)));
    for (int i = 0; i < options_.max_runs * 2; ++i) {
      BT_ASSIGN_OR_RETURN(auto e0, cuda::Event::Create());
      BT_ASSIGN_OR_RETURN(auto e1, cuda::Event::Create());
      starts_.push_back(std::move(e0));
      stops_.push_back(std::move(e1));
    }
    return context_->Synchronize();
  }

  // A and B as random values of the element type `type` (CheckType);
  // nothing to do when they already are.
  Status FillInputs(uint32_t type) {
    if (filled_type_ == static_cast<int>(type)) return OkStatus();
    uint32_t seed = 0x5eed0001u;
    for (const cuda::DeviceBuffer* buffer : {&a_, &b_}) {
      uint64_t ptr = buffer->address();
      if (type == 0) {
        uint32_t count = static_cast<uint32_t>(buffer->bytes() / 4);
        BT_RETURN_IF_ERROR(
            cuda::Launch(fill_, {1024}, {256}, 0, {&ptr, &count, &seed}));
      } else {
        uint32_t count = static_cast<uint32_t>(buffer->bytes() / 2);
        BT_RETURN_IF_ERROR(cuda::Launch(fill_16_, {1024}, {256}, 0,
                                        {&ptr, &count, &seed, &type}));
      }
      ++seed;
    }
    filled_type_ = static_cast<int>(type);
    return OkStatus();
  }

  StatusOr<LoadedKernel*> Load(const PreparedSample& s, bool* fresh) {
    const std::string key = std::string(s.family->name()) + " v" +
                            std::to_string(s.family->version()) + " " +
                            s.item.context() + " " +
                            s.family->Format(s.params);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.second);
      *fresh = false;
      return it->second.first.get();
    }
    const int64_t split_k = s.family->Shape(s.problem, s.params).split_k;
    BT_ASSIGN_OR_RETURN(auto kernel, LoadedKernel::Load(s.problem, s.kernel,
                                                        s.image, split_k));
    if (cache_.size() >= 64) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    LoadedKernel* out = kernel.get();
    cache_[key] = {std::move(kernel), lru_.begin()};
    *fresh = true;
    return out;
  }

  KernelOperands Operands() const {
    KernelOperands ops;
    ops.a = a_.address();
    ops.b = b_.address();
    ops.c = c_.address();
    ops.workspace = w_.address();
    return ops;
  }

  // FAILED_PRECONDITION (a launch_error) where an operand or the workspace
  // is larger than this worker's buffers.
  Status CheckFits(const Problem& problem, const GeneratedKernel& k) const {
    const int64_t e = SizeOf(DTypeOf(problem.ctx));
    const GemmShape g = ImplicitGemm(problem.ctx);
    int64_t a = 0, b = 0;
    if (const auto* gc = std::get_if<GemmContext>(&problem.ctx)) {
      const auto ld = LeadingDims(problem);
      a = (gc->layout_a == Layout::kN ? gc->m : gc->k) * ld[0];
      b = (gc->layout_b == Layout::kN ? gc->k : gc->n) * ld[1];
    } else {
      const auto& cv = std::get<ConvContext>(problem.ctx);
      a = cv.n * cv.h * cv.w * cv.c;
      b = g.n * g.k;
    }
    const int64_t c =
        g.m * (std::holds_alternative<GemmContext>(problem.ctx)
                   ? LeadingDims(problem)[2]
                   : g.n);
    const int64_t limit = options_.buffer_bytes;
    if (e * a > limit || e * b > limit || e * c > limit ||
        k.workspace_bytes > limit) {
      return FailedPrecondition(
          "the operands (A " + std::to_string(e * a) + " B, B " +
          std::to_string(e * b) + " B, C " + std::to_string(e * c) +
          " B, workspace " + std::to_string(k.workspace_bytes) +
          " B) do not fit this worker's buffers of " + std::to_string(limit) +
          " B");
    }
    return OkStatus();
  }

  // Runs the kernel once on a poisoned output and checks it.
  Status Check(const Problem& problem, const LoadedKernel& kernel,
               const KernelOperands& ops, tuner::WorkResult* r) {
    const Context& ctx = problem.ctx;
    const DType precision = DTypeOf(ctx);
    const CheckBound bound = CheckBoundFor(precision);
    const GemmShape g = ImplicitGemm(ctx);
    const auto ld = LeadingDims(problem);
    const bool gemm = std::holds_alternative<GemmContext>(ctx);
    const int64_t ldc = gemm ? ld[2] : g.n;
    const size_t outputs = static_cast<size_t>(g.m * ldc);
    const size_t bytes = outputs * static_cast<size_t>(SizeOf(precision));
    // NaN in every element type: 0xffff is a NaN in f16 and bf16.
    BT_RETURN_IF_ERROR(c_.Fill32Async(0xffffffffu, (bytes + 3) / 4));
    BT_RETURN_IF_ERROR(scratch_.Fill32Async(0));
    BT_RETURN_IF_ERROR(kernel.Launch(ops));
    uint64_t a = ops.a, b = ops.b, c = ops.c, err = scratch_.address();
    uint32_t points = static_cast<uint32_t>(options_.check_points);
    uint32_t seed = static_cast<uint32_t>(rng_());
    uint32_t type = CheckType(precision);
    double c_u = bound.c_u(), u_out = bound.u_out;
    const unsigned blocks = (32 * points + 127) / 128;  // a warp per point
    if (const auto* gc = std::get_if<GemmContext>(&ctx)) {
      uint32_t m = gc->m, n = gc->n, k = gc->k, lda = ld[0], ldb = ld[1],
               ldc32 = ld[2], ta = gc->layout_a == Layout::kT,
               tb = gc->layout_b == Layout::kT;
      BT_RETURN_IF_ERROR(cuda::Launch(
          check_gemm_, {blocks}, {128}, 0,
          {&a, &b, &c, &err, &m, &n, &k, &lda, &ldb, &ldc32, &ta, &tb, &points,
           &seed, &type, &type, &c_u, &u_out}));
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
      args.push_back(&type);
      args.push_back(&type);
      args.push_back(&c_u);
      args.push_back(&u_out);
      BT_RETURN_IF_ERROR(cuda::Launch(check_conv_, {blocks}, {128}, 0, args));
    }
    // The scan covers C's rows up to ldc: a kernel must not write NaN
    // between them either (tight leading dimensions here: ldc = N).
    uint64_t counter = scratch_.address() + 8;
    uint32_t count = static_cast<uint32_t>(outputs);
    const unsigned scan_blocks =
        static_cast<unsigned>(std::min<size_t>(1024, (outputs + 255) / 256));
    BT_RETURN_IF_ERROR(cuda::Launch(nonfinite_, {scan_blocks}, {256}, 0,
                                    {&c, &count, &counter, &type}));
    BT_RETURN_IF_ERROR(context_->Synchronize());
    uint32_t words[4] = {};
    BT_RETURN_IF_ERROR(scratch_.CopyToHost(words, sizeof(words)));
    float max_error = 0;
    std::memcpy(&max_error, &words[0], 4);
    const uint32_t nonfinite = words[2];
    r->set_verified(true);
    r->set_max_error(max_error);
    if (nonfinite > 0 || !(max_error <= 1)) {
      r->set_status("wrong_result");
      char text[320];
      std::snprintf(text, sizeof(text),
                    "%u of %zu outputs NaN or infinite; largest error %.3g "
                    "times the %s bound |C - C_ref| <= %g * %.3g * sum|a||b| "
                    "+ %.3g * |C_ref| at %u sampled points",
                    nonfinite, outputs, double(max_error),
                    std::string(ToString(precision)).c_str(), bound.c,
                    bound.u_math, bound.u_out, points);
      r->set_error(text);
    }
    return OkStatus();
  }

  // Times `runs` launches, each after an L2 flush, with its own events.
  // The flush reads twice L2's size (blocktune_flush_read): L2 is left
  // holding clean lines of another buffer, so the timed kernel reads its
  // operands from DRAM and writes back nothing of the flush's.
  Status TimeRuns(const LoadedKernel& gemm, const KernelOperands& ops, int runs,
                  std::vector<double>* times) {
    uint64_t flush = flush_.address(), words = flush_.bytes() / 16;
    const unsigned flush_blocks =
        static_cast<unsigned>(std::max(1, device_limits_.sm_count) * 8);
    for (int done = 0; done < runs;) {
      const int batch = std::min<int>(runs - done, starts_.size());
      for (int i = 0; i < batch; ++i) {
        BT_RETURN_IF_ERROR(
            cuda::Launch(flush_read_, {flush_blocks}, {512}, 0, {&flush, &words}));
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
    BT_RETURN_IF_ERROR(CheckFits(s.problem, s.kernel));
    bool fresh = false;
    auto lap = Clock::now();
    auto account = [&lap](double* into) {
      const auto now = Clock::now();
      *into += Seconds(now - lap);
      lap = now;
    };
    BT_ASSIGN_OR_RETURN(LoadedKernel * gemm, Load(s, &fresh));
    const KernelOperands ops = Operands();
    BT_RETURN_IF_ERROR(FillInputs(CheckType(DTypeOf(s.problem.ctx))));
    const GeneratedKernel& k = gemm->kernel();
    if (k.counter_offset >= 0 && k.workspace_bytes > k.counter_offset) {
      uint64_t at = w_.address() + static_cast<uint64_t>(k.counter_offset);
      uint32_t words =
          static_cast<uint32_t>((k.workspace_bytes - k.counter_offset + 3) / 4);
      uint32_t zero = 0;
      const unsigned blocks = std::min<uint32_t>(1024, (words + 255) / 256);
      BT_RETURN_IF_ERROR(
          cuda::Launch(set32_, {blocks}, {256}, 0, {&at, &words, &zero}));
    }
    const bool verify =
        fresh || std::uniform_real_distribution<>(0, 1)(rng_) <
                     options_.verify_fraction;
    account(&load_s_);
    if (verify) {
      BT_RETURN_IF_ERROR(Check(s.problem, *gemm, ops, r));
      account(&check_s_);
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
    account(&runs_s_);
    BT_ASSIGN_OR_RETURN(double mhz, SmClockMhz());
    account(&clock_s_);
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
  cuda::DeviceLimits device_limits_;
  KernelLimits limits_;  // what CanImplement checks, from the device
  std::string arch_ = "sm_90";
  const PtxCompiler* compiler_ = nullptr;
  CompileCache compiled_;  // one kernel measured in several contexts
  // Where the time went (TimeReport): the GPU thread's phases, and the
  // compile threads' generation and compilation.
  double load_s_ = 0, check_s_ = 0, runs_s_ = 0, clock_s_ = 0;
  mutable std::mutex account_mu_;
  double generate_s_ = 0, compile_s_ = 0;
  // Compiles that took PtxCompiler's whole-program path (setmaxnreg).
  int64_t whole_program_ = 0;
  std::unique_ptr<cuda::Module> helpers_;
  cuda::Function fill_, fill_16_, set32_, check_gemm_, check_conv_,
      nonfinite_, clock_, flush_read_;
  int filled_type_ = -1;  // CheckType of what A and B hold
  cuda::DeviceBuffer a_, b_, c_, w_, flush_, scratch_;
  std::vector<std::unique_ptr<cuda::Event>> starts_, stops_;
  std::map<std::string, std::pair<std::unique_ptr<LoadedKernel>,
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
