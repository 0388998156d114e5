// One GPU worker process (tuner/worker.h) as the daemon sees it: spawned
// with pipes for stdin and stdout, read by a thread of its own that turns
// every message, and the process's end, into a WorkerEvent.
#ifndef BLOCKTUNE_SERVER_WORKER_PROCESS_H_
#define BLOCKTUNE_SERVER_WORKER_PROCESS_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/status.h"
#include "tuner/worker.pb.h"

namespace blocktune {

struct WorkerEvent {
  enum class Kind { kMessage, kExit };
  Kind kind = Kind::kMessage;
  int worker = 0;       // the slot the process was spawned for
  uint64_t generation = 0;  // which spawn of that slot
  tuner::WorkerMessage message;
  std::string exit;     // kExit: "exited with code 3", "killed by signal 9"
  int exit_code = -1;   // kExit: the code, or -1 after a signal
};

class WorkerProcess {
 public:
  using Sink = std::function<void(WorkerEvent)>;
  // Starts `argv` (argv[0] a path). Every message and the exit go to
  // `sink`, from the reader thread; kExit is always the last event.
  static StatusOr<std::unique_ptr<WorkerProcess>> Spawn(
      const std::vector<std::string>& argv, int worker, uint64_t generation,
      Sink sink);
  // Kills the process (SIGKILL) and waits for the reader thread.
  ~WorkerProcess();

  Status Send(const tuner::DaemonMessage& message);
  // SIGKILL now; the kExit event follows.
  void Kill();
  pid_t pid() const { return pid_; }

 private:
  WorkerProcess() = default;
  void ReadLoop(Sink sink);
  std::atomic<pid_t> pid_{-1};
  int to_child_ = -1;
  int from_child_ = -1;
  int worker_ = 0;
  uint64_t generation_ = 0;
  std::mutex write_mu_;
  std::thread reader_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_WORKER_PROCESS_H_
