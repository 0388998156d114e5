#include "tuner/worker_protocol.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace blocktune {
namespace {

Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Unavailable(std::string("worker pipe: write failed: ") +
                         std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return OkStatus();
}

// Reads exactly `size` bytes; *got says how many arrived before an end.
Status ReadAll(int fd, char* data, size_t size, size_t* got) {
  *got = 0;
  while (*got < size) {
    ssize_t n = ::read(fd, data + *got, size - *got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Unavailable(std::string("worker pipe: read failed: ") +
                         std::strerror(errno));
    }
    if (n == 0) return OutOfRange("end of stream");
    *got += static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

Status WriteMessage(int fd, const google::protobuf::MessageLite& message) {
  std::string body;
  if (!message.SerializeToString(&body)) {
    return Internal("worker pipe: cannot serialize a message");
  }
  const uint32_t size = static_cast<uint32_t>(body.size());
  char frame[4] = {static_cast<char>(size), static_cast<char>(size >> 8),
                   static_cast<char>(size >> 16), static_cast<char>(size >> 24)};
  body.insert(0, frame, 4);
  return WriteAll(fd, body.data(), body.size());
}

Status ReadMessage(int fd, google::protobuf::MessageLite* message) {
  unsigned char frame[4];
  size_t got = 0;
  Status s = ReadAll(fd, reinterpret_cast<char*>(frame), 4, &got);
  if (!s.ok()) {
    if (s.code() == StatusCode::kOutOfRange && got > 0)
      return DataLoss("worker pipe: truncated length");
    return s;
  }
  const uint32_t size = frame[0] | (frame[1] << 8) | (frame[2] << 16) |
                        (uint32_t{frame[3]} << 24);
  if (size > kMaxWorkerMessageBytes) {
    return DataLoss("worker pipe: message of " + std::to_string(size) +
                    " bytes is over the limit");
  }
  std::string body(size, '\0');
  s = ReadAll(fd, body.data(), size, &got);
  if (s.code() == StatusCode::kOutOfRange)
    return DataLoss("worker pipe: truncated message");
  BT_RETURN_IF_ERROR(s);
  if (!message->ParseFromString(body))
    return DataLoss("worker pipe: unparsable message");
  return OkStatus();
}

}  // namespace blocktune
