#include "kv/kv_manager.h"

namespace strata::kv {

size_t KvManager::computed_prefix(std::span<const int32_t> tokens, std::string_view salt) const {
  return tokens.empty() ? 0 : cache_.cached_prefix(tokens, salt, tokens.size() - 1);
}

size_t KvManager::attach_prefix(SeqId seq, std::span<const int32_t> tokens, std::string_view salt) {
  return tokens.empty() ? 0 : cache_.attach_prefix(seq, tokens, salt, tokens.size() - 1);
}

std::optional<std::span<const PageId>> KvManager::allocate(SeqId seq, size_t n_tokens) {
  // Window parts every query still to come is past go back first, then pages that aged out of
  // the hot tier since the last step leave it (without re-encoding the released parts).
  cache_.release_windows(seq);
  cache_.age(seq);
  if (!cache_.reserve(seq, cache_.length(seq) + n_tokens).ok()) return std::nullopt;
  return cache_.page_table(seq);
}

bool KvManager::fits_alone(size_t n_positions) const {
  const size_t page_size = cache_.shape().page_size;
  const KvPool& pool = cache_.pool();
  // With tiers, a sequence's pages spread over every arena as they age.
  const size_t pages =
      cache_.tiers().enabled() ? pool.n_pages() : pool.n_pages(pool.default_precision());
  return (n_positions + page_size - 1) / page_size <= pages;
}

}  // namespace strata::kv
