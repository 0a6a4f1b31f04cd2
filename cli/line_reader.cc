#include "cli/line_reader.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace strata::cli {

namespace {
constexpr int kHistoryLines = 1000;
}

std::string default_history_path() {
  namespace fs = std::filesystem;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) {
    return (fs::path(cache) / "strata" / "chat_history").string();
  }
  const char* home = std::getenv("HOME");
  if (!home || !*home) return "";
  return (fs::path(home) / ".cache" / "strata" / "chat_history").string();
}

LineReader::LineReader(std::string history_path)
    : history_path_(std::move(history_path)),
      interactive_(isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0) {
  if (!interactive_) return;
  using_history();
  stifle_history(kHistoryLines);
  if (!history_path_.empty()) read_history(history_path_.c_str());
}

LineReader::~LineReader() {
  if (!interactive_ || history_path_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(history_path_).parent_path(), ec);
  write_history(history_path_.c_str());
}

std::optional<std::string> LineReader::read(const std::string& prompt) {
  if (!interactive_) {
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) {
      std::cin.clear();
      std::clearerr(stdin);
      return std::nullopt;
    }
    return line;
  }
  char* raw = readline(prompt.c_str());
  if (raw == nullptr) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  // Recalled with the up arrow later; repeats and blank lines are not worth a slot.
  if (!line.empty() && (history_length == 0 || line != history_get(history_length)->line)) {
    add_history(line.c_str());
  }
  return line;
}

}  // namespace strata::cli
