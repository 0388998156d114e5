#include "server/auth.h"

#include "proto/auth_token.h"

namespace blocktune {
namespace {

// Compares without an early exit, so timing does not leak the token.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

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
  if (it == metadata.end()) {
    return Unauthenticated(
        "this blocktuned requires a token: send metadata 'authorization: "
        "Bearer <token>' (blocktune --token-file FILE)");
  }
  std::string_view value(it->second.data(), it->second.size());
  if (value.substr(0, kBearerPrefix.size()) != kBearerPrefix ||
      !ConstantTimeEquals(value.substr(kBearerPrefix.size()), token_)) {
    return Unauthenticated("the token sent is not this blocktuned's token");
  }
  return OkStatus();
}

}  // namespace blocktune
