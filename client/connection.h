// How the CLI reaches blocktuned: the channel, the token, deadlines, and the
// mapping of a call's outcome to the CLI's exit codes.
#ifndef BLOCKTUNE_CLIENT_CONNECTION_H_
#define BLOCKTUNE_CLIENT_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "blocktune/v1/blocktune.grpc.pb.h"
#include "kernels/status.h"

namespace blocktune {

// Exit codes of the blocktune CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;
inline constexpr int kExitServerError = 4;
inline constexpr int kExitCampaignFailed = 5;  // watched campaign ended not done

struct ConnectionOptions {
  std::string server = "127.0.0.1:50051";  // host:port or unix:PATH
  std::string token_file;                  // send this bearer token
  std::string tls_ca;                      // PEM roots; set: use TLS
  int timeout_s = 60;                      // per unary call
};

class Connection {
 public:
  explicit Connection(ConnectionOptions options);

  // Waits up to 5 s for the channel; UNAVAILABLE naming the server if it
  // cannot be reached (saying so when the daemon answers but the TLS
  // handshake fails), FAILED_PRECONDITION if the token file is unreadable.
  Status Connect();

  // A context with the token and the call deadline (none if `stream`).
  std::unique_ptr<grpc::ClientContext> NewContext(bool stream = false) const;
  v1::Blocktune::Stub& stub() { return *stub_; }
  const std::string& server() const { return options_.server; }

 private:
  // Why the channel did not connect, as well as the CLI can tell.
  Status Unreachable() const;

  ConnectionOptions options_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Blocktune::Stub> stub_;
};

// 0 for OK; 3 when the server could not be reached; 4 for any other error.
int ExitCodeFor(const grpc::Status& status);

// CLI helpers: print "blocktune: <why>" to stderr and return the exit code.
int UsageError(const std::string& message);        // 2
int CallFailed(const grpc::Status& status);        // ExitCodeFor
int StatusFailed(const Status& status);            // 3 unavailable, else 4

}  // namespace blocktune

#endif  // BLOCKTUNE_CLIENT_CONNECTION_H_
