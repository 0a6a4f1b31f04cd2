// The compiler's hash tables against std::unordered_map on the same keys: every id found again
// through growth, absent keys reported absent, and clear() forgetting everything.
#include "grammar/interned_ids.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

namespace strata::grammar {
namespace {

TEST(InternedIds, KeyIdsAgreeWithAMapThroughGrowth) {
  std::mt19937_64 rng(7);
  KeyIds table;
  std::unordered_map<uint64_t, uint32_t> expected;
  uint32_t next_id = 0;
  // Keys the compiler uses: pairs of small ids (a << 32 | b), transitions (set << 8 | byte),
  // and arbitrary 64-bit values, so that many collide in their low or high bits.
  for (int i = 0; i < 200000; ++i) {
    uint64_t key = rng();
    if (i % 3 == 0) key = (rng() % 5000) << 32 | rng() % 5000;
    if (i % 3 == 1) key = (rng() % 100000) << 8 | rng() % 256;
    if (key == UINT64_MAX) continue;
    const auto [it, inserted] = expected.emplace(key, next_id);
    const uint32_t before = next_id;
    ASSERT_EQ(table.find_or_add(key, &next_id), it->second);
    ASSERT_EQ(next_id, inserted ? before + 1 : before);
  }
  EXPECT_EQ(table.size(), expected.size());
  for (const auto& [key, id] : expected) ASSERT_EQ(table.find(key), id);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t key = rng();
    if (!expected.count(key)) {
      ASSERT_EQ(table.find(key), kNoId);
    }
  }
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(expected.begin()->first), kNoId);
  table.add(42, 7);
  EXPECT_EQ(table.find(42), 7u);
}

TEST(InternedIds, WordIdsTellStringsApartByEveryWordAndLength) {
  std::mt19937 rng(11);
  WordIds table;
  std::map<std::vector<uint32_t>, uint32_t> expected;
  for (uint32_t i = 0; i < 50000; ++i) {
    // Short strings over few values: many share prefixes, or differ only in length.
    std::vector<uint32_t> words(rng() % 6);
    for (uint32_t& w : words) w = rng() % 4;
    if (expected.count(words)) {
      ASSERT_EQ(table.find(words), expected[words]);
      continue;
    }
    ASSERT_EQ(table.find(words), kNoId);
    table.add(words, i);
    expected.emplace(words, i);
  }
  EXPECT_EQ(table.size(), expected.size());
  for (const auto& [words, id] : expected) ASSERT_EQ(table.find(words), id);
  table.clear();
  EXPECT_EQ(table.find(expected.begin()->first), kNoId);
}

}  // namespace
}  // namespace strata::grammar
