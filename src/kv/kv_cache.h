// Sequences and their page tables over a KvPool. The model writes keys/values by (sequence,
// position) and attention reads them page by page; the scheduler sees only reserve() results.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "kv/kv_pool.h"

namespace strata::kv {

using SeqId = uint64_t;

class KvCache {
 public:
  KvCache(const KvShape& shape, size_t n_pages, KvPrecision precision);

  const KvShape& shape() const { return pool_.shape(); }
  KvPool& pool() { return pool_; }
  const KvPool& pool() const { return pool_; }

  // Pages that reserve(seq, n_positions) would newly take from the pool.
  size_t pages_needed(SeqId seq, size_t n_positions) const;
  // Ensures pages exist for positions [0, n_positions) of seq (creating the sequence if new).
  // All or nothing: on kOutOfRange nothing was allocated.
  Status reserve(SeqId seq, size_t n_positions);
  // Drops positions >= n_positions, returning whole pages past them to the pool.
  void truncate(SeqId seq, size_t n_positions);
  // Ends a sequence and returns all its pages.
  void remove(SeqId seq);
  bool contains(SeqId seq) const { return sequences_.count(seq) != 0; }
  size_t n_sequences() const { return sequences_.size(); }

  // Positions [0, capacity) have pages; capacity is a multiple of page_size.
  size_t capacity(SeqId seq) const;
  std::span<const PageId> page_table(SeqId seq) const;

  // Stores one position's keys and values of one layer: k and v are [n_kv_heads][head_dim].
  // The position must be reserved.
  void write(SeqId seq, size_t pos, size_t layer, const float* k, const float* v);

 private:
  KvPool pool_;
  std::unordered_map<SeqId, std::vector<PageId>> sequences_;
};

}  // namespace strata::kv
