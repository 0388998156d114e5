// The bearer token both ends of the wire agree on: how it is read from a
// file and how it travels (metadata "authorization: Bearer <token>").
#ifndef BLOCKTUNE_PROTO_AUTH_TOKEN_H_
#define BLOCKTUNE_PROTO_AUTH_TOKEN_H_

#include <string>
#include <string_view>

#include "kernels/status.h"

namespace blocktune {

inline constexpr char kAuthMetadataKey[] = "authorization";
inline constexpr std::string_view kBearerPrefix = "Bearer ";

// The file's first line with surrounding whitespace removed.
StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace blocktune

#endif  // BLOCKTUNE_PROTO_AUTH_TOKEN_H_
