#include "server/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "tuner/worker_protocol.h"

extern char** environ;

namespace blocktune {

StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Spawn(
    const std::vector<std::string>& argv, int worker, uint64_t generation,
    Sink sink) {
  // Writing to a worker that just died must be an error, not SIGPIPE
  // killing the daemon.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { signal(SIGPIPE, SIG_IGN); });
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int err =
      posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (err != 0) {
    close(in[1]);
    close(out[0]);
    return FailedPrecondition("cannot start the GPU worker " + argv[0] + ": " +
                              std::strerror(err));
  }
  std::unique_ptr<WorkerProcess> w(new WorkerProcess);
  w->pid_ = pid;
  w->to_child_ = in[1];
  w->from_child_ = out[0];
  w->worker_ = worker;
  w->generation_ = generation;
  w->reader_ = std::thread(&WorkerProcess::ReadLoop, w.get(), std::move(sink));
  return w;
}

void WorkerProcess::ReadLoop(Sink sink) {
  while (true) {
    WorkerEvent e;
    e.worker = worker_;
    e.generation = generation_;
    if (!ReadMessage(from_child_, &e.message).ok()) break;
    sink(std::move(e));
  }
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  WorkerEvent e;
  e.kind = WorkerEvent::Kind::kExit;
  e.worker = worker_;
  e.generation = generation_;
  if (r < 0) {
    e.exit = std::string("lost: ") + std::strerror(errno);
  } else if (WIFEXITED(status)) {
    e.exit_code = WEXITSTATUS(status);
    e.exit = "exited with code " + std::to_string(e.exit_code);
  } else if (WIFSIGNALED(status)) {
    e.exit = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
             strsignal(WTERMSIG(status)) + ")";
  }
  pid_ = -1;
  sink(std::move(e));
}

Status WorkerProcess::Send(const tuner::DaemonMessage& message) {
  std::lock_guard lock(write_mu_);
  if (to_child_ < 0) return Unavailable("the worker's input is closed");
  return WriteMessage(to_child_, message);
}

void WorkerProcess::Kill() {
  const pid_t pid = pid_;
  if (pid > 0) ::kill(pid, SIGKILL);
}

WorkerProcess::~WorkerProcess() {
  Kill();
  {
    std::lock_guard lock(write_mu_);
    if (to_child_ >= 0) close(to_child_);
    to_child_ = -1;
  }
  if (reader_.joinable()) reader_.join();
  if (from_child_ >= 0) close(from_child_);
}

}  // namespace blocktune
