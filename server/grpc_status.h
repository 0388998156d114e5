// The one mapping from a domain Status to a gRPC status (and back, for
// clients). The codes are the same numbers by construction.
#ifndef BLOCKTUNE_SERVER_GRPC_STATUS_H_
#define BLOCKTUNE_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "kernels/status.h"

namespace blocktune {

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace blocktune

#endif  // BLOCKTUNE_SERVER_GRPC_STATUS_H_
