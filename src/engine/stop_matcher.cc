#include "engine/stop_matcher.h"

#include <algorithm>

namespace strata::engine {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopMatcher::Output StopMatcher::push(const std::string& text) {
  pending_ += text;
  Output out;
  // The earliest complete stop string ends generation.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    out.text = pending_.substr(0, first);
    out.stopped = true;
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix of pending_ that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n) {
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  // Never split a UTF-8 character: move the cut back to a character boundary.
  size_t cut = pending_.size() - hold;
  while (cut > 0 && cut < pending_.size() &&
         (static_cast<unsigned char>(pending_[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  out.text = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace strata::engine
