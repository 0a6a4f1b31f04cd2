#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/fp16.h"

namespace strata::kv {
namespace {

KvShape small_shape() {
  return KvShape{/*n_layers=*/2, /*n_kv_heads=*/3, /*head_dim=*/4, /*page_size=*/8};
}

TEST(KvPoolTest, AllocatesEveryPageOnceThenRefuses) {
  KvPool pool(small_shape(), 3, KvPrecision::kF32);
  std::vector<PageId> ids;
  for (int i = 0; i < 3; ++i) {
    Result<PageId> id = pool.allocate();
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
  EXPECT_EQ(pool.free_pages(), 0u);
  Result<PageId> none = pool.allocate();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kOutOfRange);
  pool.release(ids[1]);
  EXPECT_EQ(pool.free_pages(), 1u);
}

TEST(KvPoolTest, SharedPageReturnsWhenLastHolderReleases) {
  KvPool pool(small_shape(), 2, KvPrecision::kF16);
  PageId id = *pool.allocate();
  pool.retain(id);
  EXPECT_EQ(pool.page(id).ref_count, 2u);
  pool.release(id);
  EXPECT_EQ(pool.free_pages(), 1u);
  pool.release(id);
  EXPECT_EQ(pool.free_pages(), 2u);
}

TEST(KvPoolTest, HeadViewsDoNotOverlap) {
  const KvShape s = small_shape();
  KvPool pool(s, 2, KvPrecision::kF32);
  PageId a = *pool.allocate(), b = *pool.allocate();
  // Fill every (page, layer, head, K/V) block with a distinct value, then read all back.
  auto tag = [&](PageId p, size_t l, size_t h, int kv) {
    return static_cast<float>(((p * 10 + l) * 10 + h) * 2 + kv);
  };
  for (PageId p : {a, b})
    for (size_t l = 0; l < s.n_layers; ++l)
      for (size_t h = 0; h < s.n_kv_heads; ++h) {
        KvHeadView v = pool.head(p, l, h);
        for (size_t i = 0; i < s.head_block_elements(); ++i) {
          static_cast<float*>(v.keys)[i] = tag(p, l, h, 0);
          static_cast<float*>(v.values)[i] = tag(p, l, h, 1);
        }
      }
  for (PageId p : {a, b})
    for (size_t l = 0; l < s.n_layers; ++l)
      for (size_t h = 0; h < s.n_kv_heads; ++h) {
        KvHeadView v = pool.head(p, l, h);
        for (size_t i = 0; i < s.head_block_elements(); ++i) {
          ASSERT_EQ(static_cast<float*>(v.keys)[i], tag(p, l, h, 0));
          ASSERT_EQ(static_cast<float*>(v.values)[i], tag(p, l, h, 1));
        }
      }
}

TEST(KvCacheTest, ReserveIsAllOrNothing) {
  KvCache cache(small_shape(), 4, KvPrecision::kF32);
  ASSERT_TRUE(cache.reserve(1, 17).ok());  // 3 pages of 8
  EXPECT_EQ(cache.capacity(1), 24u);
  EXPECT_EQ(cache.pages_needed(2, 16), 2u);
  Status too_big = cache.reserve(2, 16);
  EXPECT_FALSE(too_big.ok());
  EXPECT_EQ(cache.pool().free_pages(), 1u);  // nothing taken by the failed reserve
  EXPECT_TRUE(cache.reserve(2, 8).ok());
  cache.remove(1);
  EXPECT_EQ(cache.pool().free_pages(), 3u);
  EXPECT_FALSE(cache.contains(1));
}

TEST(KvCacheTest, TruncateReturnsWholePagesPastTheCut) {
  KvCache cache(small_shape(), 4, KvPrecision::kF32);
  ASSERT_TRUE(cache.reserve(7, 32).ok());
  cache.truncate(7, 9);
  EXPECT_EQ(cache.page_table(7).size(), 2u);
  EXPECT_EQ(cache.pool().free_pages(), 2u);
}

TEST(KvCacheTest, WriteStoresEachHeadAtItsPosition) {
  for (KvPrecision precision : {KvPrecision::kF32, KvPrecision::kF16}) {
    const KvShape s = small_shape();
    KvCache cache(s, 4, precision);
    ASSERT_TRUE(cache.reserve(3, 20).ok());
    std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
    const size_t pos = 13, layer = 1;
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = 0.5f * static_cast<float>(i);  // exactly representable in f16
      v[i] = -0.25f * static_cast<float>(i);
    }
    cache.write(3, pos, layer, k.data(), v.data());
    const PageId page = cache.page_table(3)[pos / s.page_size];
    for (size_t h = 0; h < s.n_kv_heads; ++h) {
      KvHeadView view = cache.pool().head(page, layer, h);
      for (size_t d = 0; d < s.head_dim; ++d) {
        const size_t at = (pos % s.page_size) * s.head_dim + d;
        float kv_k, kv_v;
        if (precision == KvPrecision::kF32) {
          kv_k = static_cast<float*>(view.keys)[at];
          kv_v = static_cast<float*>(view.values)[at];
        } else {
          kv_k = fp16_to_fp32(static_cast<uint16_t*>(view.keys)[at]);
          kv_v = fp16_to_fp32(static_cast<uint16_t*>(view.values)[at]);
        }
        EXPECT_EQ(kv_k, k[h * s.head_dim + d]);
        EXPECT_EQ(kv_v, v[h * s.head_dim + d]);
      }
    }
    EXPECT_EQ(cache.pool().page(page).n_filled, pos % s.page_size + 1);
  }
}

}  // namespace
}  // namespace strata::kv
