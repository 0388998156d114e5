// Framing of the worker pipe: a 4-byte little-endian length, then the
// serialized message. Reads and writes retry on EINTR and short transfers.
#ifndef BLOCKTUNE_TUNER_WORKER_PROTOCOL_H_
#define BLOCKTUNE_TUNER_WORKER_PROTOCOL_H_

#include <google/protobuf/message_lite.h>

#include "kernels/status.h"

namespace blocktune {

inline constexpr uint32_t kMaxWorkerMessageBytes = 64 << 20;

Status WriteMessage(int fd, const google::protobuf::MessageLite& message);
// OUT_OF_RANGE "end of stream" at a clean end between messages; DATA_LOSS
// for a truncated or unparsable message.
Status ReadMessage(int fd, google::protobuf::MessageLite* message);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_WORKER_PROTOCOL_H_
