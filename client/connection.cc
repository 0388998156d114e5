#include "client/connection.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "proto/auth_token.h"
#include "proto/dataset_stream.h"

namespace blocktune {
namespace {

// Whether a plain connect() to the gRPC target succeeds: host:port,
// [v6]:port, unix:PATH or unix-abstract:NAME. Other schemes (dns:///...)
// are not probed.
bool SomethingListensAt(const std::string& target) {
  int fd = -1;
  bool connected = false;
  if (target.rfind("unix:", 0) == 0 || target.rfind("unix-abstract:", 0) == 0) {
    const bool abstract = target[4] == '-';
    const std::string path = target.substr(target.find(':') + 1);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() + 1 >= sizeof(addr.sun_path)) return false;
    std::memcpy(addr.sun_path + (abstract ? 1 : 0), path.data(), path.size());
    const socklen_t len = static_cast<socklen_t>(
        offsetof(sockaddr_un, sun_path) + path.size() + (abstract ? 1 : 0));
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connected = fd >= 0 &&
                connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  } else {
    const size_t colon = target.rfind(':');
    if (colon == std::string::npos || target.find('/') != std::string::npos)
      return false;
    std::string host = target.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), target.substr(colon + 1).c_str(), &hints,
                    &found) != 0) {
      return false;
    }
    for (addrinfo* a = found; a != nullptr && !connected; a = a->ai_next) {
      if (fd >= 0) close(fd);
      fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      connected = fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    }
    freeaddrinfo(found);
  }
  if (fd >= 0) close(fd);
  return connected;
}

}  // namespace

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)) {}

Status Connection::Connect() {
  if (!options_.token_file.empty()) {
    BT_ASSIGN_OR_RETURN(token_, ReadTokenFile(options_.token_file));
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options_.tls_ca.empty()) {
    std::ifstream in(options_.tls_ca);
    if (!in) return FailedPrecondition("--tls-ca: cannot read " + options_.tls_ca);
    std::ostringstream pem;
    pem << in.rdbuf();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxResponseMessageBytes);
  args.SetMaxSendMessageSize(kMaxRequestMessageBytes);
  channel_ = grpc::CreateCustomChannel(options_.server, credentials, args);
  if (!channel_->WaitForConnected(std::chrono::system_clock::now() +
                                  std::chrono::seconds(5))) {
    return Unreachable();
  }
  stub_ = v1::Blocktune::NewStub(channel_);
  return OkStatus();
}

Status Connection::Unreachable() const {
  const std::string& server = options_.server;
  // gRPC does not say why a channel did not connect. When something accepts
  // connections at the address, the daemon is there and the handshake
  // failed: almost always TLS on one end only, or a CA that does not sign
  // the daemon's certificate.
  if (SomethingListensAt(server)) {
    if (options_.tls_ca.empty()) {
      return Unavailable(
          "something answers at " + server +
          " but the connection failed: blocktuned there probably serves TLS "
          "(--tls-cert); connect with --tls-ca CA.pem, the CA that signed "
          "its certificate");
    }
    return Unavailable(
        "something answers at " + server + " but the TLS handshake failed: "
        "check that --tls-ca " + options_.tls_ca + " holds the CA that "
        "signed the daemon's certificate, that the certificate names the "
        "host in --server, and that the daemon serves TLS (--tls-cert)");
  }
  return Unavailable("cannot reach blocktuned at " + server +
                     "; is it running? (start it with: blocktuned --listen " +
                     server + ")");
}

std::unique_ptr<grpc::ClientContext> Connection::NewContext(bool stream) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) context->AddMetadata(kAuthMetadataKey,
                                             std::string(kBearerPrefix) + token_);
  if (!stream) {
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(options_.timeout_s));
  }
  return context;
}

int ExitCodeFor(const grpc::Status& status) {
  if (status.ok()) return kExitOk;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
    return kExitUnreachable;
  return kExitServerError;
}

int UsageError(const std::string& message) {
  std::cerr << "blocktune: " << message << "\n";
  return kExitUsage;
}

int CallFailed(const grpc::Status& status) {
  std::cerr << "blocktune: "
            << ToString(static_cast<StatusCode>(status.error_code())) << ": "
            << status.error_message() << "\n";
  return ExitCodeFor(status);
}

int StatusFailed(const Status& status) {
  std::cerr << "blocktune: " << status.message() << "\n";
  return status.code() == StatusCode::kUnavailable ? kExitUnreachable
                                                   : kExitServerError;
}

}  // namespace blocktune
