// Lines typed at `strata chat`: on a terminal through libedit's readline (cursor keys edit the
// line, up and down recall earlier ones, history kept across sessions); from a pipe, plain lines.
#pragma once

#include <optional>
#include <string>

namespace strata::cli {

class LineReader {
 public:
  // `history_path`: where the terminal's history is read from and saved to ("": none).
  explicit LineReader(std::string history_path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its newline; nullopt at the end of input or when a signal (Ctrl-C)
  // interrupted the read (the caller tells the two apart).
  std::optional<std::string> read(const std::string& prompt);

  bool interactive() const { return interactive_; }

 private:
  std::string history_path_;
  bool interactive_;
};

// ~/.cache/strata/chat_history ($XDG_CACHE_HOME honoured), or "" without a home.
std::string default_history_path();

}  // namespace strata::cli
