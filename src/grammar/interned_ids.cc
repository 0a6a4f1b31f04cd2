#include "grammar/interned_ids.h"

#include <algorithm>
#include <bit>

namespace strata::grammar {
namespace {

constexpr size_t kMinCapacity = 1024;

// Fibonacci hashing: the top bits of key * 2^64 / phi spread consecutive keys apart.
size_t fibonacci_slot(uint64_t hash, int shift) {
  return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ULL) >> shift);
}

}  // namespace

size_t KeyIds::slot_of(uint64_t key) const {
  const size_t mask = keys_.size() - 1;
  size_t slot = fibonacci_slot(key, shift_);
  while (keys_[slot] != key && keys_[slot] != kFree) slot = (slot + 1) & mask;
  return slot;
}

uint32_t KeyIds::find(uint64_t key) const {
  if (keys_.empty()) return kNoId;
  const size_t slot = slot_of(key);
  return keys_[slot] == key ? ids_[slot] : kNoId;
}

void KeyIds::add(uint64_t key, uint32_t id) {
  if (2 * (size_ + 1) > keys_.size()) grow();
  const size_t slot = slot_of(key);
  keys_[slot] = key;
  ids_[slot] = id;
  ++size_;
}

uint32_t KeyIds::find_or_add(uint64_t key, uint32_t* next_id) {
  if (2 * (size_ + 1) > keys_.size()) grow();
  const size_t slot = slot_of(key);
  if (keys_[slot] == key) return ids_[slot];
  keys_[slot] = key;
  ids_[slot] = (*next_id)++;
  ++size_;
  return ids_[slot];
}

void KeyIds::clear() {
  keys_.clear();
  ids_.clear();
  size_ = 0;
  shift_ = 64;
}

void KeyIds::grow() {
  std::vector<uint64_t> keys = std::move(keys_);
  std::vector<uint32_t> ids = std::move(ids_);
  const size_t capacity = std::max(kMinCapacity, 2 * keys.size());
  keys_.assign(capacity, kFree);
  ids_.assign(capacity, kNoId);
  shift_ = 64 - std::countr_zero(capacity);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == kFree) continue;
    const size_t slot = slot_of(keys[i]);
    keys_[slot] = keys[i];
    ids_[slot] = ids[i];
  }
}

uint64_t WordIds::hash(std::span<const uint32_t> words) {
  // Two words per multiply: keys of the compiled grammar's caches run to hundreds of words.
  uint64_t h = words.size();
  size_t i = 0;
  for (; i + 1 < words.size(); i += 2) {
    h = (std::rotl(h, 23) ^ (uint64_t{words[i]} | uint64_t{words[i + 1]} << 32)) *
        0xD6E8FEB86659FD93ULL;
  }
  if (i < words.size()) h = (std::rotl(h, 23) ^ words[i]) * 0xD6E8FEB86659FD93ULL;
  return h ^ h >> 31;
}

uint32_t WordIds::find(std::span<const uint32_t> words) const {
  if (slots_.empty()) return kNoId;
  const uint64_t h = hash(words);
  const size_t mask = slots_.size() - 1;
  for (size_t slot = fibonacci_slot(h, shift_);; slot = (slot + 1) & mask) {
    const Slot& s = slots_[slot];
    if (s.id == kNoId) return kNoId;
    if (s.hash == h && s.length == words.size() &&
        std::equal(words.begin(), words.end(),
                   words_.begin() + static_cast<std::ptrdiff_t>(s.begin))) {
      return s.id;
    }
  }
}

void WordIds::add(std::span<const uint32_t> words, uint32_t id) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const uint64_t h = hash(words);
  const size_t mask = slots_.size() - 1;
  size_t slot = fibonacci_slot(h, shift_);
  while (slots_[slot].id != kNoId) slot = (slot + 1) & mask;
  slots_[slot] = {h, words_.size(), static_cast<uint32_t>(words.size()), id};
  words_.insert(words_.end(), words.begin(), words.end());
  ++size_;
}

void WordIds::clear() {
  words_.clear();
  slots_.clear();
  size_ = 0;
  shift_ = 64;
}

void WordIds::grow() {
  std::vector<Slot> slots = std::move(slots_);
  const size_t capacity = std::max(kMinCapacity, 2 * slots.size());
  slots_.assign(capacity, Slot{});
  shift_ = 64 - std::countr_zero(capacity);
  const size_t mask = capacity - 1;
  for (const Slot& s : slots) {
    if (s.id == kNoId) continue;
    size_t slot = fibonacci_slot(s.hash, shift_);
    while (slots_[slot].id != kNoId) slot = (slot + 1) & mask;
    slots_[slot] = s;
  }
}

}  // namespace strata::grammar
