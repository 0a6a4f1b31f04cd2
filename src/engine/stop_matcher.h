// Finds stop strings in streamed text. Text that could still turn out to be the start of a stop
// string is held back, so a client never sees part of a stop string.
#pragma once

#include <string>
#include <vector>

namespace strata::engine {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Output {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string was found; text ends right before it
  };
  // Adds generated text (whole UTF-8 characters) and returns what may be emitted.
  Output push(const std::string& text);
  // Releases held-back text at the end of generation.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;
};

}  // namespace strata::engine
