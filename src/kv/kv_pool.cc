#include "kv/kv_pool.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "platform/huge_pages.h"

namespace strata::kv {

KvPool::KvPool(const KvShape& shape, size_t n_pages, KvPrecision precision)
    : KvPool(shape, std::span<const ArenaSpec>(std::vector<ArenaSpec>{{precision, n_pages}})) {}

KvPool::KvPool(const KvShape& shape, std::span<const ArenaSpec> arenas)
    : shape_(shape), windows_(shape.n_window_layers() > 0) {
  assert(!arenas.empty());
  for (const ArenaSpec& spec : arenas) {
    assert(find(spec.precision) == nullptr);
    const size_t bytes = global_part_bytes(shape, spec.precision);
    const size_t slot_bytes = window_part_bytes(shape, spec.precision);
    std::vector<size_t> offsets(shape.n_layers);
    size_t in_part[2] = {0, 0};  // bytes so far in the global and the window part
    for (size_t l = 0; l < shape.n_layers; ++l) {
      size_t& at = in_part[shape.window_layer(l)];
      offsets[l] = at;
      at += shape.layer_bytes(spec.precision, l);
    }
    Arena a{
        spec.precision, bytes, slot_bytes, std::move(offsets), static_cast<PageId>(pages_.size()),
        spec.n_pages};
    if (spec.offload_dir.empty()) {
      a.data = allocate_huge_page_backed(bytes * spec.n_pages);
      if (a.data == nullptr) throw std::bad_alloc();
      a.base = a.data.get();
    } else {
      Result<ScratchMapping> file = ScratchMapping::create(spec.offload_dir, bytes * spec.n_pages);
      if (!file.ok()) throw std::runtime_error(file.error().message);
      a.file = std::move(file).value();
      a.base = a.file.data();
    }
    a.n_slots = window_slot_count(shape, spec);
    if (a.n_slots > 0) {
      a.window_data = allocate_huge_page_backed(slot_bytes * a.n_slots);
      if (a.window_data == nullptr) throw std::bad_alloc();
      // Handed out lowest first (the stack's top is its back).
      for (size_t i = a.n_slots; i-- > 0;) a.free_slots.push_back(static_cast<uint32_t>(i));
    }
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
  for (const Arena& a : arenas_) n += a.n_pages * a.page_bytes + a.n_slots * a.slot_bytes;
  return n;
}

size_t KvPool::window_slots(KvPrecision precision) const {
  const Arena* a = find(precision);
  return a ? a->n_slots : 0;
}

size_t KvPool::used_window_slots(KvPrecision precision) const {
  const Arena* a = find(precision);
  return a ? a->n_slots - a->free_slots.size() - a->slots_on_free_pages : 0;
}

size_t KvPool::used_bytes(KvPrecision precision) const {
  const Arena* a = find(precision);
  if (a == nullptr) return 0;
  return (a->n_pages - a->n_free) * a->page_bytes + used_window_slots(precision) * a->slot_bytes;
}

bool KvPool::can_allocate(KvPrecision precision, size_t n) const {
  const Arena* a = find(precision);
  if (a == nullptr) return n == 0;
  if (n > a->n_free) return false;
  return !windows_ || n <= a->free_slots.size() + a->slots_on_free_pages;
}

Result<PageId> KvPool::allocate() { return allocate(default_precision()); }

Result<PageId> KvPool::allocate(KvPrecision precision, bool window) {
  Arena* a = find(precision);
  if (a == nullptr || a->n_free == 0) {
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full (" + std::to_string(n_pages()) + " pages of " +
                          std::to_string(shape_.page_size) +
                          " tokens); raise the context size or run fewer sequences at once");
  }
  const PageId id = a->head;
  KvPage& p = pages_[id];
  if (windows_ && window && p.window_slot == kNoWindowSlot && !take_window_slot(*a, id)) {
    return make_error(ErrorCode::kOutOfRange,
                      "KV cache is full (" + std::to_string(a->n_slots) +
                          " sliding-window slots in use); run fewer sequences at once");
  }
  unlink(*a, id);
  if (p.window_slot != kNoWindowSlot) {
    --a->slots_on_free_pages;
    if (!window) give_back_slot(*a, p);
  }
  p.ref_count = 1;
  p.n_filled = 0;
  return id;
}

bool KvPool::take_window_slot(Arena& a, PageId id) {
  if (a.free_slots.empty()) {
    // The free page handed out soonest that holds a slot gives it up (its window layers can no
    // longer start a cached prefix: KvCache::cached_run checks).
    PageId donor = a.head;
    while (donor != kNoPage && pages_[donor].window_slot == kNoWindowSlot) {
      donor = links_[donor].next;
    }
    if (donor == kNoPage) return false;
    --a.slots_on_free_pages;
    give_back_slot(a, pages_[donor]);
  }
  pages_[id].window_slot = a.free_slots.back();
  a.free_slots.pop_back();
  ++a.slots_on_free_pages;  // the page is still free; allocate() counts it out
  return true;
}

void KvPool::give_back_slot(Arena& a, KvPage& page) {
  a.free_slots.push_back(page.window_slot);
  page.window_slot = kNoWindowSlot;
}

void KvPool::release_window(PageId id) {
  KvPage& p = pages_[id];
  assert(p.ref_count > 0);
  if (p.window_slot != kNoWindowSlot) give_back_slot(arenas_[p.arena], p);
}

void KvPool::retain(PageId id) {
  KvPage& p = pages_[id];
  assert(p.ref_count > 0 || p.indexed);  // only a cached prefix is taken back from the free list
  if (p.ref_count++ > 0) return;
  Arena& a = arenas_[p.arena];
  unlink(a, id);
  if (p.window_slot != kNoWindowSlot) --a.slots_on_free_pages;
}

void KvPool::release(PageId id) {
  KvPage& p = pages_[id];
  assert(p.ref_count > 0);
  if (--p.ref_count > 0) return;
  Arena& a = arenas_[p.arena];
  if (p.indexed) {
    push_back(a, id);
    if (p.window_slot != kNoWindowSlot) ++a.slots_on_free_pages;
  } else {
    push_front(a, id);
    if (p.window_slot != kNoWindowSlot) give_back_slot(a, p);  // its contents are worth nothing
  }
}

unsigned char* KvPool::page_data(PageId id) {
  Arena& a = arenas_[pages_[id].arena];
  return a.base + static_cast<size_t>(id - a.first) * a.page_bytes;
}

std::span<unsigned char> KvPool::data(PageId id) {
  return {page_data(id), arenas_[pages_[id].arena].page_bytes};
}

std::span<unsigned char> KvPool::window_data(PageId id) {
  const KvPage& p = pages_[id];
  if (p.window_slot == kNoWindowSlot) return {};
  Arena& a = arenas_[p.arena];
  return {a.window_data.get() + size_t{p.window_slot} * a.slot_bytes, a.slot_bytes};
}

void KvPool::copy(PageId from, PageId to) {
  assert(pages_[from].precision == pages_[to].precision);
  assert(has_window(to) || !has_window(from));
  std::memcpy(page_data(to), page_data(from), arenas_[pages_[from].arena].page_bytes);
  const std::span<unsigned char> window = window_data(from);
  if (!window.empty()) std::memcpy(window_data(to).data(), window.data(), window.size());
  pages_[to].n_filled = pages_[from].n_filled;
  if (!summaries_.empty()) summaries_.copy(from, to);
}

void KvPool::enable_key_summaries() {
  if (summaries_.empty()) summaries_ = KeySummaries(shape_, pages_.size());
}

const unsigned char* KvPool::layer_data(PageId id, size_t layer) const {
  const KvPage& p = pages_[id];
  const Arena& a = arenas_[p.arena];
  const size_t offset = a.layer_offset[layer];
  if (shape_.window_layer(layer)) {
    assert(p.window_slot != kNoWindowSlot);  // released parts are never read
    return a.window_data.get() + size_t{p.window_slot} * a.slot_bytes + offset;
  }
  return a.base + static_cast<size_t>(id - a.first) * a.page_bytes + offset;
}

KvHeadView KvPool::head(PageId id, size_t layer, size_t kv_head) {
  const KvPrecision precision = shape_.layer_precision(pages_[id].precision, layer);
  // The pool owns the bytes; the const lookup is shared with key_block.
  auto* base = const_cast<unsigned char*>(layer_data(id, layer));
  const size_t k_block = shape_.block_bytes(precision, kernels::KvRole::kKeys);
  const size_t v_block = shape_.block_bytes(precision, kernels::KvRole::kValues);
  return KvHeadView{base + kv_head * k_block,
                    base + shape_.n_kv_heads * k_block + kv_head * v_block, precision};
}

const void* KvPool::key_block(PageId id, size_t layer, size_t kv_head) const {
  const KvPrecision precision = shape_.layer_precision(pages_[id].precision, layer);
  return layer_data(id, layer) + kv_head * shape_.block_bytes(precision, kernels::KvRole::kKeys);
}

}  // namespace strata::kv
