// KvCache's prefix caching (kv/prefix_index.h): indexing full pages as they are computed,
// starting sequences on cached pages, and the on-disk store of --kv-cache-dir.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "base/log.h"
#include "kv/kv_cache.h"

namespace strata::kv {

void KvCache::forget(PageId id) {
  KvPage& page = pool_.page(id);
  if (page.saved) store_->remove(prefix_.entry(id)->key);
  prefix_.erase(id);
  page.indexed = page.saved = false;
}

void KvCache::save(PageId id) {
  std::span<const uint16_t> summary;
  if (!pool_.key_summaries().empty()) summary = pool_.key_summaries().page(id);
  // The global part, then the window part where the page still has it (kv/prefix_store.h).
  std::vector<unsigned char> data(pool_.data(id).begin(), pool_.data(id).end());
  const std::span<const unsigned char> window = pool_.window_data(id);
  data.insert(data.end(), window.begin(), window.end());
  Status saved = store_->save(*prefix_.entry(id), pool_.page(id).precision, data, summary);
  if (saved.ok()) {
    pool_.page(id).saved = true;
  } else if (!save_failed_) {
    save_failed_ = true;  // once: a full disk would otherwise warn at every page
    log_warn("the prefix cache cannot save pages to disk: " + saved.error().message);
  }
}

PageKey KvCache::sequence_root(std::string_view salt) const {
  return salt.empty() ? root_ : salted_key(root_, salt);
}

void KvCache::enable_prefix_cache(const PageKey& root, std::unique_ptr<PrefixStore> store) {
  prefix_caching_ = true;
  root_ = root;
  store_ = std::move(store);
  if (store_) {
    loaded_ = store_->load([this](SavedPage&& page) { return load_saved(std::move(page)); });
  }
}

bool KvCache::load_saved(SavedPage&& saved) {
  const size_t summary = pool_.key_summaries().empty() ? 0 : pool_.key_summaries().page_stride();
  if (!pool_.has_precision(saved.precision) || saved.summary.size() != summary ||
      prefix_.find(saved.entry.key, saved.entry.parent, saved.entry.tokens)) {
    return false;
  }
  const size_t global = global_part_bytes(shape(), saved.precision);
  const bool window = saved.data.size() > global;
  Result<PageId> id = take_page(saved.precision, window);
  if (!id.ok()) return false;
  std::memcpy(pool_.data(*id).data(), saved.data.data(), global);
  if (window) {
    std::memcpy(pool_.window_data(*id).data(), saved.data.data() + global,
                saved.data.size() - global);
  }
  if (summary > 0) {
    std::copy(saved.summary.begin(), saved.summary.end(), pool_.key_summaries().page(*id).begin());
  }
  KvPage& page = pool_.page(*id);
  page.n_filled = static_cast<uint32_t>(shape().page_size);
  prefix_.insert(*id, std::move(saved.entry));
  page.indexed = page.saved = true;
  drop(*id);  // free and findable, the newest last to go
  return true;
}

KvCache::CachedRun KvCache::cached_run(std::span<const int32_t> tokens, const PageKey& root,
                                       size_t max_positions) const {
  const size_t page_size = shape().page_size;
  CachedRun run;
  while ((run.pages.size() + 1) * page_size <= std::min(max_positions, tokens.size())) {
    const PageKey& parent = run.keys.empty() ? root : run.keys.back();
    const std::span<const int32_t> page = tokens.subspan(run.pages.size() * page_size, page_size);
    const PageKey key = chain_key(parent, page);
    const std::optional<PageId> id = prefix_.find(key, parent, page);
    if (!id) break;
    run.pages.push_back(*id);
    run.keys.push_back(key);
  }
  // The first query after the run reads the window before it: a run whose window layers there
  // were released is cut back to one whose window is whole.
  while (!run.pages.empty() && !window_intact(run.pages)) {
    run.pages.pop_back();
    run.keys.pop_back();
  }
  return run;
}

bool KvCache::window_intact(std::span<const PageId> pages) const {
  if (!pool_.has_window_layers()) return true;
  const KvShape& sh = shape();
  const size_t end = pages.size() * sh.page_size;  // the next query's position
  const size_t first = end + 1 > sh.window ? (end + 1 - sh.window) / sh.page_size : 0;
  return std::all_of(pages.begin() + static_cast<ptrdiff_t>(std::min(first, pages.size())),
                     pages.end(), [this](PageId id) { return pool_.has_window(id); });
}

size_t KvCache::cached_prefix(std::span<const int32_t> tokens, std::string_view salt,
                              size_t max_positions) const {
  if (!prefix_caching_) return 0;
  return cached_run(tokens, sequence_root(salt), max_positions).pages.size() * shape().page_size;
}

size_t KvCache::attach_prefix(SeqId seq, std::span<const int32_t> tokens, std::string_view salt,
                              size_t max_positions) {
  if (!prefix_caching_) return 0;
  assert(!contains(seq));
  SeqPages& s = sequences_[seq];
  s.root = sequence_root(salt);
  CachedRun run = cached_run(tokens, s.root, max_positions);
  for (PageId id : run.pages) pool_.retain(id);  // a free page leaves the free list
  s.pages = std::move(run.pages);
  s.keys = std::move(run.keys);
  s.length = s.pages.size() * shape().page_size;
  return s.length;
}

void KvCache::index(SeqId seq, std::span<const int32_t> tokens, size_t n_positions) {
  if (!prefix_caching_) return;
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  SeqPages& s = it->second;
  const size_t page_size = shape().page_size;
  const size_t full = std::min({n_positions, s.length, tokens.size()}) / page_size;
  while (s.keys.size() < full) {
    const size_t i = s.keys.size();
    const PageKey& parent = i == 0 ? s.root : s.keys.back();
    const std::span<const int32_t> page = tokens.subspan(i * page_size, page_size);
    PrefixEntry entry{chain_key(parent, page), parent, {page.begin(), page.end()}};
    s.keys.push_back(entry.key);
    // A page another sequence computed first keeps the key; this copy stays unindexed.
    KvPage& p = pool_.page(s.pages[i]);
    if (!p.indexed && prefix_.insert(s.pages[i], std::move(entry))) p.indexed = true;
  }
}

size_t KvCache::save_prefix_cache() {
  if (!store_) return 0;
  size_t n = 0;
  for (PageId id = 0; id < pool_.n_pages(); ++id) {
    if (pool_.page(id).indexed && !pool_.page(id).saved) {
      save(id);
      n += pool_.page(id).saved ? 1 : 0;
    }
  }
  return n;
}

}  // namespace strata::kv
