// The KV manager and the pool behaviours it relies on: the order of page reuse, copy-on-write, one
// arena per precision, allocate's "not now", truncate, and kv::attend's thread plan.
#include "kv/kv_manager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kv/attend.h"
#include "kv/paged_attention.h"

namespace strata::kv {
namespace {

KvShape small_shape() {
  return KvShape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/4, /*page_size=*/8};
}

std::vector<ArenaSpec> one_arena(size_t n_pages, KvPrecision p = KvPrecision::kF32) {
  return {{p, n_pages}};
}

TEST(KvPoolTest, FreedPagesNobodyIndexedGoFirstThenIndexedLeastRecentlyFreed) {
  KvPool pool(small_shape(), 5, KvPrecision::kF32);
  std::vector<PageId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(*pool.allocate());
  // ids[1], ids[3] and ids[4] hold cached prefixes; ids[0] and ids[2] hold nothing worth keeping.
  for (int i : {1, 3, 4}) pool.page(ids[i]).indexed = true;
  pool.release(ids[3]);
  pool.release(ids[0]);
  pool.release(ids[1]);
  pool.release(ids[2]);
  pool.release(ids[4]);
  EXPECT_EQ(*pool.allocate(), ids[2]);  // unindexed: the latest freed first, they are all alike
  EXPECT_EQ(*pool.allocate(), ids[0]);
  EXPECT_EQ(*pool.allocate(), ids[3]);  // indexed: least recently freed first
  EXPECT_EQ(*pool.allocate(), ids[1]);
  EXPECT_EQ(*pool.allocate(), ids[4]);
}

TEST(KvPoolTest, RetainTakesAFreeIndexedPageBackFromTheMiddleOfTheList) {
  KvPool pool(small_shape(), 3, KvPrecision::kF32);
  std::vector<PageId> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(*pool.allocate());
  for (PageId id : ids) pool.page(id).indexed = true;
  for (PageId id : ids) pool.release(id);
  pool.retain(ids[1]);
  EXPECT_EQ(pool.page(ids[1]).ref_count, 1u);
  EXPECT_EQ(pool.free_pages(), 2u);
  EXPECT_EQ(*pool.allocate(), ids[0]);
  EXPECT_EQ(*pool.allocate(), ids[2]);
  EXPECT_FALSE(pool.allocate().ok());
}

TEST(KvPoolTest, EachPrecisionHasItsOwnArenaAndByteSize) {
  EXPECT_EQ(small_shape().block_bytes(KvPrecision::kF32, kernels::KvRole::kKeys),
            4 * small_shape().head_block_elements());
  EXPECT_EQ(small_shape().block_bytes(KvPrecision::kF16, kernels::KvRole::kValues),
            2 * small_shape().head_block_elements());
  const KvShape s = small_shape();
  const std::vector<ArenaSpec> arenas = {{KvPrecision::kF16, 3}, {KvPrecision::kF32, 2}};
  KvPool pool(s, arenas);
  EXPECT_EQ(pool.n_pages(), 5u);
  EXPECT_EQ(pool.default_precision(), KvPrecision::kF16);
  EXPECT_EQ(pool.bytes(),
            3 * page_bytes(s, KvPrecision::kF16) + 2 * page_bytes(s, KvPrecision::kF32));
  EXPECT_EQ(page_bytes(s, KvPrecision::kF32), 2 * page_bytes(s, KvPrecision::kF16));
  const PageId hot = *pool.allocate();
  const PageId full = *pool.allocate(KvPrecision::kF32);
  EXPECT_EQ(pool.page(hot).precision, KvPrecision::kF16);
  EXPECT_EQ(pool.page(full).precision, KvPrecision::kF32);
  EXPECT_EQ(pool.free_pages(KvPrecision::kF16), 2u);
  EXPECT_EQ(pool.free_pages(KvPrecision::kF32), 1u);
  // Views of pages in different arenas do not overlap.
  static_cast<float*>(pool.head(full, 1, 1).values)[s.head_block_elements() - 1] = 7.0f;
  static_cast<uint16_t*>(pool.head(hot, 1, 1).values)[s.head_block_elements() - 1] = 9;
  EXPECT_EQ(static_cast<float*>(pool.head(full, 1, 1).values)[s.head_block_elements() - 1], 7.0f);
  pool.release(full);
  EXPECT_EQ(pool.free_pages(KvPrecision::kF32), 2u);
  EXPECT_EQ(pool.free_pages(KvPrecision::kF16), 2u);
}

TEST(KvCacheTest, WritingASharedPageCopiesItFirst) {
  const KvShape s = small_shape();
  KvCache cache(s, 4, KvPrecision::kF32);
  ASSERT_TRUE(cache.reserve(1, 8).ok());
  std::vector<float> k(s.n_kv_heads * s.head_dim, 1.0f), v(k.size(), 2.0f);
  for (size_t pos = 0; pos < 4; ++pos) cache.write(1, pos, 0, k.data(), v.data());
  cache.fork(1, 2, 4);  // sequence 2 shares the first page
  const PageId shared = cache.page_table(1)[0];
  EXPECT_EQ(cache.page_table(2)[0], shared);
  EXPECT_EQ(cache.pool().page(shared).ref_count, 2u);

  std::vector<float> k2(k.size(), 5.0f), v2(k.size(), 6.0f);
  cache.write(2, 4, 0, k2.data(), v2.data());
  const PageId own = cache.page_table(2)[0];
  EXPECT_NE(own, shared);
  EXPECT_EQ(cache.pool().page(shared).ref_count, 1u);
  EXPECT_EQ(cache.pool().page(own).ref_count, 1u);
  // The copy kept the shared positions; the original did not see the new one.
  EXPECT_EQ(static_cast<float*>(cache.pool().head(own, 0, 1).keys)[3 * s.head_dim], 1.0f);
  EXPECT_EQ(static_cast<float*>(cache.pool().head(own, 0, 1).keys)[4 * s.head_dim], 5.0f);
  EXPECT_EQ(cache.pool().page(shared).n_filled, 4u);
  EXPECT_EQ(cache.pool().page(own).n_filled, 5u);
}

TEST(KvCacheTest, ReservingPastTheLengthInASharedPageCopiesIt) {
  KvCache cache(small_shape(), 3, KvPrecision::kF32);
  ASSERT_TRUE(cache.reserve(1, 4).ok());
  cache.fork(1, 2, 4);
  EXPECT_EQ(cache.pages_needed(2, 6), 1u);  // the copy of the shared page
  ASSERT_TRUE(cache.reserve(2, 6).ok());
  EXPECT_NE(cache.page_table(2)[0], cache.page_table(1)[0]);
  EXPECT_EQ(cache.pool().free_pages(), 1u);
}

TEST(KvManagerTest, AllocateIsAllOrNothingAndSaysNotNow) {
  KvManager kv(small_shape(), one_arena(4));
  EXPECT_EQ(kv.computed_prefix(std::vector<int32_t>{1, 2, 3}), 0u);
  auto a = kv.allocate(1, 20);  // 3 pages
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->size(), 3u);
  EXPECT_EQ(kv.length(1), 20u);
  EXPECT_FALSE(kv.allocate(2, 9).has_value());  // needs 2, 1 free
  EXPECT_EQ(kv.used_pages(), 3u);
  EXPECT_TRUE(kv.allocate(1, 4).has_value());  // 24 positions: still 3 pages
  EXPECT_EQ(kv.used_pages(), 3u);
  EXPECT_TRUE(kv.fits_alone(32));
  EXPECT_FALSE(kv.fits_alone(33));
  kv.free(1);
  EXPECT_EQ(kv.used_pages(), 0u);
  EXPECT_TRUE(kv.allocate(2, 9).has_value());
}

TEST(KvManagerTest, TruncateKeepsTheLeadingPositions) {
  KvManager kv(small_shape(), one_arena(4));
  ASSERT_TRUE(kv.allocate(1, 30).has_value());
  kv.truncate(1, 9);
  EXPECT_EQ(kv.length(1), 9u);
  EXPECT_EQ(kv.used_pages(), 2u);
  ASSERT_TRUE(kv.allocate(1, 1).has_value());  // position 9 continues in the second page
  EXPECT_EQ(kv.length(1), 10u);
  EXPECT_EQ(kv.used_pages(), 2u);
}

TEST(KvAttendTest, MatchesThePerHeadKernelWhateverTheThreads) {
  const KvShape s{/*n_layers=*/1, /*n_kv_heads=*/2, /*head_dim=*/8, /*page_size=*/4};
  const size_t n_heads = 4, n_pos = 11;
  const float scale = 1.0f / std::sqrt(8.0f);
  KvCache cache(s, 8, KvPrecision::kF16);
  ASSERT_TRUE(cache.reserve(5, n_pos).ok());
  std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
  for (size_t p = 0; p < n_pos; ++p) {
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = std::sin(static_cast<float>(p * 31 + i));
      v[i] = std::cos(static_cast<float>(p * 17 + i));
    }
    cache.write(5, p, 0, k.data(), v.data());
  }
  std::vector<QueryPos> queries = {{5, 3}, {5, 10}};
  std::vector<float> q(queries.size() * n_heads * s.head_dim);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(static_cast<float>(i) * 0.3f);
  std::vector<float> one(q.size()), four(q.size()), expected(q.size());
  ThreadPool single(1), several(4);
  attend(cache, 0, queries, n_heads, scale, q.data(), one.data(), single);
  attend(cache, 0, queries, n_heads, scale, q.data(), four.data(), several);
  std::vector<float> scratch(attend_kv_head_scratch_floats(s, 2));
  for (size_t t = 0; t < queries.size(); ++t) {
    for (size_t kv_head = 0; kv_head < s.n_kv_heads; ++kv_head) {
      const size_t at = (t * n_heads + kv_head * 2) * s.head_dim;
      attend_kv_head(cache.pool(), cache.page_table(5), 0, kv_head, queries[t].pos + 1, &q[at], 2,
                     scale, &expected[at], scratch.data(), cache.reference_reads());
    }
  }
  EXPECT_EQ(one, expected);
  EXPECT_EQ(four, expected);
}

}  // namespace
}  // namespace strata::kv
