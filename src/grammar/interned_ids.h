// Hash tables from keys to 32-bit ids for the grammar compiler's memos, which make millions of
// lookups on a large schema (pairs of signature ids, rule templates, sets of parse stacks,
// transitions between them). Open addressing with linear probing, at most half full, no node
// per entry: std::unordered_map's nodes, its modulo and, for string keys, a std::string per
// entry were a third of such a compile.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata::grammar {

inline constexpr uint32_t kNoId = UINT32_MAX;

// uint64 keys (any but UINT64_MAX) to ids.
class KeyIds {
 public:
  // The id of `key`, or kNoId.
  uint32_t find(uint64_t key) const;
  // Stores `id` (not kNoId) for a key find() does not know.
  void add(uint64_t key, uint32_t id);
  // The id of `key`; when it is new, *next_id (and *next_id is incremented).
  uint32_t find_or_add(uint64_t key, uint32_t* next_id);
  size_t size() const { return size_; }
  void clear();

 private:
  static constexpr uint64_t kFree = UINT64_MAX;
  size_t slot_of(uint64_t key) const;
  void grow();
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> ids_;
  size_t size_ = 0;
  int shift_ = 64;  // slot = hash >> shift_ (64 - log2 of the capacity)
};

// Strings of uint32 words to ids; the words are kept back to back in one buffer.
class WordIds {
 public:
  uint32_t find(std::span<const uint32_t> words) const;
  void add(std::span<const uint32_t> words, uint32_t id);
  size_t size() const { return size_; }
  void clear();

 private:
  struct Slot {
    uint64_t hash = 0;
    uint64_t begin = 0;  // into words_
    uint32_t length = 0;
    uint32_t id = kNoId;  // kNoId: a free slot
  };
  static uint64_t hash(std::span<const uint32_t> words);
  void grow();
  std::vector<uint32_t> words_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace strata::grammar
