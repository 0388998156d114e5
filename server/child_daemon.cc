#include "server/child_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace blocktune::testing {

ChildDaemon::ChildDaemon(const std::string& binary,
                         std::vector<std::string> args,
                         const std::string& log_path)
    : log_path_(log_path) {
  // The log is emptied before the fork, not in the child: otherwise the
  // loop below may find an earlier daemon's "listening on" in the same file
  // before the child has truncated it.
  const int fd = open(log_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // Both output streams go to the log (dup2 clears O_CLOEXEC on the
    // copies), and stdin reads nothing: a daemon holding the test's stdout
    // would keep ctest waiting for its end after the test had gone.
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    // A test that dies without its destructor (a crash, an abort, a
    // timeout's SIGKILL) takes the daemon with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  if (fd >= 0) close(fd);
  const std::string marker = "listening on ";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string log = Log();
    size_t at = log.find(marker);
    if (at != std::string::npos) {
      size_t end = log.find_first_of(" \n", at + marker.size());
      address_ = log.substr(at + marker.size(), end - at - marker.size());
      listening_ = true;
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {  // exited early
      pid_ = -1;
      wait_status_ = status;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ChildDaemon::~ChildDaemon() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string ChildDaemon::Log() const {
  std::ifstream in(log_path_);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int ChildDaemon::Wait() {
  if (pid_ > 0) {
    waitpid(pid_, &wait_status_, 0);
    pid_ = -1;
  }
  return WIFEXITED(wait_status_) ? WEXITSTATUS(wait_status_)
                                 : 128 + WTERMSIG(wait_status_);
}

int ChildDaemon::Stop(int signal) {
  if (pid_ > 0) kill(pid_, signal);
  return Wait();
}

CommandResult RunCommand(const std::string& command) {
  CommandResult run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) run.out.append(buf, n);
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace blocktune::testing
