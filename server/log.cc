#include "server/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "kernels/validate.h"

namespace blocktune {
namespace {

constexpr EnumNames<LogLevel, 4> kLevelNames{{{LogLevel::kDebug, "debug"},
                                              {LogLevel::kInfo, "info"},
                                              {LogLevel::kWarning, "warning"},
                                              {LogLevel::kError, "error"}}};
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_write_mu;

}  // namespace

std::string_view ToString(LogLevel level) {
  return EnumToString(kLevelNames, level);
}

StatusOr<LogLevel> LogLevelFromString(std::string_view text,
                                      std::string_view field) {
  return EnumFromString(kLevelNames, text, field);
}

void SetLogLevel(LogLevel level) { g_min_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_min_level.load();
}

void WriteLog(LogLevel level, const std::string& message) {
  std::time_t now = std::chrono::system_clock::to_time_t(
      std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
  static const char* kTags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
  std::lock_guard lock(g_write_mu);
  std::fprintf(stderr, "%s %s %s\n", stamp, kTags[static_cast<int>(level)],
               message.c_str());
  std::fflush(stderr);
}

}  // namespace blocktune
