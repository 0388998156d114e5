// A request that does not parse as its message (random bytes, or a proto3
// `string` field that is not UTF-8) never reaches a handler: gRPC's protobuf
// deserializer (grpcpp proto_utils.h) answers INTERNAL with the message's
// InitializationErrorString(), which is empty for proto3. That reads as a
// fault of the daemon. This server interceptor sees the failed parse and
// answers INVALID_ARGUMENT naming the method and the message it expected.
#ifndef BLOCKTUNE_SERVER_PARSE_ERRORS_H_
#define BLOCKTUNE_SERVER_PARSE_ERRORS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>

namespace blocktune {

// For ServerBuilder::experimental().SetInterceptorCreators.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewParseErrorInterceptorFactory();

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_PARSE_ERRORS_H_
