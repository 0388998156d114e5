// The daemon's transport and access control, against a real blocktuned:
// message size limits and memory, the token checked before a message is
// read, one daemon per port, and which addresses need a token.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

constexpr char kToken[] = "transport-test-token-0123456789";

// Peak resident memory of a process, in MiB (VmHWM).
int64_t PeakRssMib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) >> 10;
  }
  return -1;
}

// A stub whose channel sends messages of any size, as a hostile client would.
std::unique_ptr<v1::Blocktune::Stub> UnlimitedStub(const std::string& address) {
  std::string target = address;
  if (target.rfind("0.0.0.0:", 0) == 0)
    target = "127.0.0.1:" + target.substr(8);
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  args.SetMaxReceiveMessageSize(-1);
  return v1::Blocktune::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "") {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(60));
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

// A BatchQuery whose one device name is `bytes` long.
v1::BatchQueryRequest Oversized(size_t bytes) {
  v1::BatchQueryRequest req;
  v1::QueryRequest* q = req.add_queries();
  auto* g = q->mutable_context()->mutable_gemm();
  g->set_m(64);
  g->set_n(64);
  g->set_k(64);
  q->set_device_name(std::string(bytes, 'x'));
  return req;
}

// `calls` concurrent BatchQuery calls of an oversized message; their codes.
std::vector<grpc::StatusCode> SendConcurrently(v1::Blocktune::Stub& stub,
                                               int calls, size_t bytes,
                                               const std::string& token) {
  const v1::BatchQueryRequest req = Oversized(bytes);
  std::vector<std::future<grpc::StatusCode>> pending;
  for (int i = 0; i < calls; ++i) {
    pending.push_back(std::async(std::launch::async, [&] {
      v1::BatchQueryResponse resp;
      return stub.BatchQuery(Ctx(token).get(), req, &resp).error_code();
    }));
  }
  std::vector<grpc::StatusCode> codes;
  for (auto& p : pending) codes.push_back(p.get());
  return codes;
}

class TransportTest : public ::testing::Test {
 protected:
  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> args,
                                       const std::string& name = "d") {
    args.insert(args.end(), {"--gpus", "none", "--log-level", "debug"});
    if (std::find(args.begin(), args.end(), "--db") == args.end()) {
      args.insert(args.end(), {"--db", dir_.path() + "/" + name + ".db"});
    }
    return std::make_unique<DaemonProcess>(BLOCKTUNED, args,
                                           dir_.path() + "/" + name + ".log");
  }
  std::string TokenFile() {
    const std::string path = dir_.path() + "/token";
    std::ofstream(path) << kToken << "\n";
    chmod(path.c_str(), 0600);
    return path;
  }
  bool Healthy(const DaemonProcess& d, const std::string& token = "") {
    v1::HealthResponse health;
    return UnlimitedStub(d.address())
        ->Health(Ctx(token).get(), {}, &health)
        .ok();
  }
  TempDir dir_;
};

// ---------------------------------------------------------- message size --

TEST_F(TransportTest, OversizedRequestIsResourceExhaustedNamingTheLimit) {
  auto d = Start({"--listen", "unix:" + dir_.path() + "/s.sock"});
  ASSERT_TRUE(d->ok()) << d->Log();
  v1::BatchQueryResponse resp;
  grpc::Status s = UnlimitedStub(d->address())
                       ->BatchQuery(Ctx().get(), Oversized(5 << 20), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_THAT(s.error_message(),
              HasSubstr(std::to_string(kMaxRequestMessageBytes)));
  EXPECT_TRUE(Healthy(*d));
}

// The token is checked on a call's metadata, before its message is read: a
// caller without it cannot make the daemon hold its messages (in the issue,
// 8 such calls of 500 MB took the daemon to 7.9 GB).
TEST_F(TransportTest, CallsWithoutTheTokenAreRefusedBeforeTheirMessageIsRead) {
  auto d = Start({"--listen", "127.0.0.1:0", "--token-file", TokenFile()});
  ASSERT_TRUE(d->ok()) << d->Log();
  ASSERT_TRUE(Healthy(*d, kToken));
  const int64_t before = PeakRssMib(d->pid());
  auto stub = UnlimitedStub(d->address());
  for (grpc::StatusCode code : SendConcurrently(*stub, 4, 64 << 20, "")) {
    EXPECT_THAT(code, AnyOf(grpc::StatusCode::UNAUTHENTICATED,
                            grpc::StatusCode::RESOURCE_EXHAUSTED));
  }
  const int64_t grown = PeakRssMib(d->pid()) - before;
  std::cerr << "peak RSS grew by " << grown << " MiB for 4 x 64 MiB\n";
  EXPECT_LT(grown, 48) << "the daemon read messages it should have refused";
  EXPECT_TRUE(Healthy(*d, kToken));
  EXPECT_FALSE(Healthy(*d));
  EXPECT_EQ(d->Stop(SIGTERM), 0) << d->Log();
}

// Callers allowed in (here: a unix socket, no token) can still send
// oversized messages; gRPC reads a whole message before checking its size,
// so the transport's memory quota is what bounds them.
TEST_F(TransportTest, ConcurrentOversizedCallsKeepTheDaemonsMemoryBounded) {
  auto d = Start({"--listen", "unix:" + dir_.path() + "/s.sock"});
  ASSERT_TRUE(d->ok()) << d->Log();
  ASSERT_TRUE(Healthy(*d));
  const int64_t before = PeakRssMib(d->pid());
  auto stub = UnlimitedStub(d->address());
  for (grpc::StatusCode code : SendConcurrently(*stub, 4, 128 << 20, "")) {
    EXPECT_EQ(code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  const int64_t grown = PeakRssMib(d->pid()) - before;
  std::cerr << "peak RSS grew by " << grown << " MiB for 4 x 128 MiB\n";
  EXPECT_LT(grown, 320);  // 975 MiB before the quota
  EXPECT_TRUE(Healthy(*d));
}

// ------------------------------------------------------------------ port --

TEST_F(TransportTest, ASecondDaemonOnAPortInUseRefusesToStart) {
  auto first = Start({"--listen", "127.0.0.1:0"}, "a");
  ASSERT_TRUE(first->ok()) << first->Log();
  auto second = Start({"--listen", first->address()}, "b");
  ASSERT_FALSE(second->ok()) << "both daemons listen on " << first->address();
  EXPECT_EQ(second->Wait(), 1);
  EXPECT_THAT(second->Log(), HasSubstr("cannot listen on " + first->address()));
  EXPECT_THAT(second->Log(), HasSubstr("in use"));
  EXPECT_TRUE(Healthy(*first));
}

// -------------------------------------------------------- access control --

TEST_F(TransportTest, TlsWithoutATokenBeyondLoopbackIsRefused) {
  // The files are not read: the options are refused before.
  auto d = Start({"--listen", "0.0.0.0:0", "--tls-cert", dir_.path() + "/c.pem",
                  "--tls-key", dir_.path() + "/k.pem"});
  ASSERT_FALSE(d->ok());
  EXPECT_EQ(d->Wait(), 1);
  EXPECT_THAT(d->Log(), HasSubstr("it is not a loopback address"));
  EXPECT_THAT(d->Log(), HasSubstr("Give --token-file"));
  EXPECT_THAT(d->Log(), HasSubstr("TLS encrypts the connection but does not "
                                  "say who the client is"));
}

TEST_F(TransportTest, AbstractSocketsNeedAToken) {
  const std::string listen =
      "unix-abstract:blocktune-transport-test-" + std::to_string(getpid());
  auto open = Start({"--listen", listen}, "open");
  ASSERT_FALSE(open->ok()) << "listening on " << listen << " with no token";
  EXPECT_EQ(open->Wait(), 1);
  EXPECT_THAT(open->Log(), HasSubstr("abstract unix socket has no file "
                                     "permissions"));

  auto d = Start({"--listen", listen, "--token-file", TokenFile()}, "tokened");
  ASSERT_TRUE(d->ok()) << d->Log();
  EXPECT_EQ(d->address(), listen);
  v1::HealthResponse health;
  grpc::Status s = UnlimitedStub(listen)->Health(Ctx().get(), {}, &health);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Healthy(*d, kToken));
}

}  // namespace
}  // namespace blocktune
