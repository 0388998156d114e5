// Bearer-token authentication of calls. With a token configured, every call
// must carry the metadata "authorization: Bearer <token>"; without one,
// calls are not checked (the daemon then only listens on loopback or a unix
// socket file).
//
// The token is checked twice. First by gRPC's server auth filter, on the
// call's initial metadata, before the request message is read: a caller
// without the token cannot make the daemon buffer or parse anything
// (ServerCredentialsFor). Then by each handler (TokenAuth::Check), so that
// the service is safe whatever credentials it is served with.
#ifndef BLOCKTUNE_SERVER_AUTH_H_
#define BLOCKTUNE_SERVER_AUTH_H_

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/status.h"

namespace blocktune {

inline constexpr size_t kMinTokenLength = 16;

class TokenAuth {
 public:
  TokenAuth() = default;  // checks nothing
  // The token is the file's first line, trimmed; it must have at least
  // kMinTokenLength characters.
  static StatusOr<TokenAuth> FromFile(const std::string& path);
  static StatusOr<TokenAuth> FromToken(std::string token);

  bool enabled() const { return !token_.empty(); }
  // OK, or UNAUTHENTICATED saying what was wrong with the call's metadata.
  Status Check(const grpc::ServerContext& context) const;
  // The same for the value of the authorization metadata; nullopt when the
  // call has none.
  Status CheckValue(std::optional<std::string_view> authorization) const;

 private:
  std::string token_;
};

// PEM text of a TLS server identity.
struct TlsKeyPair {
  std::string cert_chain;
  std::string private_key;
};

// Plaintext credentials, or TLS with `tls`; when `auth` is enabled, calls
// without its token are refused (UNAUTHENTICATED) on their initial
// metadata, before a request message is read. The C++ API cannot do that
// for plaintext (grpc::InsecureServerCredentials aborts on
// SetAuthMetadataProcessor in gRPC 1.51), so these are gRPC core
// credentials, to which core attaches a metadata processor on any
// transport: TCP, unix sockets, TLS.
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(
    const TokenAuth& auth, const std::optional<TlsKeyPair>& tls);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_AUTH_H_
