// Prefix caching in the KV cache: chained page keys, attaching a cached prefix, reuse order,
// immutability of indexed pages, tiers, and the on-disk store (torn, corrupt and foreign files).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "kv/kv_manager.h"
#include "kv/page_key.h"
#include "kv/prefix_store.h"

namespace strata::kv {
namespace {

namespace fs = std::filesystem;

constexpr size_t kPage = 8;

KvShape shape() {
  return KvShape{/*n_layers=*/2, /*n_kv_heads=*/2, /*head_dim=*/8, /*page_size=*/kPage};
}

PageKey root(uint8_t tag) {
  PageKey k;
  k.bytes.fill(tag);
  return k;
}

std::vector<int32_t> tokens(size_t n, int32_t first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// The keys and values a "model" computes for a token at a position: distinct per input.
float value_of(int32_t token, size_t pos, size_t layer, size_t i) {
  return static_cast<float>(token) * 0.01f + static_cast<float>(pos) * 0.001f +
         static_cast<float>(layer) + static_cast<float>(i) * 1e-4f;
}

// Runs what the engine does for positions [from, to) of seq: room, writes, then index().
void compute(KvCache& cache, SeqId seq, const std::vector<int32_t>& t, size_t from, size_t to) {
  ASSERT_TRUE(cache.reserve(seq, to).ok());
  const KvShape s = cache.shape();
  std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
  for (size_t pos = from; pos < to; ++pos) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = value_of(t[pos], pos, layer, i);
        v[i] = -k[i];
      }
      cache.write(seq, pos, layer, k.data(), v.data());
    }
  }
  cache.index(seq, t, to);
}

// The key row a page holds at a slot (f32 pages).
float key_at(KvCache& cache, PageId page, size_t slot, size_t layer) {
  return static_cast<const float*>(cache.pool().head(page, layer, 0).keys)[slot * 8];
}

TEST(PageKeyTest, ChainsNameTheWholePrefix) {
  const std::vector<int32_t> a = tokens(8), b = tokens(8, 200);
  const PageKey r = root(1);
  EXPECT_EQ(chain_key(r, a), chain_key(r, a));
  EXPECT_NE(chain_key(r, a), chain_key(r, b));
  EXPECT_NE(chain_key(r, a), chain_key(root(2), a));  // another model or precision
  EXPECT_NE(chain_key(chain_key(r, a), b), chain_key(chain_key(r, b), b));  // another history
  EXPECT_NE(salted_key(r, "tenant-a"), salted_key(r, "tenant-b"));
  EXPECT_EQ(chain_key(r, a).hex().size(), 32u);
}

TEST(PrefixCacheTest, ASecondSequenceStartsOnTheFirstsFullPages) {
  KvCache cache(shape(), 8, KvPrecision::kF32);
  cache.enable_prefix_cache(root(1));
  const std::vector<int32_t> t = tokens(20);  // two full pages and 4 positions
  ASSERT_EQ(cache.attach_prefix(1, t, "", t.size() - 1), 0u);
  compute(cache, 1, t, 0, t.size());
  EXPECT_EQ(cache.prefix_index().size(), 2u);
  EXPECT_EQ(cache.cached_prefix(t, "", t.size() - 1), 16u);

  // The same prompt with another ending shares the two pages, not the partial third.
  std::vector<int32_t> u = t;
  u.back() = 7;
  ASSERT_EQ(cache.attach_prefix(2, u, "", u.size() - 1), 16u);
  EXPECT_EQ(cache.page_table(2)[0], cache.page_table(1)[0]);
  EXPECT_EQ(cache.page_table(2)[1], cache.page_table(1)[1]);
  EXPECT_EQ(cache.pool().page(cache.page_table(1)[0]).ref_count, 2u);
  EXPECT_EQ(cache.length(2), 16u);
  // Another salt, or a change inside the first page, finds nothing.
  EXPECT_EQ(cache.cached_prefix(t, "other tenant", t.size() - 1), 0u);
  std::vector<int32_t> w = t;
  w[3] = 9;
  EXPECT_EQ(cache.cached_prefix(w, "", w.size() - 1), 0u);
  // A cap inside the second page keeps only the first (the last token is always computed).
  EXPECT_EQ(cache.cached_prefix(t, "", 15), 8u);
}

TEST(PrefixCacheTest, PagesOutliveTheirSequenceUntilThePoolNeedsThem) {
  KvCache cache(shape(), 4, KvPrecision::kF32);
  cache.enable_prefix_cache(root(1));
  const std::vector<int32_t> t = tokens(24);
  cache.attach_prefix(1, t, "", t.size());
  compute(cache, 1, t, 0, t.size());
  const PageId first = cache.page_table(1)[0];
  cache.remove(1);
  EXPECT_EQ(cache.pool().free_pages(), 4u);
  EXPECT_EQ(cache.cached_prefix(t, "", t.size()), 24u);
  // Found again after the sequence ended, and the page leaves the free list while held.
  ASSERT_EQ(cache.attach_prefix(2, t, "", t.size()), 24u);
  EXPECT_EQ(cache.page_table(2)[0], first);
  EXPECT_EQ(cache.pool().free_pages(), 1u);
  EXPECT_FLOAT_EQ(key_at(cache, first, 3, 1), value_of(t[3], 3, 1, 0));
  cache.remove(2);
  // A new sequence takes the blank page, then the deepest cached page: the head of the prefix,
  // which more prompts share, goes last.
  const std::vector<int32_t> other = tokens(16, 500);
  cache.attach_prefix(3, other, "", other.size());
  compute(cache, 3, other, 0, other.size());
  EXPECT_EQ(cache.cached_prefix(t, "", t.size()), 16u);
  EXPECT_EQ(cache.prefix_index().size(), 4u);  // t's first two pages and other's two
}

TEST(PrefixCacheTest, AWriteIntoACachedPageNeverChangesWhatOthersFind) {
  KvCache cache(shape(), 6, KvPrecision::kF32);
  cache.enable_prefix_cache(root(1));
  const std::vector<int32_t> t = tokens(16);
  cache.attach_prefix(1, t, "", t.size());
  compute(cache, 1, t, 0, t.size());
  cache.attach_prefix(2, t, "", t.size());
  // Sequence 2 rolls back into the shared second page and writes other tokens: it gets a copy.
  cache.truncate(2, 12);
  std::vector<int32_t> u = t;
  u[12] = 1;
  compute(cache, 2, u, 12, 13);
  EXPECT_NE(cache.page_table(2)[1], cache.page_table(1)[1]);
  EXPECT_FLOAT_EQ(key_at(cache, cache.page_table(1)[1], 4, 0), value_of(t[12], 12, 0, 0));
  EXPECT_EQ(cache.cached_prefix(t, "", t.size()), 16u);
  // Sequence 1, alone on its page now, rolls back too: the page leaves the index.
  cache.remove(2);
  cache.truncate(1, 12);
  EXPECT_EQ(cache.cached_prefix(t, "", t.size()), 8u);
  compute(cache, 1, u, 12, 16);
  EXPECT_EQ(cache.cached_prefix(u, "", u.size()), 16u);
  EXPECT_EQ(cache.cached_prefix(t, "", t.size()), 8u);
}

TEST(PrefixCacheTest, ManagerNeverReusesTheLastTokenAndCountsLookups) {
  KvManager kv(shape(), std::vector<ArenaSpec>{{KvPrecision::kF32, 8}});
  kv.cache().enable_prefix_cache(root(1));
  const std::vector<int32_t> t = tokens(16);  // exactly two pages
  kv.attach_prefix(1, t);
  ASSERT_TRUE(kv.allocate(1, t.size()).has_value());
  compute(kv.cache(), 1, t, 0, t.size());
  // The whole prompt is cached, but its last token must run for its logits: one page only.
  EXPECT_EQ(kv.computed_prefix(t), 8u);
  EXPECT_EQ(kv.attach_prefix(2, t), 8u);
  kv.count_prefix_lookup(t.size(), 8);
  EXPECT_EQ(kv.prefix_counters().queries, 16u);
  EXPECT_EQ(kv.prefix_counters().hits, 8u);
}

TEST(PrefixCacheTest, AgedPagesStayFindableInTheirNewPrecision) {
  KvTiers tiers;
  tiers.hot_tokens = 8;
  tiers.cold = KvPrecision::kQ8_0;
  const KvShape s{/*n_layers=*/1, /*n_kv_heads=*/1, /*head_dim=*/32, /*page_size=*/kPage};
  KvCache cache(s, std::vector<ArenaSpec>{{KvPrecision::kF16, 6}, {KvPrecision::kQ8_0, 6}});
  cache.set_tiers(tiers);
  cache.enable_prefix_cache(root(1));
  const std::vector<int32_t> t = tokens(32);
  cache.attach_prefix(1, t, "", t.size());
  compute(cache, 1, t, 0, t.size());
  EXPECT_GT(cache.age(1), 0u);
  const PageId first = cache.page_table(1)[0];
  EXPECT_EQ(cache.pool().page(first).precision, KvPrecision::kQ8_0);
  EXPECT_TRUE(cache.pool().page(first).indexed);
  EXPECT_EQ(cache.cached_prefix(t, "", t.size()), 32u);
  ASSERT_EQ(cache.attach_prefix(2, t, "", t.size()), 32u);
  EXPECT_EQ(cache.page_table(2)[0], first);
}

class PrefixStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_prefix_store_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A cache over the folder, as a server start makes it.
  std::unique_ptr<KvCache> open(uint8_t model, size_t pages = 8) {
    auto cache = std::make_unique<KvCache>(shape(), pages, KvPrecision::kF32);
    Result<std::unique_ptr<PrefixStore>> store = PrefixStore::open(dir_, root(model), shape());
    EXPECT_TRUE(store.ok());
    cache->enable_prefix_cache(root(model), std::move(store).value());
    return cache;
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
};

TEST_F(PrefixStoreTest, ARestartFindsThePagesWithTheirValues) {
  const std::vector<int32_t> t = tokens(20);
  {
    std::unique_ptr<KvCache> cache = open(1);
    cache->attach_prefix(1, t, "", t.size());
    compute(*cache, 1, t, 0, t.size());
    EXPECT_EQ(files().size(), 0u);  // saved once their holder lets them go
    cache->remove(1);
    EXPECT_EQ(files().size(), 2u);
  }
  std::unique_ptr<KvCache> cache = open(1);
  EXPECT_EQ(cache->loaded_pages().loaded, 2u);
  EXPECT_EQ(cache->cached_prefix(t, "", t.size()), 16u);
  ASSERT_EQ(cache->attach_prefix(2, t, "", t.size()), 16u);
  for (size_t pos : {0, 5, 9, 15}) {
    EXPECT_FLOAT_EQ(key_at(*cache, cache->page_table(2)[pos / kPage], pos % kPage, 1),
                    value_of(t[pos], pos, 1, 0));
  }
}

TEST_F(PrefixStoreTest, RunningSequencesPagesAreSavedOnRequestAndEvictedOnesDeleted) {
  const std::vector<int32_t> t = tokens(16);
  std::unique_ptr<KvCache> cache = open(1, /*pages=*/2);
  cache->attach_prefix(1, t, "", t.size());
  compute(*cache, 1, t, 0, t.size());
  EXPECT_EQ(cache->save_prefix_cache(), 2u);
  EXPECT_EQ(files().size(), 2u);
  cache->remove(1);
  // Another prompt takes both pages: their files go with them.
  const std::vector<int32_t> u = tokens(16, 900);
  cache->attach_prefix(2, u, "", u.size());
  ASSERT_TRUE(cache->reserve(2, 16).ok());
  EXPECT_EQ(files().size(), 0u);
}

TEST_F(PrefixStoreTest, AnotherModelsFolderGivesMissesNotWrongValues) {
  const std::vector<int32_t> t = tokens(16);
  {
    std::unique_ptr<KvCache> cache = open(1);
    cache->attach_prefix(1, t, "", t.size());
    compute(*cache, 1, t, 0, t.size());
    cache->remove(1);
  }
  std::unique_ptr<KvCache> cache = open(2);
  EXPECT_EQ(cache->loaded_pages().loaded, 0u);
  EXPECT_EQ(cache->loaded_pages().foreign, 2u);
  EXPECT_EQ(cache->cached_prefix(t, "", t.size()), 0u);
  EXPECT_EQ(files().size(), 2u);  // left for the model they belong to
}

TEST_F(PrefixStoreTest, TornAndCorruptFilesAreSkipped) {
  const std::vector<int32_t> t = tokens(24);
  {
    std::unique_ptr<KvCache> cache = open(1);
    cache->attach_prefix(1, t, "", t.size());
    compute(*cache, 1, t, 0, t.size());
    cache->remove(1);
  }
  std::vector<fs::path> saved = files();
  ASSERT_EQ(saved.size(), 3u);
  fs::resize_file(saved[0], fs::file_size(saved[0]) / 2);  // torn
  {
    std::fstream f(saved[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x5a');  // one byte of page data changed
  }
  std::ofstream(dir_ / "garbage.kvpage") << "not a page";
  std::unique_ptr<KvCache> cache = open(1);
  EXPECT_EQ(cache->loaded_pages().loaded, 1u);
  EXPECT_EQ(cache->loaded_pages().broken, 3u);
  // Whatever survived is found only as far as the chain is whole, and holds the right values.
  const size_t found = cache->cached_prefix(t, "", t.size());
  ASSERT_EQ(cache->attach_prefix(2, t, "", t.size()), found);
  for (size_t pos = 0; pos < found; ++pos) {
    EXPECT_FLOAT_EQ(key_at(*cache, cache->page_table(2)[pos / kPage], pos % kPage, 0),
                    value_of(t[pos], pos, 0, 0));
  }
}

TEST_F(PrefixStoreTest, AFileThatIsNotAFolderIsRefusedWithTheFlagName) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  Result<std::unique_ptr<PrefixStore>> store =
      PrefixStore::open((dir_ / "file").string(), root(1), shape());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("--kv-cache-dir"), std::string::npos);
}

}  // namespace
}  // namespace strata::kv
