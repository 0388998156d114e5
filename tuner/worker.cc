#include "tuner/worker.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/validate.h"
#include "tuner/worker_protocol.h"

namespace blocktune {

void ToHello(const DeviceFingerprint& f, tuner::WorkerHello* h) {
  h->set_name(f.name);
  h->set_cc_major(f.cc_major);
  h->set_cc_minor(f.cc_minor);
  h->set_sm_count(f.sm_count);
  h->set_memory_bytes(f.memory_bytes);
  h->set_sm_clock_mhz(f.sm_clock_mhz);
  h->set_memory_clock_mhz(f.memory_clock_mhz);
  h->set_driver_version(f.driver_version);
  h->set_cuda_version(f.cuda_version);
  h->set_ptxas_version(f.ptxas_version);
}

DeviceFingerprint FromHello(const tuner::WorkerHello& h) {
  DeviceFingerprint f;
  f.name = h.name();
  f.cc_major = h.cc_major();
  f.cc_minor = h.cc_minor();
  f.sm_count = h.sm_count();
  f.memory_bytes = h.memory_bytes();
  f.sm_clock_mhz = h.sm_clock_mhz();
  f.memory_clock_mhz = h.memory_clock_mhz();
  f.driver_version = h.driver_version();
  f.cuda_version = h.cuda_version();
  f.ptxas_version = h.ptxas_version();
  return f;
}

DeviceFingerprint FakeFingerprint() {
  DeviceFingerprint f;
  f.name = "Fake GPU";
  f.cc_major = 9;
  f.cc_minor = 0;
  f.sm_count = 132;
  f.memory_bytes = int64_t{80} << 30;
  f.sm_clock_mhz = 1980;
  f.memory_clock_mhz = 2619;
  f.driver_version = f.cuda_version = f.ptxas_version = "fake";
  return f;
}

namespace {

Status ResolveWorkItem(PreparedSample* s) {
  const tuner::WorkItem& item = s->item;
  BT_ASSIGN_OR_RETURN(Context ctx, ContextFromString(item.context()));
  s->problem = Problem(ctx);
  if (item.family().empty()) {
    // An item from before families: op's ffma family and its x_B.
    // Six values are from before ST: ST = 1.
    if (item.block_shape_size() != kBlockParameters &&
        item.block_shape_size() != kBlockParameters - 1) {
      return InvalidArgument(
          "work item: without a family, block_shape needs 6 or 7 values, got " +
          std::to_string(item.block_shape_size()));
    }
    const auto& b = item.block_shape();
    const Candidate c = FfmaCandidate(
        ctx, BlockShape{b[0], b[1], b[2], b[3], b[4], b[5],
                        b.size() > 6 ? b[6] : 1});
    s->family = c.family;
    s->params = c.params;
    return c.family->ValidateParams(c.params, "work item block_shape");
  }
  auto family = FindFamily(item.family());
  if (!family.ok()) {
    return InvalidArgument("work item: this worker has no kernel family " +
                           Quoted(item.family()) + ": " +
                           family.status().message());
  }
  s->family = *family;
  if (item.version() != 0 && item.version() != s->family->version()) {
    return FailedPrecondition(
        "work item: the daemon asked for " + item.family() + " version " +
        std::to_string(item.version()) + ", this worker generates version " +
        std::to_string(s->family->version()));
  }
  if (s->family->op() != OpOf(ctx)) {
    return InvalidArgument("work item: family " + item.family() +
                           " computes " +
                           std::string(ToString(s->family->op())) +
                           ", the context is a " +
                           std::string(ToString(OpOf(ctx))));
  }
  BT_ASSIGN_OR_RETURN(s->params, s->family->Parse(item.params()));
  return OkStatus();
}

}  // namespace

bool ParseWorkItem(PreparedSample* s) {
  s->status = ResolveWorkItem(s);
  if (s->status.ok()) return true;
  s->failure = "compile_error";
  return false;
}

tuner::DaemonMessage WorkMessage(int64_t seq, const Candidate& c) {
  tuner::DaemonMessage m;
  tuner::WorkItem* item = m.mutable_work();
  item->set_seq(seq);
  item->set_context(ToString(c.ctx));
  item->set_family(std::string(c.family->name()));
  item->set_version(c.family->version());
  item->set_params(c.family->Format(c.params));
  return m;
}

bool BeginResult(const PreparedSample& s, tuner::WorkResult* r) {
  if (s.family != nullptr) {
    r->set_family(std::string(s.family->name()));
    r->set_version(s.family->version());
  }
  if (!s.kernel.ptx.empty()) r->set_kernel_digest(KernelDigest(s.kernel));
  if (s.status.ok()) return true;
  r->set_status(s.failure);
  r->set_error(s.status.message());
  return false;
}

Measurement FromWorkResult(const tuner::WorkResult& r) {
  Measurement m;
  auto status = SampleStatusFromString(r.status(), "status");
  if (!status.ok()) {
    m.status = SampleStatus::kLaunchError;
    m.error = "the worker sent " + status.status().message();
    return m;
  }
  m.status = *status;
  m.error = r.error();
  m.median_s = r.median_s();
  m.spread = r.spread();
  m.repetitions = r.repetitions();
  m.sm_clock_mhz = r.sm_clock_mhz();
  if (Status v = Validate(m, "result"); !v.ok()) {
    m = Measurement{};
    m.status = SampleStatus::kLaunchError;
    m.error = "the worker sent an invalid result: " + v.message();
  }
  return m;
}

namespace {

// The worker's queues: items read from the daemon, samples compiled and
// waiting for the GPU.
class Pipeline {
 public:
  void Push(tuner::WorkItem item) {
    std::lock_guard lock(mu_);
    todo_.push_back(std::move(item));
    cv_.notify_all();
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  // For a compile thread: false when there is nothing more to compile.
  bool PopTodo(tuner::WorkItem* item) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !todo_.empty() || closed_; });
    if (todo_.empty()) return false;
    *item = std::move(todo_.front());
    todo_.pop_front();
    ++compiling_;
    return true;
  }
  void PushReady(std::unique_ptr<PreparedSample> s) {
    std::lock_guard lock(mu_);
    --compiling_;
    ready_.push_back(std::move(s));
    cv_.notify_all();
  }
  // For the GPU thread: null when everything sent has been measured.
  std::unique_ptr<PreparedSample> PopReady() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      return !ready_.empty() || (closed_ && todo_.empty() && compiling_ == 0);
    });
    if (ready_.empty()) return nullptr;
    auto s = std::move(ready_.front());
    ready_.pop_front();
    return s;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<tuner::WorkItem> todo_;
  std::deque<std::unique_ptr<PreparedSample>> ready_;
  int compiling_ = 0;
  bool closed_ = false;
};

}  // namespace

int RunWorker(WorkerBackend& backend, int in_fd, int out_fd,
              const WorkerOptions& options) {
  int threads = options.compile_threads;
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency()) - 1;
  }
  threads = std::max(1, std::min(threads, 32));
  tuner::WorkerMessage hello_message;
  tuner::WorkerHello* hello = hello_message.mutable_hello();
  *hello = backend.Open();
  hello->set_compile_threads(threads);
  if (!WriteMessage(out_fd, hello_message).ok()) return 1;
  if (!hello->error().empty()) return kExitNoDevice;

  // Shared with the threads: after a sticky error the compile threads are
  // left waiting on it while the process ends, so it must outlive this
  // function (destroying a condition variable with waiters blocks forever).
  auto pipeline = std::make_shared<Pipeline>();
  std::thread reader([pipeline, in_fd] {
    tuner::DaemonMessage message;
    while (ReadMessage(in_fd, &message).ok()) {
      if (message.has_work()) pipeline->Push(message.work());
      if (message.shutdown()) break;
    }
    pipeline->Close();
  });
  reader.detach();  // it may sit in read() until the process ends
  std::vector<std::thread> compilers;
  for (int i = 0; i < threads; ++i) {
    compilers.emplace_back([pipeline, &backend] {
      tuner::WorkItem item;
      while (pipeline->PopTodo(&item)) {
        auto s = std::make_unique<PreparedSample>();
        s->item = std::move(item);
        if (!ParseWorkItem(s.get())) {
          pipeline->PushReady(std::move(s));
          continue;
        }
        backend.PrepareThen(std::move(s),
                            [pipeline](std::unique_ptr<PreparedSample> ready) {
                              pipeline->PushReady(std::move(ready));
                            });
      }
    });
  }
  int code = 0;
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  const auto began = Clock::now();
  int64_t measured = 0;
  double wait_s = 0, measure_s = 0;
  auto report = [&] {
    const std::string more = backend.TimeReport();
    std::fprintf(stderr,
                 "worker %d: %lld samples in %.1f s: the GPU thread waited "
                 "%.1f s for compiled samples and measured %.1f s%s%s\n",
                 static_cast<int>(getpid()), static_cast<long long>(measured),
                 seconds(Clock::now() - began), wait_s, measure_s,
                 more.empty() ? "" : "; ", more.c_str());
  };
  for (auto waited = Clock::now();; waited = Clock::now()) {
    std::unique_ptr<PreparedSample> s = pipeline->PopReady();
    wait_s += seconds(Clock::now() - waited);
    if (!s) break;
    const auto measuring = Clock::now();
    tuner::WorkerMessage started;
    started.mutable_started()->set_seq(s->item.seq());
    if (!WriteMessage(out_fd, started).ok()) {
      code = 1;
      break;
    }
    bool broken = false;
    tuner::WorkerMessage result;
    *result.mutable_result() = backend.Measure(*s, &broken);
    result.mutable_result()->set_seq(s->item.seq());
    measure_s += seconds(Clock::now() - measuring);
    ++measured;
    if (options.report_every > 0 && measured % options.report_every == 0)
      report();  // the daemon ends a worker with SIGKILL: no last line
    if (!WriteMessage(out_fd, result).ok()) {
      code = 1;
      break;
    }
    if (broken) {
      code = kExitBroken;
      break;
    }
  }
  // After a clean end every compile thread has finished; otherwise they
  // may be blocked, and the caller ends the process with _exit(code)
  // (`backend` must live until then).
  for (auto& t : compilers) {
    if (code == 0) t.join();
    else t.detach();
  }
  return code;
}

}  // namespace blocktune
