// A GPU worker process (DESIGN.md, "Processes"): it owns one GPU, compiles
// the kernels the daemon sends on CPU threads while the GPU benchmarks the
// ones already compiled, and streams results back over its stdout.
//
// Before it runs a sample's kernel it says so (WorkStarted), so when a
// kernel faults or hangs and the daemon kills the worker, the daemon knows
// which sample did it. After a sticky CUDA error the worker reports the
// sample and exits with kExitBroken; the daemon restarts it.
//
// The GPU sits behind WorkerBackend, so the daemon's supervision and
// scheduling are tested with a fake one (NewFakeBackend) in CI, and the
// real one runs on the GPU host.
#ifndef BLOCKTUNE_TUNER_WORKER_H_
#define BLOCKTUNE_TUNER_WORKER_H_

#include <functional>
#include <memory>
#include <string>

#include "kernels/context.h"
#include "kernels/device.h"
#include "kernels/family.h"
#include "kernels/status.h"
#include "tuner/measurement.h"
#include "tuner/sampler.h"
#include "tuner/worker.pb.h"

namespace blocktune {

inline constexpr int kExitBroken = 3;    // sticky GPU error: restart me
inline constexpr int kExitNoDevice = 4;  // Hello carried the reason

// One sample on its way through the worker.
struct PreparedSample {
  tuner::WorkItem item;
  // What ParseWorkItem resolved: the family, the problem (the context; its
  // dtype is the precision) and the family's parameters.
  const KernelFamily* family = nullptr;
  Problem problem;
  Params params;
  Status status;        // not OK: the sample failed before the GPU
  std::string failure;  // its SampleStatus name, when status is not OK
  GeneratedKernel kernel;
  std::string image;    // cubin, or PTX for the driver to JIT
  double compile_s = 0;
};

class WorkerBackend {
 public:
  virtual ~WorkerBackend() = default;
  // Opens the device; the Hello's error says why not.
  virtual tuner::WorkerHello Open() = 0;
  // CPU work: generation and compilation. Called from several threads.
  virtual void Prepare(PreparedSample* sample) = 0;
  // The same, where the work may end later: `done` gets the sample once it
  // is prepared, on this thread or on another compile thread (the one that
  // compiles its PTX for another sample); this thread is free meanwhile.
  // By default, Prepare here.
  using Prepared = std::function<void(std::unique_ptr<PreparedSample>)>;
  virtual void PrepareThen(std::unique_ptr<PreparedSample> sample,
                           const Prepared& done) {
    Prepare(sample.get());
    done(std::move(sample));
  }
  // GPU work, on one thread. Sets *broken after a sticky error.
  virtual tuner::WorkResult Measure(const PreparedSample& sample,
                                    bool* broken) = 0;
  // Where the backend's time went so far, for the worker's periodic line
  // on stderr (the daemon's log); "" when it keeps no account.
  virtual std::string TimeReport() const { return ""; }
};

struct WorkerOptions {
  int compile_threads = 0;  // 0: the cores less one, at least 1
  // Every this many samples the worker writes one line on stderr (the
  // daemon's log): samples, wall time, how long the GPU thread waited for
  // a compiled sample and how long it measured, and the backend's account.
  int report_every = 1000;
};

// Serves `in_fd` / `out_fd` until the daemon closes the pipe or says
// shutdown. Returns the process exit code; unless it is 0, threads may
// still use `backend`, and the caller must end the process (_exit) without
// destroying it.
int RunWorker(WorkerBackend& backend, int in_fd, int out_fd,
              const WorkerOptions& options);

// The device fields of a Hello, both ways.
void ToHello(const DeviceFingerprint& fingerprint, tuner::WorkerHello* hello);
DeviceFingerprint FromHello(const tuner::WorkerHello& hello);

// The GPU every fake worker reports: an H100-like sm_90 with 132 SMs.
DeviceFingerprint FakeFingerprint();

// Resolves item.context, item.family (with its version) and item.params
// into sample->problem, ->family and ->params; an item without a family is
// its op's ffma family with item.block_shape. On error the failure is
// "compile_error" and the status says why (an unknown family names the
// ones this worker has; another generator version names both).
bool ParseWorkItem(PreparedSample* sample);
// The daemon's side: a work item for candidate `c` numbered `seq`, with
// its family's current generator version.
tuner::DaemonMessage WorkMessage(int64_t seq, const Candidate& c);
// Begins the result of measuring `sample`, as every backend does: what
// was measured (the family, its generator version and, where a kernel was
// generated, its KernelDigest) and, for a sample that failed before the
// GPU, its failure and why. Returns false for such a sample: *result is
// then complete.
bool BeginResult(const PreparedSample& sample, tuner::WorkResult* result);
// A worker's result as a Measurement. A status the daemon does not know, or
// numbers that do not validate, become launch_error saying so.
Measurement FromWorkResult(const tuner::WorkResult& r);

// A fake GPU for tests of scheduling and failure handling. It resolves
// work items as the real one does (an unknown family is a compile_error)
// and echoes the family and version. `spec` is comma-separated key=value:
//   measure_us=N  compile_us=N   time each sample takes (default 200, 100)
//   crash_every=N       seq % N == N-1 aborts the worker mid-measure
//   hang_every=N        ... hangs it forever
//   sticky_every=N      ... reports launch_error and exits kExitBroken
//   wrong_every=N       ... reports wrong_result
//   compile_error_every=N
//   no_device=1         Hello says there is no GPU
// Times are a deterministic function of the sample (its FLOPs, output tile
// and precision), so runs repeat.
StatusOr<std::unique_ptr<WorkerBackend>> NewFakeBackend(const std::string& spec);

// The real GPU `ordinal`, through the dlopen'ed driver and nvJitLink. It
// measures any family's kernel in the precision of its context: inputs of
// that storage type, checked against a float64 reference with the bound of
// tuner/check_ptx.h (CheckBoundFor).
struct GpuBackendOptions {
  double verify_fraction = 0.1;  // of samples of an already verified kernel
  int check_points = 1024;
  int64_t buffer_bytes = int64_t{1} << 30;  // per operand
  double min_time_s = 5e-4;   // timed runs add up to at least this
  int min_runs = 5;
  int max_runs = 50;
  double max_spread = 0.10;   // (p90 - p10) / median; above: measure again
};
std::unique_ptr<WorkerBackend> NewGpuBackend(int ordinal,
                                             const GpuBackendOptions& options);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_WORKER_H_
