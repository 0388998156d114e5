// Test helper: a real blocktuned process (child_daemon.h) with a stub to
// call it.
#ifndef BLOCKTUNE_SERVER_DAEMON_PROCESS_H_
#define BLOCKTUNE_SERVER_DAEMON_PROCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "blocktune/v1/blocktune.grpc.pb.h"
#include "server/child_daemon.h"

namespace blocktune::testing {

// A call context whose deadline is `seconds` from now.
std::unique_ptr<grpc::ClientContext> ContextWithDeadline(int seconds);

class DaemonProcess : public ChildDaemon {
 public:
  using ChildDaemon::ChildDaemon;
  std::unique_ptr<v1::Blocktune::Stub> NewStub() const;
};

// The last progress message of a watch of campaign `id` to its end (90 s
// at most); a failed watch is a test failure.
v1::CampaignProgress WatchToTheEnd(const DaemonProcess& d, int64_t id);

// Trains a small GEMM model from the daemon's samples (one hidden layer of
// 16, 2 epochs, `seconds` at most) and returns its id (0 if none came); a
// failed call is a test failure.
int64_t TrainSmallGemmModel(const DaemonProcess& d, int seconds = 90);

}  // namespace blocktune::testing

#endif  // BLOCKTUNE_SERVER_DAEMON_PROCESS_H_
