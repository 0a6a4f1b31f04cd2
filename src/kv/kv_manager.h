// What the scheduler asks of the KV cache, in the scheduler's terms (sequences and token counts,
// never pages): how much of a prompt is already cached, room for n more tokens or "not now",
// and giving room back. The pages themselves stay behind this class and KvCache.
//
// Prefix caching: a prompt starts on the pages of the longest cached run of whole pages that
// begins it (attach_prefix), shared with whoever else holds them; as a sequence's pages fill
// (computed), they become findable for later prompts, and stay so after the sequence ends until
// the pool needs them (kv/prefix_index.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "kv/kv_cache.h"

namespace strata::kv {

class KvManager {
 public:
  KvManager(const KvShape& shape, std::span<const ArenaSpec> arenas) : cache_(shape, arenas) {}

  // The storage the model reads and writes.
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }

  // Leading tokens of `tokens` whose keys and values are cached and can be shared, for a request
  // with cache salt `salt`: whole pages, and never the last token (its logits are wanted). 0
  // without prefix caching.
  size_t computed_prefix(std::span<const int32_t> tokens, std::string_view salt = {}) const;
  // Starts seq (holding no pages) on those pages; returns the positions they hold.
  size_t attach_prefix(SeqId seq, std::span<const int32_t> tokens, std::string_view salt = {});
  // Positions [0, n_positions) of seq now hold the keys and values of `tokens` (after the forward
  // pass that wrote them): its full pages among them become findable.
  void computed(SeqId seq, std::span<const int32_t> tokens, size_t n_positions) {
    cache_.index(seq, tokens, n_positions);
  }
  // Prefix cache lookups of admitted sequences, in tokens (vLLM's prefix_cache_queries and
  // prefix_cache_hits): the prompt tokens looked up and those found.
  struct PrefixCounters {
    uint64_t queries = 0;
    uint64_t hits = 0;
  };
  void count_prefix_lookup(size_t queried, size_t hit) {
    prefix_counters_.queries += queried;
    prefix_counters_.hits += hit;
  }
  const PrefixCounters& prefix_counters() const { return prefix_counters_; }

  // Room for n_tokens more positions after seq's current length (a new sequence has length 0):
  // the sequence's page table, or nullopt for "not now" (nothing was taken: wait, or free
  // another sequence's pages and ask again).
  std::optional<std::span<const PageId>> allocate(SeqId seq, size_t n_tokens);
  // Whether a sequence of n_positions could ever fit: with every other sequence's pages freed.
  bool fits_alone(size_t n_positions) const;
  // Gives all of seq's pages back.
  void free(SeqId seq) { cache_.remove(seq); }
  // Keeps positions [0, n_positions) of seq (rolled-back guesses, a preempted tail).
  void truncate(SeqId seq, size_t n_positions) { cache_.truncate(seq, n_positions); }
  size_t length(SeqId seq) const { return cache_.length(seq); }

  size_t total_pages() const { return cache_.pool().n_pages(); }
  size_t used_pages() const { return cache_.pool().used_pages(); }

 private:
  KvCache cache_;
  PrefixCounters prefix_counters_;
};

}  // namespace strata::kv
