#include "sampling/token_bitmask.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>

namespace strata::sampling {

TokenBitmask::TokenBitmask(size_t vocab_size, bool allowed)
    : vocab_size_(vocab_size), words_(words_for(vocab_size), allowed ? ~0u : 0u) {
  clear_padding();
}

bool TokenBitmask::is_allowed(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_size_) return false;
  return (words_[id / 32] >> (id % 32)) & 1u;
}

void TokenBitmask::allow(int32_t id) {
  assert(id >= 0 && static_cast<size_t>(id) < vocab_size_);
  if (id < 0 || static_cast<size_t>(id) >= vocab_size_) return;
  words_[id / 32] |= 1u << (id % 32);
}

void TokenBitmask::forbid(int32_t id) {
  assert(id >= 0 && static_cast<size_t>(id) < vocab_size_);
  if (id < 0 || static_cast<size_t>(id) >= vocab_size_) return;
  words_[id / 32] &= ~(1u << (id % 32));
}

void TokenBitmask::allow_all() {
  std::fill(words_.begin(), words_.end(), ~0u);
  clear_padding();
}

void TokenBitmask::forbid_all() { std::fill(words_.begin(), words_.end(), 0u); }

size_t TokenBitmask::count_allowed() const {
  size_t count = 0;
  for (uint32_t word : words_) count += static_cast<size_t>(std::popcount(word));
  return count;
}

void TokenBitmask::clear_padding() {
  size_t used_bits = vocab_size_ % 32;
  if (used_bits != 0 && !words_.empty()) words_.back() &= (1u << used_bits) - 1u;
}

void apply_token_bitmask(std::span<float> logits, const TokenBitmask& mask) {
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  const size_t covered = std::min(logits.size(), mask.vocab_size());
  std::span<const uint32_t> words = mask.words();
  for (size_t word_index = 0; word_index * 32 < covered; ++word_index) {
    uint32_t word = words[word_index];
    const size_t base = word_index * 32;
    const size_t count = std::min<size_t>(32, covered - base);
    if (count == 32 && word == ~0u) continue;
    if (word == 0) {
      std::fill_n(logits.begin() + static_cast<std::ptrdiff_t>(base), count, kBanned);
      continue;
    }
    for (size_t bit = 0; bit < count; ++bit) {
      if (((word >> bit) & 1u) == 0) logits[base + bit] = kBanned;
    }
  }
  std::fill(logits.begin() + static_cast<std::ptrdiff_t>(covered), logits.end(), kBanned);
}

}  // namespace strata::sampling
