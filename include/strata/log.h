// Leveled logging to stderr, one line per message under one lock, so that threads may log. The
// level is set once by the program (a CLI flag such as serve's --log-level).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kSilent = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const std::string& message);
// A whole line as it is (no "info: " prefix), at `level`: for lines other programs parse, such
// as the server's access log in JSON.
void log_line(LogLevel level, const std::string& line);
// "debug", "info", "warn", "error" or "silent"; nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view name);

inline void log_debug(const std::string& m) { log_message(LogLevel::kDebug, m); }
inline void log_info(const std::string& m) { log_message(LogLevel::kInfo, m); }
inline void log_warn(const std::string& m) { log_message(LogLevel::kWarn, m); }
inline void log_error(const std::string& m) { log_message(LogLevel::kError, m); }

}  // namespace strata
