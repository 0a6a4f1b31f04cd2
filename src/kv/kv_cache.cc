#include "kv/kv_cache.h"

#include <cassert>
#include <cstring>

#include "base/fp16.h"

namespace strata::kv {

KvCache::KvCache(const KvShape& shape, size_t n_pages, KvPrecision precision)
    : pool_(shape, n_pages, precision) {}

size_t KvCache::pages_needed(SeqId seq, size_t n_positions) const {
  const size_t page_size = shape().page_size;
  const size_t want = (n_positions + page_size - 1) / page_size;
  auto it = sequences_.find(seq);
  const size_t have = it == sequences_.end() ? 0 : it->second.size();
  return want > have ? want - have : 0;
}

Status KvCache::reserve(SeqId seq, size_t n_positions) {
  const size_t need = pages_needed(seq, n_positions);
  if (need > pool_.free_pages()) {
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full: " + std::to_string(need) + " more pages needed, " +
                          std::to_string(pool_.free_pages()) +
                          " free; raise the context size (-c) or run fewer sequences at once");
  }
  std::vector<PageId>& pages = sequences_[seq];
  for (size_t i = 0; i < need; ++i) pages.push_back(*pool_.allocate());
  return ok_status();
}

void KvCache::truncate(SeqId seq, size_t n_positions) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  const size_t page_size = shape().page_size;
  const size_t keep = (n_positions + page_size - 1) / page_size;
  std::vector<PageId>& pages = it->second;
  while (pages.size() > keep) {
    pool_.release(pages.back());
    pages.pop_back();
  }
  if (!pages.empty() && n_positions % page_size != 0) {
    KvPage& last = pool_.page(pages.back());
    last.n_filled = std::min<uint32_t>(last.n_filled, n_positions % page_size);
  }
}

void KvCache::remove(SeqId seq) {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return;
  for (PageId id : it->second) pool_.release(id);
  sequences_.erase(it);
}

size_t KvCache::capacity(SeqId seq) const {
  auto it = sequences_.find(seq);
  return it == sequences_.end() ? 0 : it->second.size() * shape().page_size;
}

std::span<const PageId> KvCache::page_table(SeqId seq) const {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return {};
  return it->second;
}

void KvCache::write(SeqId seq, size_t pos, size_t layer, const float* k, const float* v) {
  const KvShape& s = shape();
  auto it = sequences_.find(seq);
  assert(it != sequences_.end() && pos / s.page_size < it->second.size());
  const PageId id = it->second[pos / s.page_size];
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
