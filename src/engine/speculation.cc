#include "engine/speculation.h"

#include <algorithm>

namespace strata::engine {

std::vector<TokenId> propose_ngram(std::span<const TokenId> tokens, size_t ngram_min,
                                   size_t ngram_max, size_t max_draft) {
  const size_t size = tokens.size();
  for (size_t n = std::min(ngram_max, size > 0 ? size - 1 : 0); n >= std::max<size_t>(ngram_min, 1);
       --n) {
    const std::span<const TokenId> suffix = tokens.last(n);
    // The latest earlier occurrence: its continuation is the likeliest to recur.
    for (size_t start = size - n; start-- > 0;) {
      if (!std::equal(suffix.begin(), suffix.end(),
                      tokens.begin() + static_cast<ptrdiff_t>(start))) {
        continue;
      }
      // The continuation, copied forward as LZ77 copies overlap: where it runs into the end of
      // the tokens it goes on with the guesses themselves, so a repetition with a period shorter
      // than the draft still fills it.
      const size_t from = start + n;
      std::vector<TokenId> guesses;
      guesses.reserve(max_draft);
      for (size_t at = from; guesses.size() < max_draft; ++at) {
        guesses.push_back(at < size ? tokens[at] : guesses[at - size]);
      }
      return guesses;
    }
    if (n == 1) break;
  }
  return {};
}

size_t DraftLength::next() {
  if (pause_ > 0) {
    --pause_;
    return 0;
  }
  return length_;
}

void DraftLength::record(size_t drafted, size_t accepted) {
  if (drafted == 0) return;
  if (accepted == drafted) {
    length_ = std::min(max_, length_ + std::max<size_t>(1, length_ / 2));
  } else {
    length_ = std::clamp<size_t>(accepted + 1, 1, max_);
  }
  if (accepted > 0) {
    failures_ = 0;
    next_pause_ = 4;
    return;
  }
  if (++failures_ < kFailuresBeforePause) return;
  failures_ = 0;
  pause_ = next_pause_;
  next_pause_ = std::min(kMaxPause, 2 * next_pause_);
}

}  // namespace strata::engine
