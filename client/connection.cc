#include "client/connection.h"

#include <iostream>

#include <fstream>
#include <sstream>

#include "proto/auth_token.h"

namespace blocktune {

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
  args.SetMaxReceiveMessageSize(512 << 20);
  args.SetMaxSendMessageSize(512 << 20);
  channel_ = grpc::CreateCustomChannel(options_.server, credentials, args);
  if (!channel_->WaitForConnected(std::chrono::system_clock::now() +
                                  std::chrono::seconds(5))) {
    return Unavailable("cannot reach blocktuned at " + options_.server +
                       "; is it running? (start it with: blocktuned --listen " +
                       options_.server + ")");
  }
  stub_ = v1::Blocktune::NewStub(channel_);
  return OkStatus();
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
