// Sequences and their page tables over a KvPool. The model writes keys/values by (sequence,
// position) and attention reads them page by page; the scheduler sees only the KvManager
// (kv/kv_manager.h), never this class's pages.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "kv/attention_probe.h"
#include "kv/kv_pool.h"
#include "kv/kv_tiers.h"
#include "kv/page_selection.h"
#include "kv/prefix_index.h"
#include "kv/prefix_store.h"

namespace strata::kv {

using SeqId = uint64_t;

// How attention reads the cache (kv::attend). kExact: query by query, position by position,
// rounding as the reference engine does (kernels/attention.h). kFast: the queries of one
// sequence in tiles, each page read once per tile, in f32 with a vector exp
// (kernels/attention_tile.h); ~1e-6 from kExact on f32 pages. A lone query (decode) reads as
// kExact.
enum class AttentionMode { kExact, kFast };

class KvCache {
 public:
  KvCache(const KvShape& shape, size_t n_pages, KvPrecision precision);
  KvCache(const KvShape& shape, std::span<const ArenaSpec> arenas);

  const KvShape& shape() const { return pool_.shape(); }
  // Whether keys and values are stored rotated (kernels::rotate_kv_head): when any arena holds
  // a rotated format, every page does, so that one sequence's pages share one space; attention
  // rotates queries in and outputs back (kv::attend).
  bool rotated() const { return rotated_; }
  // Whether f16 and f32 pages are read as the reference engine's f16-accumulating attention
  // reads them (kernels/attention.h): exact mode, a cache of one such precision, no tiers, no
  // rotation. Otherwise every page is read by block (kernels/attention_block.h), accumulating in
  // f32 as the fast prompt tiles do (and as the reference engine's CPU flash attention does).
  bool reference_reads() const {
    return reference_reads_ && attention_mode_ == AttentionMode::kExact;
  }
  AttentionMode attention_mode() const { return attention_mode_; }
  void set_attention_mode(AttentionMode mode) { attention_mode_ = mode; }
  // Query-aware sparse attention (kv/page_selection.h). Enabling it keeps key summaries for
  // every page written from then on, so it is set before the first write.
  const SparsePolicy& sparse() const { return sparse_; }
  void set_sparse(const SparsePolicy& policy);
  // One sequence's own policy in place of sparse() (a request that asks for its own), until
  // cleared. One that selects needs the summaries sparse() keeps: set_sparse, enabled, first.
  void set_sequence_sparse(SeqId seq, const SparsePolicy& policy);
  void clear_sequence_sparse(SeqId seq) { sequence_sparse_.erase(seq); }
  // Whether any sequence's policy selects pages in `layer`: when none does, attention skips
  // every per-query look at the policies.
  bool selects_in(size_t layer) const;
  const SparsePolicy& sparse_for(SeqId seq) const {
    auto it = sequence_sparse_.find(seq);
    return it == sequence_sparse_.end() ? sparse_ : it->second;
  }
  // A diagnostic that kv::attend shows every layer's queries to (kv/attention_probe.h), or
  // nullptr; not owned, and the caller clears it before the probe goes away.
  AttentionProbe* probe() const { return probe_; }
  void set_probe(AttentionProbe* probe) { probe_ = probe; }
  KvPool& pool() { return pool_; }
  const KvPool& pool() const { return pool_; }

  // Pages that reserve(seq, n_positions) would newly take from the pool: missing pages, plus
  // shared pages it would have to copy because positions past the sequence's length fall in them.
  size_t pages_needed(SeqId seq, size_t n_positions) const;
  // Ensures pages exist for positions [0, n_positions) of seq (creating the sequence if new), the
  // ones at or past its length private (copied first where shared), and sets its length to at
  // least n_positions. All or nothing: on kOutOfRange nothing was allocated.
  Status reserve(SeqId seq, size_t n_positions);
  // Drops positions >= n_positions, returning whole pages past them to the pool.
  void truncate(SeqId seq, size_t n_positions);
  // Ends a sequence and returns all its pages.
  void remove(SeqId seq);
  // Starts sequence `to` (which must not exist) holding from's pages of positions
  // [0, n_positions): shared (reference counted), copied when either side writes to them.
  void fork(SeqId from, SeqId to, size_t n_positions);
  bool contains(SeqId seq) const { return sequences_.count(seq) != 0; }
  size_t n_sequences() const { return sequences_.size(); }

  // Positions [0, capacity) have pages; capacity is a multiple of page_size.
  size_t capacity(SeqId seq) const;
  // Positions reserved (reserve) and not truncated since.
  size_t length(SeqId seq) const;
  std::span<const PageId> page_table(SeqId seq) const;

  // Stores one position's keys and values of one layer: k and v are [n_kv_heads][head_dim].
  // The position must be reserved. A page other sequences share is copied before it is written
  // (reserve() already did so for positions past the length; this covers writes before it), and
  // a page whose format cannot take single rows (a rotated format's keys) goes back to the
  // write precision first.
  void write(SeqId seq, size_t pos, size_t layer, const float* k, const float* v);

  // The tier policy (kv/kv_tiers.h); pages are written in the pool's default precision.
  void set_tiers(const KvTiers& tiers);
  const KvTiers& tiers() const { return tiers_; }
  // Re-encodes seq's full pages whose tier has changed since they were written (a page with no
  // room in its target arena waits for the next call); returns the pages re-encoded.
  size_t age(SeqId seq);
  // Sliding-window layers (kv_page.h): gives back the window parts of seq's pages that every
  // query still to come (at its length or later) is past; returns how many. The engine calls it
  // once a step, before the step's writes; truncating below what was released since would need
  // positions whose window layers are gone (rolled-back guesses never go below the length).
  size_t release_windows(SeqId seq);

  // Positions stored over all sequences (shared pages counted once), for the figures of bytes
  // per token and compression against f16 (the pool gives the pages' bytes).
  size_t stored_positions() const;

  // Prefix caching (kv/prefix_index.h): full pages become findable by their content, under keys
  // chained from `root` (kv/page_key.h), and stay so after their sequences end until the pool
  // needs them. With a store, such pages are also saved to disk, and those saved by an earlier
  // run with the same root are loaded now.
  void enable_prefix_cache(const PageKey& root, std::unique_ptr<PrefixStore> store = nullptr);
  bool prefix_caching() const { return prefix_caching_; }
  // Positions at the start of `tokens` that cached pages hold (whole pages, at most
  // max_positions), for a request with cache salt `salt` ("" for none).
  size_t cached_prefix(std::span<const int32_t> tokens, std::string_view salt,
                       size_t max_positions) const;
  // Starts sequence `seq` (which must not exist) holding those pages, shared; returns their
  // positions. Its full pages are indexed under the same salt as they are computed (index).
  size_t attach_prefix(SeqId seq, std::span<const int32_t> tokens, std::string_view salt,
                       size_t max_positions);
  // Positions [0, n_positions) of seq now hold the keys and values of `tokens`: its full pages
  // among them become findable. Call after they are written.
  void index(SeqId seq, std::span<const int32_t> tokens, size_t n_positions);
  // Saves every indexed page the store does not have yet (at shutdown: pages of sequences still
  // running are saved only here); returns the pages written.
  size_t save_prefix_cache();
  const PrefixIndex& prefix_index() const { return prefix_; }
  // Pages loaded from the store when prefix caching was enabled.
  const PrefixStore::LoadCounts& loaded_pages() const { return loaded_; }

 private:
  struct SeqPages {
    std::vector<PageId> pages;
    size_t length = 0;
    // With prefix caching: the chain's start (the salted root) and the keys of its first full
    // pages, as far as index() has seen them.
    PageKey root;
    std::vector<PageKey> keys;
    size_t window_from = 0;  // pages before it have no window parts left
  };
  // A free page of `precision`, with a window part unless `window` is false; one still indexed
  // leaves the index (its contents are given up).
  Result<PageId> take_page(KvPrecision precision, bool window = true);
  // Whether every query still to come for s is past the window of page `index`.
  bool past_window(const SeqPages& s, size_t index) const;
  // Drops one holder of a page; an indexed page nobody holds now goes to the store.
  void drop(PageId id);
  void forget(PageId id);
  void save(PageId id);
  bool load_saved(SavedPage&& page);
  PageKey sequence_root(std::string_view salt) const;
  // The cached pages that begin `tokens` under `root`, whole pages within max_positions, and
  // their keys.
  struct CachedRun {
    std::vector<PageId> pages;
    std::vector<PageKey> keys;
  };
  CachedRun cached_run(std::span<const int32_t> tokens, const PageKey& root,
                       size_t max_positions) const;
  // Whether pages, a sequence's first ones, keep the window parts the next query would read.
  bool window_intact(std::span<const PageId> pages) const;
  // Gives seq its own copy of its page `index` if others hold it too; false when no page is free.
  bool make_private(SeqPages& s, size_t index);
  size_t shared_pages_in(const SeqPages& s, size_t from, size_t to) const;
  // Re-encodes seq's page `index` into `to` for every sequence holding it; false when `to`'s
  // arena has no free page (the page stays as it is).
  bool recode(SeqPages& s, size_t index, KvPrecision to);
  // Sets a page's key bounds afresh from the keys it holds (after truncate).
  void rebound(PageId id);

  KvPool pool_;
  KvTiers tiers_;
  bool rotated_ = false;
  bool reference_reads_ = false;
  AttentionMode attention_mode_ = AttentionMode::kExact;
  SparsePolicy sparse_;
  std::unordered_map<SeqId, SparsePolicy> sequence_sparse_;
  AttentionProbe* probe_ = nullptr;
  std::vector<float> scratch_;     // rotated rows (write) and decoded blocks (recode, rebound)
  std::vector<float> stored_key_;  // [head_dim]: one key as its page stores it (write)
  std::unordered_map<SeqId, SeqPages> sequences_;
  bool prefix_caching_ = false;
  PageKey root_;
  PrefixIndex prefix_;
  std::unique_ptr<PrefixStore> store_;
  PrefixStore::LoadCounts loaded_;
  bool save_failed_ = false;
};

}  // namespace strata::kv
