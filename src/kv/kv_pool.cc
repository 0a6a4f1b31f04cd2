#include "kv/kv_pool.h"

#include <cassert>
#include <cstring>
#include <new>
#include <string>

#include "platform/huge_pages.h"

namespace strata::kv {

KvPool::KvPool(const KvShape& shape, size_t n_pages, KvPrecision precision)
    : KvPool(shape, std::span<const ArenaSpec>(std::vector<ArenaSpec>{{precision, n_pages}})) {}

KvPool::KvPool(const KvShape& shape, std::span<const ArenaSpec> arenas) : shape_(shape) {
  assert(!arenas.empty());
  for (const ArenaSpec& spec : arenas) {
    assert(find(spec.precision) == nullptr);
    const size_t bytes = page_bytes(shape, spec.precision);
    Arena a{spec.precision, bytes, static_cast<PageId>(pages_.size()),
            allocate_huge_page_backed(bytes * spec.n_pages), spec.n_pages};
    if (a.data == nullptr) throw std::bad_alloc();
    for (size_t i = 0; i < spec.n_pages; ++i) {
      const auto id = static_cast<PageId>(pages_.size());
      pages_.push_back(KvPage{spec.precision, static_cast<uint8_t>(arenas_.size()), 0, 0});
      links_.emplace_back();
      push_back(a, id);
    }
    arenas_.push_back(std::move(a));
  }
}

const KvPool::Arena* KvPool::find(KvPrecision precision) const {
  for (const Arena& a : arenas_) {
    if (a.precision == precision) return &a;
  }
  return nullptr;
}

KvPool::Arena* KvPool::find(KvPrecision precision) {
  for (Arena& a : arenas_) {
    if (a.precision == precision) return &a;
  }
  return nullptr;
}

void KvPool::push_front(Arena& a, PageId id) {
  links_[id] = {kNoPage, a.head};
  (a.head == kNoPage ? a.tail : links_[a.head].prev) = id;
  a.head = id;
  ++a.n_free;
}

void KvPool::push_back(Arena& a, PageId id) {
  links_[id] = {a.tail, kNoPage};
  (a.tail == kNoPage ? a.head : links_[a.tail].next) = id;
  a.tail = id;
  ++a.n_free;
}

void KvPool::unlink(Arena& a, PageId id) {
  const Link l = links_[id];
  (l.prev == kNoPage ? a.head : links_[l.prev].next) = l.next;
  (l.next == kNoPage ? a.tail : links_[l.next].prev) = l.prev;
  links_[id] = {};
  --a.n_free;
}

size_t KvPool::free_pages() const {
  size_t n = 0;
  for (const Arena& a : arenas_) n += a.n_free;
  return n;
}

size_t KvPool::free_pages(KvPrecision precision) const {
  const Arena* a = find(precision);
  return a ? a->n_free : 0;
}

size_t KvPool::n_pages(KvPrecision precision) const {
  const Arena* a = find(precision);
  return a ? a->n_pages : 0;
}

std::vector<KvPrecision> KvPool::precisions() const {
  std::vector<KvPrecision> out;
  for (const Arena& a : arenas_) out.push_back(a.precision);
  return out;
}

size_t KvPool::bytes() const {
  size_t n = 0;
  for (const Arena& a : arenas_) n += a.n_pages * a.page_bytes;
  return n;
}

Result<PageId> KvPool::allocate() { return allocate(default_precision()); }

Result<PageId> KvPool::allocate(KvPrecision precision) {
  Arena* a = find(precision);
  if (a == nullptr || a->n_free == 0) {
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full (" + std::to_string(n_pages()) + " pages of " +
                          std::to_string(shape_.page_size) +
                          " tokens); raise the context size or run fewer sequences at once");
  }
  const PageId id = a->head;
  unlink(*a, id);
  KvPage& p = pages_[id];
  p.ref_count = 1;
  p.n_filled = 0;
  return id;
}

void KvPool::retain(PageId id) {
  KvPage& p = pages_[id];
  assert(p.ref_count > 0 || p.indexed);  // only a cached prefix is taken back from the free list
  if (p.ref_count++ == 0) unlink(arenas_[p.arena], id);
}

void KvPool::release(PageId id) {
  KvPage& p = pages_[id];
  assert(p.ref_count > 0);
  if (--p.ref_count > 0) return;
  Arena& a = arenas_[p.arena];
  if (p.indexed) {
    push_back(a, id);
  } else {
    push_front(a, id);
  }
}

unsigned char* KvPool::page_data(PageId id) {
  Arena& a = arenas_[pages_[id].arena];
  return a.data.get() + static_cast<size_t>(id - a.first) * a.page_bytes;
}

std::span<unsigned char> KvPool::data(PageId id) {
  return {page_data(id), arenas_[pages_[id].arena].page_bytes};
}

void KvPool::copy(PageId from, PageId to) {
  assert(pages_[from].precision == pages_[to].precision);
  std::memcpy(page_data(to), page_data(from), arenas_[pages_[from].arena].page_bytes);
  pages_[to].n_filled = pages_[from].n_filled;
  if (!summaries_.empty()) summaries_.copy(from, to);
}

void KvPool::enable_key_summaries() {
  if (summaries_.empty()) summaries_ = KeySummaries(shape_, pages_.size());
}

KvHeadView KvPool::head(PageId id, size_t layer, size_t kv_head) {
  const KvPrecision precision = pages_[id].precision;
  unsigned char* base = page_data(id) + layer * shape_.layer_bytes(precision);
  const size_t k_block = shape_.block_bytes(precision, kernels::KvRole::kKeys);
  const size_t v_block = shape_.block_bytes(precision, kernels::KvRole::kValues);
  return KvHeadView{base + kv_head * k_block,
                    base + shape_.n_kv_heads * k_block + kv_head * v_block, precision};
}

const void* KvPool::key_block(PageId id, size_t layer, size_t kv_head) const {
  const KvPrecision precision = pages_[id].precision;
  const Arena& a = arenas_[pages_[id].arena];
  const unsigned char* page = a.data.get() + static_cast<size_t>(id - a.first) * a.page_bytes;
  return page + layer * shape_.layer_bytes(precision) +
         kv_head * shape_.block_bytes(precision, kernels::KvRole::kKeys);
}

}  // namespace strata::kv
