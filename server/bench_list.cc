#include "server/bench_list.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "server/worker_process.h"
#include "tuner/worker.h"

namespace blocktune {

StatusOr<BenchListResult> BenchmarkList(
    const BenchListOptions& options, const std::vector<Candidate>& list,
    const BenchListSink& on_result) {
  using Clock = std::chrono::steady_clock;
  BenchListResult out;
  out.measurements.resize(list.size());
  out.verified.assign(list.size(), false);
  std::vector<bool> done(list.size(), false);
  size_t done_count = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<WorkerEvent> events;
  uint64_t generation = 0;
  int failures_in_a_row = 0;

  while (done_count < list.size()) {
    ++generation;
    std::vector<std::string> argv = {options.worker_path, "--gpu",
                                     std::to_string(options.gpu)};
    argv.insert(argv.end(), options.worker_args.begin(),
                options.worker_args.end());
    BT_ASSIGN_OR_RETURN(
        auto worker,
        WorkerProcess::Spawn(argv, 0, generation, [&](WorkerEvent e) {
          std::lock_guard lock(mu);
          events.push_back(std::move(e));
          cv.notify_all();
        }));
    bool ready = false, exited = false, killed_for_time = false;
    std::string exit_text;
    std::optional<int64_t> running;
    Clock::time_point running_since;
    const Clock::time_point spawned = Clock::now();
    const size_t done_before = done_count;

    while (!exited) {
      std::deque<WorkerEvent> batch;
      {
        std::unique_lock lock(mu);
        cv.wait_for(lock, std::chrono::milliseconds(100),
                    [&] { return !events.empty(); });
        batch.swap(events);
      }
      for (WorkerEvent& e : batch) {
        if (e.generation != generation) continue;
        if (e.kind == WorkerEvent::Kind::kExit) {
          exited = true;
          exit_text = e.exit;
          continue;
        }
        const tuner::WorkerMessage& m = e.message;
        if (m.has_hello()) {
          if (!m.hello().error().empty()) {
            return Unavailable("GPU worker cannot run: " + m.hello().error());
          }
          out.device = FromHello(m.hello());
          ready = true;
          for (size_t i = 0; i < list.size(); ++i) {
            if (done[i]) continue;
            if (!worker->Send(WorkMessage(static_cast<int64_t>(i), list[i]))
                     .ok()) {
              break;  // its exit event follows
            }
          }
          tuner::DaemonMessage shutdown;
          shutdown.set_shutdown(true);
          (void)worker->Send(shutdown);
        } else if (m.has_started()) {
          running = m.started().seq();
          running_since = Clock::now();
        } else if (m.has_result()) {
          const tuner::WorkResult& r = m.result();
          const int64_t seq = r.seq();
          if (seq < 0 || seq >= static_cast<int64_t>(list.size()) || done[seq])
            continue;
          Measurement& meas = out.measurements[seq];
          meas = FromWorkResult(r);
          out.verified[seq] = r.verified();
          done[seq] = true;
          ++done_count;
          if (running == seq) running.reset();
          if (on_result) on_result(seq, meas, r.verified());
        }
      }
      if (exited) break;
      if (options.stop && options.stop()) {
        worker->Kill();
        return Unavailable("benchmarking stopped: blocktuned is shutting down");
      }
      const auto now = Clock::now();
      if (!ready && now - spawned > std::chrono::duration<double>(
                                        options.start_timeout_s)) {
        worker->Kill();
        return Unavailable("GPU worker did not start within " +
                           std::to_string(options.start_timeout_s) + " s");
      }
      if (running && !killed_for_time &&
          now - running_since >
              std::chrono::duration<double>(options.kernel_timeout_s)) {
        killed_for_time = true;
        worker->Kill();
      }
    }
    worker.reset();
    if (running && !done[*running]) {
      Measurement& meas = out.measurements[*running];
      meas.status = killed_for_time ? SampleStatus::kTimeout
                                    : SampleStatus::kLaunchError;
      meas.error = killed_for_time
                       ? "ran past " + std::to_string(options.kernel_timeout_s) +
                             " s; the worker was killed"
                       : "the worker " + exit_text + " while running it";
      done[*running] = true;
      ++done_count;
      if (on_result) on_result(*running, meas, false);
    }
    if (done_count < list.size()) {
      failures_in_a_row = done_count > done_before ? 0 : failures_in_a_row + 1;
      if (failures_in_a_row >= 3) {
        return Unavailable("GPU worker " + exit_text +
                           " three times without finishing a sample");
      }
      ++out.restarts;
    }
  }
  return out;
}

}  // namespace blocktune
