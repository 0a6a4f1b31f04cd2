#include "kv/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "kernels/kv_format.h"

namespace strata::kv {

KvCache::KvCache(const KvShape& shape, size_t n_pages, KvPrecision precision)
    : KvCache(shape, std::span<const ArenaSpec>(std::vector<ArenaSpec>{{precision, n_pages}})) {}

KvCache::KvCache(const KvShape& shape, std::span<const ArenaSpec> arenas) : pool_(shape, arenas) {
  for (const ArenaSpec& a : arenas) rotated_ = rotated_ || kernels::kv_format_rotated(a.precision);
  const KvPrecision p = arenas.front().precision;
  reference_reads_ =
      arenas.size() == 1 && (p == KvPrecision::kF16 || p == KvPrecision::kF32) && !rotated_;
  // A decoded block (recode), or one position's rotated keys and values of every head (write).
  scratch_.resize(std::max(shape.page_size, 2 * shape.n_kv_heads) * shape.head_dim);
  stored_key_.resize(shape.head_dim);
}

void KvCache::set_tiers(const KvTiers& tiers) {
  tiers_ = tiers;
  if (tiers_.enabled()) reference_reads_ = false;
}

void KvCache::set_sparse(const SparsePolicy& policy) {
  sparse_ = policy;
  if (sparse_.enabled) pool_.enable_key_summaries();
}

bool KvCache::selects_in(size_t layer) const {
  if (sparse_.sparse_layer(layer)) return true;
  return std::any_of(sequence_sparse_.begin(), sequence_sparse_.end(),
                     [layer](const auto& entry) { return entry.second.sparse_layer(layer); });
}

void KvCache::set_sequence_sparse(SeqId seq, const SparsePolicy& policy) {
  assert(!policy.enabled || !pool_.key_summaries().empty());
  sequence_sparse_[seq] = policy;
}

size_t KvCache::shared_pages_in(const SeqPages& s, size_t from, size_t to) const {
  const size_t page_size = shape().page_size;
  size_t n = 0;
  for (size_t i = from / page_size; i < s.pages.size() && i * page_size < to; ++i) {
    if (pool_.page(s.pages[i]).ref_count > 1) ++n;
  }
  return n;
}

size_t KvCache::pages_needed(SeqId seq, size_t n_positions) const {
  const size_t page_size = shape().page_size;
  const size_t want = (n_positions + page_size - 1) / page_size;
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return want;
  const SeqPages& s = it->second;
  const size_t missing = want > s.pages.size() ? want - s.pages.size() : 0;
  return missing + shared_pages_in(s, s.length, n_positions);
}

bool KvCache::make_private(SeqPages& s, size_t index) {
  const PageId old = s.pages[index];
  if (pool_.page(old).ref_count <= 1) return true;
  Result<PageId> copy = take_page(pool_.page(old).precision, pool_.has_window(old));
  if (!copy.ok()) return false;
  pool_.copy(old, *copy);
  drop(old);
  s.pages[index] = *copy;
  return true;
}

Status KvCache::reserve(SeqId seq, size_t n_positions) {
  const size_t need = pages_needed(seq, n_positions);
  const size_t free = pool_.free_pages(pool_.default_precision());
  if (!pool_.can_allocate(pool_.default_precision(), need)) {
    // Short of pages, or (with sliding-window layers) of window parts for them.
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full: " + std::to_string(need) + " more pages needed, " +
                          std::to_string(free) + " free" +
                          (need <= free ? " but not their sliding-window parts" : "") +
                          "; raise the context size (-c) or run fewer sequences at once");
  }
  SeqPages& s = sequences_[seq];
  const size_t page_size = shape().page_size;
  for (size_t i = s.length / page_size; i < s.pages.size() && i * page_size < n_positions; ++i) {
    make_private(s, i);  // cannot fail: counted in `need`
  }
  while (s.pages.size() * page_size < n_positions) {
    s.pages.push_back(*take_page(pool_.default_precision()));
  }
  s.length = std::max(s.length, n_positions);
  return ok_status();
}

void KvCache::truncate(SeqId seq, size_t n_positions) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  const size_t page_size = shape().page_size;
  const size_t keep = (n_positions + page_size - 1) / page_size;
  std::vector<PageId>& pages = it->second.pages;
  while (pages.size() > keep) {
    drop(pages.back());
    pages.pop_back();
  }
  std::vector<PageKey>& keys = it->second.keys;
  keys.resize(std::min(keys.size(), n_positions / page_size));
  it->second.window_from = std::min(it->second.window_from, pages.size());
  it->second.length = std::min(it->second.length, n_positions);
  // A shared last page keeps its fill count: the other holders still see those positions.
  if (!pages.empty() && n_positions % page_size != 0 && pool_.page(pages.back()).ref_count == 1) {
    if (pool_.page(pages.back()).indexed) forget(pages.back());  // no longer the whole page
    KvPage& last = pool_.page(pages.back());
    last.n_filled = std::min<uint32_t>(last.n_filled, n_positions % page_size);
    rebound(pages.back());
  }
}

// A page's key bounds over its filled positions only, read back from the page: a rolled-back
// position (a rejected guess) no longer widens them, so sparse attention chooses the pages
// decoding without guesses would choose.
void KvCache::rebound(PageId id) {
  const size_t n = pool_.page(id).n_filled;
  if (pool_.key_summaries().empty() || n == 0) return;
  const KvShape& s = shape();
  float* keys = scratch_.data();
  for (size_t layer = 0; layer < s.n_layers; ++layer) {
    for (size_t h = 0; h < s.n_kv_heads; ++h) {
      const KvHeadView view = pool_.head(id, layer, h);
      kernels::kv_decode_block(view.precision, kernels::KvRole::kKeys, view.keys, n, s.page_size,
                               s.head_dim, keys);
      for (size_t t = 0; t < n; ++t) {
        pool_.key_summaries().add(id, layer, h, keys + t * s.head_dim, t == 0);
      }
    }
  }
}

void KvCache::remove(SeqId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  // Deepest first: the pool hands out the earliest freed first, so a prefix's head, which more
  // prompts share, outlives its tail.
  const std::vector<PageId>& pages = it->second.pages;
  for (auto page = pages.rbegin(); page != pages.rend(); ++page) drop(*page);
  sequences_.erase(it);
}

void KvCache::fork(SeqId from, SeqId to, size_t n_positions) {
  assert(!contains(to));
  const SeqPages& source = sequences_.at(from);
  const size_t page_size = shape().page_size;
  const size_t n = std::min(source.pages.size(), (n_positions + page_size - 1) / page_size);
  SeqPages copy;
  copy.pages.assign(source.pages.begin(), source.pages.begin() + static_cast<ptrdiff_t>(n));
  for (PageId id : copy.pages) pool_.retain(id);
  copy.length = std::min(n_positions, source.length);
  copy.root = source.root;
  copy.keys.assign(source.keys.begin(),
                   source.keys.begin() + static_cast<ptrdiff_t>(std::min(source.keys.size(), n)));
  sequences_.emplace(to, std::move(copy));
}

size_t KvCache::capacity(SeqId seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? 0 : it->second.pages.size() * shape().page_size;
}

size_t KvCache::length(SeqId seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? 0 : it->second.length;
}

std::span<const PageId> KvCache::page_table(SeqId seq) const {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return {};
  return it->second.pages;
}

void KvCache::write(SeqId seq, size_t pos, size_t layer, const float* k, const float* v) {
  const KvShape& s = shape();
  auto it = sequences_.find(seq);
  assert(it != sequences_.end() && pos / s.page_size < it->second.pages.size());
  SeqPages& pages = it->second;
  const size_t index = pos / s.page_size;
  if (!make_private(pages, index)) {
    std::fprintf(stderr, "strata: no free KV page to copy a shared page before writing it\n");
    std::abort();  // reserve() makes room for every copy the engine's writes need
  }
  const KvPrecision written = pool_.page(pages.pages[index]).precision;
  if (!kernels::kv_format_row_writable(written, kernels::KvRole::kKeys) &&
      !recode(pages, index, pool_.default_precision())) {
    // A rewrite into an aged page (a rolled-back position) with the hot arena full.
    std::fprintf(stderr, "strata: no free KV page to rewrite an aged page\n");
    std::abort();
  }
  const PageId id = pages.pages[index];
  if (pool_.page(id).indexed) forget(id);  // private now, and about to change
  const size_t slot = pos % s.page_size;
  if (rotated_) {  // both rows, every head, rotated into the scratch
    std::copy_n(k, s.n_kv_heads * s.head_dim, scratch_.data());
    std::copy_n(v, s.n_kv_heads * s.head_dim, scratch_.data() + s.n_kv_heads * s.head_dim);
    for (size_t h = 0; h < 2 * s.n_kv_heads; ++h) {
      kernels::rotate_kv_head(scratch_.data() + h * s.head_dim, s.head_dim);
    }
    k = scratch_.data();
    v = scratch_.data() + s.n_kv_heads * s.head_dim;
  }
  for (size_t h = 0; h < s.n_kv_heads; ++h) {
    KvHeadView view = pool_.head(id, layer, h);
    kernels::kv_encode_row(view.precision, kernels::KvRole::kKeys, k + h * s.head_dim, s.head_dim,
                           view.keys, slot);
    kernels::kv_encode_row(view.precision, kernels::KvRole::kValues, v + h * s.head_dim, s.head_dim,
                           view.values, slot);
    if (!pool_.key_summaries().empty()) {
      // The bounds of the key as stored, which is what attention reads and what truncate()
      // can read back to bound the positions a rollback keeps.
      kernels::kv_decode_row(view.precision, kernels::KvRole::kKeys, view.keys, slot, s.head_dim,
                             stored_key_.data());
      pool_.key_summaries().add(id, layer, h, stored_key_.data(), slot == 0);
    }
  }
  KvPage& page = pool_.page(id);
  page.n_filled = std::max<uint32_t>(page.n_filled, static_cast<uint32_t>(slot + 1));
}

bool KvCache::recode(SeqPages& s, size_t index, KvPrecision to) {
  const PageId old = s.pages[index];
  const bool window = pool_.has_window(old);
  Result<PageId> fresh = take_page(to, window);
  if (!fresh.ok()) return false;
  const KvShape& sh = shape();
  const size_t n = pool_.page(old).n_filled;
  float* rows = scratch_.data();
  for (size_t layer = 0; layer < sh.n_layers; ++layer) {
    if (!window && sh.window_layer(layer)) continue;  // released: nothing to re-encode
    for (size_t h = 0; h < sh.n_kv_heads; ++h) {
      const KvHeadView from = pool_.head(old, layer, h);
      const KvHeadView into = pool_.head(*fresh, layer, h);
      for (kernels::KvRole role : {kernels::KvRole::kKeys, kernels::KvRole::kValues}) {
        const bool keys = role == kernels::KvRole::kKeys;
        kernels::kv_decode_block(from.precision, role, keys ? from.keys : from.values, n,
                                 sh.page_size, sh.head_dim, rows);
        kernels::kv_encode_block(into.precision, role, rows, n, sh.page_size, sh.head_dim,
                                 keys ? into.keys : into.values);
      }
    }
  }
  pool_.page(*fresh).n_filled = static_cast<uint32_t>(n);
  // The bounds of the keys as written, not as decoded: the selection scores what attention
  // would have read before the page aged too; the format's error is the tiers' to measure.
  if (!pool_.key_summaries().empty()) pool_.key_summaries().copy(old, *fresh);
  // A cached prefix page stays findable in its new precision (the root names the tier policy
  // that put it there), and is saved again as it is now.
  if (pool_.page(old).indexed) {
    prefix_.move(old, *fresh);
    pool_.page(old).indexed = pool_.page(old).saved = false;
    pool_.page(*fresh).indexed = true;
  }
  // Every holder of a shared page sees it at the same index (fork and prefix caching share a
  // prefix).
  for (auto& [id, other] : sequences_) {
    if (&other == &s || index >= other.pages.size() || other.pages[index] != old) continue;
    other.pages[index] = *fresh;
    pool_.retain(*fresh);
    drop(old);
  }
  s.pages[index] = *fresh;
  drop(old);
  return true;
}

size_t KvCache::age(SeqId seq) {
  if (!tiers_.enabled()) return 0;
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return 0;
  SeqPages& s = it->second;
  const size_t page_size = shape().page_size;
  size_t recoded = 0;
  // Every page, newest first: a comparison each, a thousand at 32K positions.
  for (size_t i = s.pages.size(); i-- > 0;) {
    const std::optional<KvPrecision> target = tiers_.target(i * page_size, page_size, s.length);
    const KvPrecision now = pool_.page(s.pages[i]).precision;
    if (!target || *target == now) continue;
    // Only downwards: a page already colder than its target (truncation made it younger)
    // stays.
    if (now == tiers_.cold || (now == tiers_.warm && target != tiers_.cold)) continue;
    if (recode(s, i, *target)) ++recoded;
  }
  return recoded;
}

bool KvCache::past_window(const SeqPages& s, size_t index) const {
  // The next query is at position `length` or later and reads positions (p - window, p].
  const KvShape& sh = shape();
  return (index + 1) * sh.page_size + sh.window <= s.length + 1;
}

size_t KvCache::release_windows(SeqId seq) {
  if (!pool_.has_window_layers()) return 0;
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return 0;
  SeqPages& s = it->second;
  size_t released = 0;
  for (size_t i = s.window_from; i < s.pages.size() && past_window(s, i); ++i) {
    const PageId id = s.pages[i];
    if (!pool_.has_window(id)) {
      if (i == s.window_from) ++s.window_from;
      continue;
    }
    // A shared page goes when every holder is past it (they hold it at the same index).
    const bool everyone_past =
        pool_.page(id).ref_count == 1 ||
        std::all_of(sequences_.begin(), sequences_.end(), [&](const auto& entry) {
          const SeqPages& o = entry.second;
          return i >= o.pages.size() || o.pages[i] != id || past_window(o, i);
        });
    if (!everyone_past) continue;
    pool_.release_window(id);
    ++released;
    if (i == s.window_from) ++s.window_from;
  }
  return released;
}

Result<PageId> KvCache::take_page(KvPrecision precision, bool window) {
  Result<PageId> id = pool_.allocate(precision, window);
  if (id.ok() && pool_.page(*id).indexed) forget(*id);
  return id;
}

void KvCache::drop(PageId id) {
  pool_.release(id);
  const KvPage& page = pool_.page(id);
  if (page.ref_count == 0 && page.indexed && store_ && !page.saved) save(id);
}

size_t KvCache::stored_positions() const {
  size_t n = 0;
  for (PageId id = 0; id < pool_.n_pages(); ++id) {
    if (pool_.page(id).ref_count > 0) n += pool_.page(id).n_filled;
  }
  return n;
}

}  // namespace strata::kv
