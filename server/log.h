// Leveled logging to stderr, one line per message:
//   2026-11-21T19:40:02Z INFO  listening on 127.0.0.1:50051
// Thread-safe; lines from different threads never interleave.
#ifndef BLOCKTUNE_SERVER_LOG_H_
#define BLOCKTUNE_SERVER_LOG_H_

#include <sstream>
#include <string_view>

#include "kernels/status.h"

namespace blocktune {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

std::string_view ToString(LogLevel level);
StatusOr<LogLevel> LogLevelFromString(std::string_view text,
                                      std::string_view field = "--log-level");
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void WriteLog(LogLevel level, const std::string& message);

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { WriteLog(level_, stream_.str()); }
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace blocktune

#define BT_LOG(level)                                              \
  if (!::blocktune::LogEnabled(::blocktune::LogLevel::level)) {    \
  } else                                                           \
    ::blocktune::LogLine(::blocktune::LogLevel::level)

#endif  // BLOCKTUNE_SERVER_LOG_H_
