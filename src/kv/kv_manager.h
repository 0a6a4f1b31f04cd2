// What the scheduler asks of the KV cache, in the scheduler's terms (sequences and token counts,
// never pages): how much of a prompt is already cached, room for n more tokens or "not now",
// and giving room back. The pages themselves stay behind this class and KvCache.
//
// Where later features plug in:
//  - prefix caching: computed_prefix() looks the prompt's page hashes up in a radix tree and
//    allocate() starts the sequence with those pages shared (KvCache::fork does the sharing,
//    and copy-on-write keeps shared pages intact);
//  - precision tiers: the pool already has one arena per precision; re-encoding older pages to a
//    lower tier moves them between arenas here, off the step's critical path.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "kv/kv_cache.h"

namespace strata::kv {

class KvManager {
 public:
  KvManager(const KvShape& shape, std::span<const ArenaSpec> arenas) : cache_(shape, arenas) {}

  // The storage the model reads and writes.
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }

  // Leading tokens of `tokens` whose keys and values are already cached and can be shared.
  // 0 until prefix caching exists.
  size_t computed_prefix(std::span<const int32_t> tokens) const;

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
};

}  // namespace strata::kv
