// A set of allowed token ids, one bit per token, for constrained decoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::sampling {

// Bit (id % 32) of word (id / 32) is 1 when token `id` is allowed: the same layout as the
// int32 bitmasks of XGrammar and llguidance, so a grammar matcher can fill words() directly.
// Bits past vocab_size() in the last word stay 0.
class TokenBitmask {
 public:
  TokenBitmask() = default;
  explicit TokenBitmask(size_t vocab_size, bool allowed = true);

  size_t vocab_size() const { return vocab_size_; }
  static size_t words_for(size_t vocab_size) { return (vocab_size + 31) / 32; }

  // Ids outside [0, vocab_size) are never allowed; allow/forbid ignore them.
  bool is_allowed(int32_t id) const;
  void allow(int32_t id);
  void forbid(int32_t id);
  void allow_all();
  void forbid_all();
  size_t count_allowed() const;

  // Raw words for bulk writers. Callers that set bits past vocab_size() must call
  // clear_padding() afterwards.
  std::span<uint32_t> words() { return words_; }
  std::span<const uint32_t> words() const { return words_; }
  void clear_padding();

 private:
  size_t vocab_size_ = 0;
  std::vector<uint32_t> words_;
};

// Sets logits[id] to -infinity for every token the mask does not allow, including ids past the
// mask's vocabulary (padding rows of the output matrix). Words that are all
// allowed are skipped and words that are all banned filled at once, so a mostly-open or
// mostly-closed mask over a 128K vocabulary costs about 4K word reads.
void apply_token_bitmask(std::span<float> logits, const TokenBitmask& mask);

}  // namespace strata::sampling
