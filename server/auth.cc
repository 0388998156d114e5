#include "server/auth.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include <cstdlib>

#include "proto/auth_token.h"
#include "server/log.h"

namespace blocktune {
namespace {

// Compares without an early exit, so timing does not leak the token.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |=
        static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

std::string_view View(const grpc_slice& slice) {
  return std::string_view(
      reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(slice)),
      GRPC_SLICE_LENGTH(slice));
}

// gRPC core's metadata processor: called by the server auth filter with a
// call's initial metadata, before the call reaches the service. It answers
// at once (done may be called from within process).
void CheckTokenMetadata(void* state, grpc_auth_context* /*context*/,
                        const grpc_metadata* metadata, size_t count,
                        grpc_process_auth_metadata_done_cb done,
                        void* user_data) {
  const auto* auth = static_cast<const TokenAuth*>(state);
  std::optional<std::string_view> authorization;
  bool health_check = false;
  for (size_t i = 0; i < count; ++i) {
    const std::string_view key = View(metadata[i].key);
    if (key == kAuthMetadataKey) authorization = View(metadata[i].value);
    // The standard health service says only SERVING or not, and probes
    // (load balancers, orchestrators) cannot send a token: it stays open,
    // its messages bounded by the message limit like any other.
    if (key == ":path" &&
        View(metadata[i].value).rfind("/grpc.health.v1.Health/", 0) == 0) {
      health_check = true;
    }
  }
  if (health_check) {
    done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
    return;
  }
  // The metadata is not consumed: handlers check it again.
  const Status checked = auth->CheckValue(authorization);
  if (checked.ok()) {
    done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
  } else {
    done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_UNAUTHENTICATED,
         checked.message().c_str());
  }
}

// grpc::ServerCredentials over a core grpc_server_credentials, which it
// owns. Server::AddListeningPort binds ports through AddPortToServer.
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit CoreServerCredentials(grpc_server_credentials* credentials)
      : credentials_(credentials) {}
  ~CoreServerCredentials() override {
    grpc_server_credentials_release(credentials_);
  }

  // The token check is installed through the core API
  // (ServerCredentialsFor); a C++ processor here would be silently unused,
  // so asking for one is a programming error.
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {
    BT_LOG(kError) << "CoreServerCredentials takes no C++ metadata processor";
    std::abort();
  }

 private:
  int AddPortToServer(const std::string& address,
                      grpc_server* server) override {
    return grpc_server_add_http2_port(server, address.c_str(), credentials_);
  }

  grpc_server_credentials* const credentials_;
};

}  // namespace

StatusOr<TokenAuth> TokenAuth::FromFile(const std::string& path) {
  BT_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(path));
  auto auth = FromToken(std::move(token));
  if (!auth.ok()) return auth.status().Annotate("--token-file " + path);
  return auth;
}

StatusOr<TokenAuth> TokenAuth::FromToken(std::string token) {
  if (token.size() < kMinTokenLength) {
    return InvalidArgument("token must have at least " +
                           std::to_string(kMinTokenLength) +
                           " characters, got " + std::to_string(token.size()));
  }
  TokenAuth auth;
  auth.token_ = std::move(token);
  return auth;
}

Status TokenAuth::Check(const grpc::ServerContext& context) const {
  if (!enabled()) return OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kAuthMetadataKey);
  if (it == metadata.end()) return CheckValue(std::nullopt);
  return CheckValue(std::string_view(it->second.data(), it->second.size()));
}

Status TokenAuth::CheckValue(
    std::optional<std::string_view> authorization) const {
  if (!enabled()) return OkStatus();
  if (!authorization) {
    return Unauthenticated(
        "this blocktuned requires a token: send metadata 'authorization: "
        "Bearer <token>' (blocktune --token-file FILE)");
  }
  if (authorization->substr(0, kBearerPrefix.size()) != kBearerPrefix ||
      !ConstantTimeEquals(authorization->substr(kBearerPrefix.size()),
                          token_)) {
    return Unauthenticated("the token sent is not this blocktuned's token");
  }
  return OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(
    const TokenAuth& auth, const std::optional<TlsKeyPair>& tls) {
  grpc_server_credentials* credentials = nullptr;
  if (tls) {
    grpc_ssl_pem_key_cert_pair pair{tls->private_key.c_str(),
                                    tls->cert_chain.c_str()};
    // Client certificates are not asked for: identity is the token.
    grpc_ssl_server_certificate_config* config =
        grpc_ssl_server_certificate_config_create(/*pem_root_certs=*/nullptr,
                                                  &pair, 1);
    // Takes the config; the credentials take the options.
    credentials = grpc_ssl_server_credentials_create_with_options(
        grpc_ssl_server_credentials_create_options_using_config(
            GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, config));
  } else {
    credentials = grpc_insecure_server_credentials_create();
  }
  if (auth.enabled()) {
    grpc_auth_metadata_processor processor;
    processor.process = CheckTokenMetadata;
    processor.destroy = [](void* state) {
      delete static_cast<TokenAuth*>(state);
    };
    processor.state = new TokenAuth(auth);
    grpc_server_credentials_set_auth_metadata_processor(credentials, processor);
  }
  return std::make_shared<CoreServerCredentials>(credentials);
}

}  // namespace blocktune
