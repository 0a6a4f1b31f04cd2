#include "kv/kv_cache.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/fp16.h"

namespace strata::kv {

KvCache::KvCache(const KvShape& shape, size_t n_pages, KvPrecision precision)
    : pool_(shape, n_pages, precision) {}

KvCache::KvCache(const KvShape& shape, std::span<const ArenaSpec> arenas) : pool_(shape, arenas) {}

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
  Result<PageId> copy = pool_.allocate(pool_.page(old).precision);
  if (!copy.ok()) return false;
  pool_.copy(old, *copy);
  pool_.release(old);
  s.pages[index] = *copy;
  return true;
}

Status KvCache::reserve(SeqId seq, size_t n_positions) {
  const size_t need = pages_needed(seq, n_positions);
  const size_t free = pool_.free_pages(pool_.default_precision());
  if (need > free) {
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full: " + std::to_string(need) + " more pages needed, " +
                          std::to_string(free) +
                          " free; raise the context size (-c) or run fewer sequences at once");
  }
  SeqPages& s = sequences_[seq];
  const size_t page_size = shape().page_size;
  for (size_t i = s.length / page_size; i < s.pages.size() && i * page_size < n_positions; ++i) {
    make_private(s, i);  // cannot fail: counted in `need`
  }
  while (s.pages.size() * page_size < n_positions) s.pages.push_back(*pool_.allocate());
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
    pool_.release(pages.back());
    pages.pop_back();
  }
  it->second.length = std::min(it->second.length, n_positions);
  // A shared last page keeps its fill count: the other holders still see those positions.
  if (!pages.empty() && n_positions % page_size != 0 && pool_.page(pages.back()).ref_count == 1) {
    KvPage& last = pool_.page(pages.back());
    last.n_filled = std::min<uint32_t>(last.n_filled, n_positions % page_size);
  }
}

void KvCache::remove(SeqId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  for (PageId id : it->second.pages) pool_.release(id);
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
  if (!make_private(it->second, pos / s.page_size)) {
    std::fprintf(stderr, "strata: no free KV page to copy a shared page before writing it\n");
    std::abort();  // reserve() makes room for every copy the engine's writes need
  }
  const PageId id = it->second.pages[pos / s.page_size];
  const size_t slot = pos % s.page_size;
  for (size_t h = 0; h < s.n_kv_heads; ++h) {
    KvHeadView view = pool_.head(id, layer, h);
    const float* kh = k + h * s.head_dim;
    const float* vh = v + h * s.head_dim;
    if (view.precision == KvPrecision::kF32) {
      std::memcpy(static_cast<float*>(view.keys) + slot * s.head_dim, kh,
                  s.head_dim * sizeof(float));
      std::memcpy(static_cast<float*>(view.values) + slot * s.head_dim, vh,
                  s.head_dim * sizeof(float));
    } else {
      auto* kd = static_cast<uint16_t*>(view.keys) + slot * s.head_dim;
      auto* vd = static_cast<uint16_t*>(view.values) + slot * s.head_dim;
      for (size_t i = 0; i < s.head_dim; ++i) {
        kd[i] = fp32_to_fp16(kh[i]);
        vd[i] = fp32_to_fp16(vh[i]);
      }
    }
  }
  KvPage& page = pool_.page(id);
  page.n_filled = std::max<uint32_t>(page.n_filled, static_cast<uint32_t>(slot + 1));
}

}  // namespace strata::kv
