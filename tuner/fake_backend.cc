// The fake GPU of tuner/worker.h: no device, deterministic times, and
// failures on chosen sequence numbers.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "tuner/worker.h"

namespace blocktune {
namespace {

class FakeBackend : public WorkerBackend {
 public:
  explicit FakeBackend(std::map<std::string, int64_t> knobs)
      : knobs_(std::move(knobs)) {}

  tuner::WorkerHello Open() override {
    tuner::WorkerHello h;
    if (Knob("no_device", 0)) {
      h.set_error("no GPU: the fake backend was told to have none");
      return h;
    }
    ToHello(FakeFingerprint(), &h);
    return h;
  }

  void Prepare(PreparedSample* s) override {
    Sleep(Knob("compile_us", 100));
    if (Every("compile_error_every", s->item.seq())) {
      s->status = Internal("fake ptxas: error");
      s->failure = "compile_error";
      return;
    }
    // The real generator's kernel, for its digest (WorkResult.kernel_digest).
    if (s->family != nullptr) {
      auto kernel =
          s->family->Generate(s->problem, s->params, FakeFingerprint().Arch());
      if (kernel.ok()) s->kernel = std::move(*kernel);
    }
  }

  tuner::WorkResult Measure(const PreparedSample& s, bool* broken) override {
    tuner::WorkResult r;
    if (!BeginResult(s, &r)) return r;
    const int64_t seq = s.item.seq();
    if (Every("crash_every", seq)) std::abort();
    if (Every("hang_every", seq)) {
      while (true) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    Sleep(Knob("measure_us", 200));
    if (Every("sticky_every", seq)) {
      r.set_status("launch_error");
      r.set_error("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
                  "encountered (fake)");
      *broken = true;
      return r;
    }
    r.set_verified(true);
    if (Every("wrong_every", seq)) {
      r.set_status("wrong_result");
      r.set_max_error(0.5);
      r.set_error("max relative error 5e-01 at 1024 sampled points (fake)");
      return r;
    }
    // A made-up roofline: 20 TFLOP/s in fp32 (FFMA), 150 in tf32 and 300
    // in bf16 and fp16 (tensor cores, mma.sync) for the best output tiles
    // (128 x 128), less for others. A Hopper-only family (wgmma, compute
    // capability 9.0 and up) peaks at twice that, on 128 x 256 tiles, as
    // warpgroup MMAs do on an H100.
    const ConfigShape shape = s.family->Shape(s.problem, s.params);
    const GemmShape g = ImplicitGemm(s.problem.ctx);
    const double flops = 2.0 * g.m * g.n * g.k;
    const bool hopper = s.family->min_compute_capability() >= 90;
    const double best_tile_log2 = hopper ? 15 : 14;
    const double quality =
        1.0 / (1.0 + std::abs(std::log2(double(shape.tile_m * shape.tile_n)) -
                              best_tile_log2) /
                         4);
    double peak = 20e12;
    switch (DTypeOf(s.problem.ctx)) {
      case DType::kTf32: peak = hopper ? 300e12 : 150e12; break;
      case DType::kBf16:
      case DType::kFp16: peak = hopper ? 600e12 : 300e12; break;
      default: break;
    }
    r.set_status("ok");
    r.set_median_s(3e-6 + flops / (peak * quality));
    r.set_spread(0.01);
    r.set_repetitions(5);
    r.set_sm_clock_mhz(FakeFingerprint().sm_clock_mhz);
    r.set_measurements(1);
    return r;
  }

 private:
  int64_t Knob(const std::string& name, int64_t fallback) const {
    auto it = knobs_.find(name);
    return it == knobs_.end() ? fallback : it->second;
  }
  bool Every(const std::string& name, int64_t seq) const {
    const int64_t n = Knob(name, 0);
    return n > 0 && seq % n == n - 1;
  }
  static void Sleep(int64_t us) {
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  std::map<std::string, int64_t> knobs_;
};

}  // namespace

StatusOr<std::unique_ptr<WorkerBackend>> NewFakeBackend(const std::string& spec) {
  static const char* kKnown[] = {"measure_us",   "compile_us",
                                 "crash_every",  "hang_every",
                                 "sticky_every", "wrong_every",
                                 "compile_error_every", "no_device"};
  std::map<std::string, int64_t> knobs;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    bool known = false;
    for (const char* k : kKnown) known |= key == k;
    char* end = nullptr;
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (!known || value.empty() || *end != '\0' || v < 0) {
      return InvalidArgument("--fake: '" + item +
                             "' is not key=N with N >= 0 and key one of "
                             "measure_us, compile_us, crash_every, hang_every, "
                             "sticky_every, wrong_every, compile_error_every, "
                             "no_device");
    }
    knobs[key] = v;
  }
  return std::unique_ptr<WorkerBackend>(new FakeBackend(std::move(knobs)));
}

}  // namespace blocktune
