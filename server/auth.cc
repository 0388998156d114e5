#include "server/auth.h"

#include <fstream>

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

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return FailedPrecondition("cannot read token file " + path);
  std::string line;
  std::getline(in, line);
  const char* space = " \t\r\n";
  size_t begin = line.find_first_not_of(space);
  if (begin == std::string::npos) return std::string();
  size_t end = line.find_last_not_of(space);
  return line.substr(begin, end - begin + 1);
}

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
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return Unauthenticated(
        "this blocktuned requires a token: send metadata 'authorization: "
        "Bearer <token>' (blocktune --token-file FILE)");
  }
  std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  if (value.substr(0, kBearer.size()) != kBearer ||
      !ConstantTimeEquals(value.substr(kBearer.size()), token_)) {
    return Unauthenticated("the token sent is not this blocktuned's token");
  }
  return OkStatus();
}

}  // namespace blocktune
