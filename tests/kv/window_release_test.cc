// Sliding-window layers' KV in pages' window parts (kv/kv_page.h): slots handed out with pages and
// given back once every query to come is past a page, the global layers kept; shared pages,
// tiers, cached prefixes and the on-disk store with pages that lost their window part.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "kernels/kv_format.h"
#include "kv/kv_manager.h"
#include "kv/prefix_store.h"

namespace strata::kv {
namespace {

constexpr size_t kPage = 8;
constexpr size_t kWindow = 20;  // a query at p reads (p - 20, p] in the window layers

// Layers 0 and 2 global, 1 and 3 windowed (Gemma 2's alternation).
KvShape window_shape() {
  KvShape s{/*n_layers=*/4, /*n_kv_heads=*/2, /*head_dim=*/32, /*page_size=*/kPage};
  s.window_layers = {false, true, false, true};
  s.window = kWindow;
  return s;
}

float value_of(size_t pos, size_t layer, size_t i) {
  return static_cast<float>(pos) * 0.01f + static_cast<float>(layer) +
         static_cast<float>(i) * 1e-4f;
}

// What the engine does for positions [length, to) of seq: release, room, writes, index().
void compute(KvCache& cache, SeqId seq, size_t to, const std::vector<int32_t>& tokens = {}) {
  cache.release_windows(seq);
  const size_t from = cache.length(seq);
  ASSERT_TRUE(cache.reserve(seq, to).ok()) << "at " << from;
  const KvShape& s = cache.shape();
  std::vector<float> k(s.n_kv_heads * s.head_dim), v(k.size());
  for (size_t pos = from; pos < to; ++pos) {
    for (size_t layer = 0; layer < s.n_layers; ++layer) {
      for (size_t i = 0; i < k.size(); ++i) k[i] = v[i] = value_of(pos, layer, i);
      cache.write(seq, pos, layer, k.data(), v.data());
    }
  }
  if (!tokens.empty()) cache.index(seq, tokens, to);
}

std::vector<ArenaSpec> f32(size_t pages, size_t window_slots) {
  return {{KvPrecision::kF32, pages, window_slots}};
}

// The first value of head 0 at a page's first position, decoded from the page's precision.
float first_value(KvCache& cache, PageId id, size_t layer) {
  const KvShape& s = cache.shape();
  const KvHeadView view = cache.pool().head(id, layer, 0);
  std::vector<float> rows(s.page_size * s.head_dim);
  kernels::kv_decode_block(view.precision, kernels::KvRole::kValues, view.values, 1, s.page_size,
                           s.head_dim, rows.data());
  return rows[0];
}

TEST(WindowPartsTest, PagesPastEveryWindowGiveTheirWindowPartBackAndKeepTheGlobalLayers) {
  KvCache cache(window_shape(), f32(16, /*window_slots=*/5));
  // One position at a time: never more than the window's 3 pages and the one being filled.
  for (size_t to = 1; to <= 100; ++to) compute(cache, 0, to);
  const std::span<const PageId> pages = cache.page_table(0);
  ASSERT_EQ(pages.size(), 13u);
  // The next query (position 100) reads (80, 100]: pages 10-12 keep their window parts.
  for (size_t i = 0; i < pages.size(); ++i) {
    EXPECT_EQ(cache.pool().has_window(pages[i]), i >= 10) << "page " << i;
    EXPECT_EQ(first_value(cache, pages[i], 2), value_of(i * kPage, 2, 0));
  }
  EXPECT_EQ(first_value(cache, pages[10], 3), value_of(10 * kPage, 3, 0));
  EXPECT_EQ(cache.pool().used_window_slots(KvPrecision::kF32), 3u);
  const size_t global = global_part_bytes(window_shape(), KvPrecision::kF32);
  EXPECT_EQ(cache.pool().used_bytes(KvPrecision::kF32), 13 * global + 3 * global);
  EXPECT_EQ(cache.pool().bytes(), 16 * global + 5 * global);
}

TEST(WindowPartsTest, WithoutReleaseTheSlotsRunOutAndReserveSaysSo) {
  KvCache cache(window_shape(), f32(16, /*window_slots=*/5));
  EXPECT_TRUE(cache.reserve(0, 5 * kPage).ok());
  Status full = cache.reserve(0, 6 * kPage);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kOutOfRange);
  EXPECT_EQ(cache.page_table(0).size(), 5u);  // all or nothing
}

TEST(WindowPartsTest, ASharedPageKeepsItsWindowPartUntilEveryHolderIsPastIt) {
  KvCache cache(window_shape(), f32(32, 16));
  compute(cache, 0, 32);
  cache.fork(0, 1, 16);
  for (size_t to = 33; to <= 64; ++to) compute(cache, 0, to);
  const PageId first = cache.page_table(0)[0];
  EXPECT_TRUE(cache.pool().has_window(first));  // sequence 1 is still at 16
  for (size_t to = 17; to <= 27; ++to) compute(cache, 1, to);
  EXPECT_TRUE(cache.pool().has_window(first));  // the query at 27 reads (7, 27]
  compute(cache, 1, 28);
  EXPECT_FALSE(cache.pool().has_window(first));
  EXPECT_TRUE(cache.pool().has_window(cache.page_table(1)[1]));
}

TEST(WindowPartsTest, AgingAPageWithoutWindowPartReencodesTheGlobalLayersOnly) {
  KvCache cache(window_shape(),
                std::vector<ArenaSpec>{{KvPrecision::kF32, 16, 8}, {KvPrecision::kQ8_0, 16, 8}});
  KvTiers tiers;
  tiers.hot_tokens = 32;  // a page ages at 40 positions, after its window part went at 27
  tiers.warm = KvPrecision::kQ8_0;
  cache.set_tiers(tiers);
  for (size_t to = 1; to <= 64; ++to) {
    compute(cache, 0, to);
    cache.age(0);
  }
  const std::span<const PageId> pages = cache.page_table(0);
  const PageId old = pages[0];
  EXPECT_EQ(cache.pool().page(old).precision, KvPrecision::kQ8_0);
  EXPECT_FALSE(cache.pool().has_window(old));
  // q8_0 of the global layers' values (about 2, steps of 2/127): within half a step.
  EXPECT_NEAR(first_value(cache, old, 2), value_of(0, 2, 0), 1e-2);
  EXPECT_EQ(cache.pool().used_window_slots(KvPrecision::kQ8_0) +
                cache.pool().used_window_slots(KvPrecision::kF32),
            3u);
}

TEST(WindowPartsTest, ACachedPrefixEndsWhereItsWindowIsWhole) {
  KvCache cache(window_shape(), f32(32, 16));
  PageKey root;
  root.bytes.fill(7);
  cache.enable_prefix_cache(root);
  std::vector<int32_t> tokens(80);
  std::iota(tokens.begin(), tokens.end(), 5);
  cache.attach_prefix(0, tokens, "", 0);  // as the engine starts a sequence: under the root
  for (size_t to = 1; to <= 80; ++to) compute(cache, 0, to, tokens);
  compute(cache, 0, 80, tokens);  // releases what (79 - 20, 80] no longer reads
  // Pages 0-6 are past the window of the next query; a prompt of 80 tokens can start at 80
  // (its window (61, 80] is in pages 7-9)...
  EXPECT_EQ(cache.cached_prefix(tokens, "", 80), 80u);
  // ...but not at 56: the window before it, (37, 56], lay in pages 4-6, which lost theirs. A
  // start with a whole window is further back than page 0's end: none.
  EXPECT_EQ(cache.cached_prefix(tokens, "", 56), 0u);
  cache.remove(0);
  EXPECT_EQ(cache.cached_prefix(tokens, "", 80), 80u);  // free pages keep their parts, findable
  // A new sequence needs 14 window parts: the 13 free ones and the one of the free page handed
  // out soonest that has one (page 9, the deepest; sequences give pages back deepest first).
  compute(cache, 1, 14 * kPage);
  EXPECT_EQ(cache.cached_prefix(tokens, "", 80), 0u);
}

TEST(WindowPartsTest, TheStoreKeepsPagesWithAndWithoutTheirWindowPart) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "strata-window-store-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  PageKey root;
  root.bytes.fill(3);
  std::vector<int32_t> tokens(40);
  std::iota(tokens.begin(), tokens.end(), 9);
  {
    KvCache cache(window_shape(), f32(16, 16));
    cache.enable_prefix_cache(
        root, std::move(PrefixStore::open(dir.string(), root, window_shape())).value());
    cache.attach_prefix(0, tokens, "", 0);
    for (size_t to = 1; to <= 40; ++to) compute(cache, 0, to, tokens);
    cache.remove(0);  // pages 0-1 without window parts, 2-4 with them: all saved
  }
  KvCache restarted(window_shape(), f32(16, 16));
  restarted.enable_prefix_cache(
      root, std::move(PrefixStore::open(dir.string(), root, window_shape())).value());
  EXPECT_EQ(restarted.loaded_pages().loaded, 5u);
  EXPECT_EQ(restarted.cached_prefix(tokens, "", 40), 40u);
  const size_t n = restarted.attach_prefix(1, tokens, "", 40);
  ASSERT_EQ(n, 40u);
  const std::span<const PageId> pages = restarted.page_table(1);
  EXPECT_FALSE(restarted.pool().has_window(pages[1]));
  EXPECT_TRUE(restarted.pool().has_window(pages[2]));
  EXPECT_EQ(first_value(restarted, pages[4], 3), value_of(4 * kPage, 3, 0));
  EXPECT_EQ(first_value(restarted, pages[0], 2), value_of(0, 2, 0));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata::kv
