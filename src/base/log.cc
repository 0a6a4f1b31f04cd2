#include "base/log.h"

#include <atomic>
#include <mutex>
#include <utility>

namespace strata {
namespace {
// The one piece of process-wide state: how chatty stderr is. Atomic so threads may log.
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::mutex g_write_mutex;
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log_message(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  static constexpr const char* kPrefix[] = {"debug: ", "info: ", "warning: ", "error: "};
  std::lock_guard<std::mutex> lock(g_write_mutex);
  std::fprintf(stderr, "%s%s\n", kPrefix[static_cast<int>(level)], message.c_str());
}

void log_line(LogLevel level, const std::string& line) {
  if (static_cast<int>(level) < g_level.load()) return;
  std::lock_guard<std::mutex> lock(g_write_mutex);
  std::fprintf(stderr, "%s\n", line.c_str());
}

std::optional<LogLevel> parse_log_level(std::string_view name) {
  static constexpr std::pair<std::string_view, LogLevel> kNames[] = {{"debug", LogLevel::kDebug},
                                                                     {"info", LogLevel::kInfo},
                                                                     {"warn", LogLevel::kWarn},
                                                                     {"error", LogLevel::kError},
                                                                     {"silent", LogLevel::kSilent}};
  for (const auto& [text, level] : kNames) {
    if (name == text) return level;
  }
  return std::nullopt;
}

}  // namespace strata
