// Test helper: a real blocktuned process, started from its binary with the
// given flags, its stderr captured, and stopped with a signal. Needs no
// gRPC or protobuf, so tests of the installed client library (which
// carries its own copy of the generated API) can use it.
#ifndef BLOCKTUNE_SERVER_CHILD_DAEMON_H_
#define BLOCKTUNE_SERVER_CHILD_DAEMON_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace blocktune::testing {

class ChildDaemon {
 public:
  // Starts `binary` with `args` and waits up to 20 s for "listening on" in
  // its log. ok() is false if it exited or never listened.
  ChildDaemon(const std::string& binary, std::vector<std::string> args,
              const std::string& log_path);
  ~ChildDaemon();  // SIGKILLs the process if still running
  ChildDaemon(const ChildDaemon&) = delete;
  ChildDaemon& operator=(const ChildDaemon&) = delete;

  bool ok() const { return listening_; }
  // The address from the "listening on ..." line (the bound port for :0).
  const std::string& address() const { return address_; }
  // The process id while it runs (for /proc/PID/status), else -1.
  pid_t pid() const { return pid_; }
  std::string Log() const;

  // Sends `signal` and waits; returns the exit code, or 128 + signal.
  int Stop(int signal);
  // Waits for the process to exit on its own (for start-up failures).
  int Wait();

 private:
  pid_t pid_ = -1;
  int wait_status_ = 0;  // from waitpid, once exited
  std::string log_path_;
  std::string address_;
  bool listening_ = false;
};

// A blocktuned (`Daemon`: ChildDaemon, or DaemonProcess for a stub) on
// unix:DIR/s.sock with its store in DIR/b.db and its log in DIR/log, as the
// client tests start one.
template <typename Daemon = ChildDaemon>
std::unique_ptr<Daemon> StartDaemonIn(const std::string& binary,
                                      const std::string& dir) {
  return std::make_unique<Daemon>(
      binary,
      std::vector<std::string>{"--listen", "unix:" + dir + "/s.sock", "--db",
                               dir + "/b.db"},
      dir + "/log");
}

// Runs `command` through the shell, stderr merged into stdout; code is the
// exit status, -1 if it did not exit.
struct CommandResult {
  int code = -1;
  std::string out;
};
CommandResult RunCommand(const std::string& command);

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_SERVER_CHILD_DAEMON_H_
