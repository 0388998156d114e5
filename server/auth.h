// Bearer-token authentication of calls. With a token configured, every call
// must carry the metadata "authorization: Bearer <token>"; without one,
// calls are not checked (the daemon then only listens on loopback or a unix
// socket, or behind TLS).
#ifndef BLOCKTUNE_SERVER_AUTH_H_
#define BLOCKTUNE_SERVER_AUTH_H_

#include <grpcpp/server_context.h>

#include <string>

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

 private:
  std::string token_;
};

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_AUTH_H_
