#include "sampling/candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace strata::sampling {
namespace {

std::vector<Candidate> from_logits(const std::vector<float>& logits) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < logits.size(); ++i) out.push_back({static_cast<int32_t>(i), logits[i]});
  return out;
}

std::vector<int32_t> ids(const std::vector<Candidate>& candidates) {
  std::vector<int32_t> out;
  for (const Candidate& c : candidates) out.push_back(c.id);
  return out;
}

// The kept ids in increasing order, for stages whose output order is not best-first.
std::vector<int32_t> id_set(const std::vector<Candidate>& candidates) {
  std::vector<int32_t> out = ids(candidates);
  std::sort(out.begin(), out.end());
  return out;
}

// Pseudo-random logits in [-10, 10) from a 64-bit LCG, with deliberate ties every 97th id.
std::vector<Candidate> lcg_candidates(size_t n, uint64_t seed) {
  std::vector<float> logits(n);
  uint64_t state = seed;
  for (size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    logits[i] = static_cast<float>(state >> 40) / static_cast<float>(1u << 24) * 20.0f - 10.0f;
    if (i % 97 == 0 && i > 0) logits[i] = logits[i - 1];
  }
  return from_logits(logits);
}

// Reference nucleus: sort everything best-first, keep until the mass reaches top_p.
std::vector<int32_t> reference_top_p(std::vector<Candidate> c, float top_p) {
  std::sort(c.begin(), c.end(), ranks_before);
  double total = 0.0;
  for (const Candidate& x : c) total += std::exp(static_cast<double>(x.logit - c[0].logit));
  double mass = 0.0;
  size_t keep = 0;
  while (keep < c.size()) {
    mass += std::exp(static_cast<double>(c[keep++].logit - c[0].logit));
    if (mass >= top_p * total) break;
  }
  c.resize(keep);
  return id_set(c);
}

// Logits ln(p) give softmax probabilities p exactly up to rounding.
std::vector<Candidate> from_probabilities(const std::vector<double>& probabilities) {
  std::vector<float> logits;
  for (double p : probabilities) logits.push_back(static_cast<float>(std::log(p)));
  return from_logits(logits);
}

TEST(TopKTest, KeepsTheKBestSortedWithLowerIdWinningTies) {
  auto c = from_logits({1.0f, 5.0f, 3.0f, 4.0f, 2.0f});
  keep_top_k(c, 2);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 3}));

  c = from_logits({2.0f, 7.0f, 2.0f, 2.0f});
  keep_top_k(c, 3);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 0, 2}));
}

TEST(TopKTest, ZeroOrLargeKChangesNothing) {
  const auto original = from_logits({1.0f, 5.0f, 3.0f});
  auto c = original;
  keep_top_k(c, 0);
  EXPECT_EQ(ids(c), ids(original));
  keep_top_k(c, 3);
  EXPECT_EQ(ids(c), ids(original));
  keep_top_k(c, 10);
  EXPECT_EQ(ids(c), ids(original));
}

TEST(TopKTest, SelectsFromALargeVocabulary) {
  // Logit of id i is a permutation-like function, so the best k ids are known in advance.
  constexpr int32_t kVocab = 131072;
  std::vector<Candidate> c;
  for (int32_t i = 0; i < kVocab; ++i) {
    c.push_back({i, static_cast<float>((i * 7919) % kVocab)});
  }
  keep_top_k(c, 5);
  ASSERT_EQ(c.size(), 5u);
  for (int32_t rank = 0; rank < 5; ++rank) {
    EXPECT_EQ(c[static_cast<size_t>(rank)].logit, static_cast<float>(kVocab - 1 - rank));
    EXPECT_EQ((c[static_cast<size_t>(rank)].id * 7919) % kVocab, kVocab - 1 - rank);
  }
}

TEST(TopPTest, KeepsTheShortestPrefixReachingTheMass) {
  // Sorted probabilities 0.5, 0.3, 0.15, 0.05 placed at ids 2, 0, 3, 1.
  const auto original = from_probabilities({0.3, 0.05, 0.5, 0.15});
  auto c = original;
  keep_top_p(c, 0.4f);  // 0.5 >= 0.4
  EXPECT_EQ(id_set(c), (std::vector<int32_t>{2}));
  c = original;
  keep_top_p(c, 0.75f);  // 0.5 + 0.3 = 0.8 >= 0.75
  EXPECT_EQ(id_set(c), (std::vector<int32_t>{0, 2}));
  c = original;
  keep_top_p(c, 0.85f);  // 0.95 >= 0.85
  EXPECT_EQ(id_set(c), (std::vector<int32_t>{0, 2, 3}));
  c = original;
  keep_top_p(c, 0.97f);
  EXPECT_EQ(id_set(c), (std::vector<int32_t>{0, 1, 2, 3}));
  c = original;
  keep_top_p(c, 1.0f);  // off: unchanged, unsorted
  EXPECT_EQ(ids(c), ids(original));
}

TEST(TopPTest, NucleusBeyondTheFirstChunkOfALargeVocabulary) {
  // 1000 equal logits: the mass of the first n is n / 1000, so top_p = 0.6005 keeps 601
  // candidates (600 would be 0.6 < 0.6005), past the first 256-entry sorting chunk.
  auto c = from_logits(std::vector<float>(1000, 0.0f));
  keep_top_p(c, 0.6005f);
  ASSERT_EQ(c.size(), 601u);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].id, static_cast<int32_t>(i));
}

TEST(TopPTest, MatchesAFullSortOnALargeVocabulary) {
  const auto original = lcg_candidates(128256, 3);
  for (float top_p : {0.001f, 0.1f, 0.5f, 0.9f, 0.999f}) {
    auto c = original;
    keep_top_p(c, top_p);
    EXPECT_EQ(id_set(c), reference_top_p(original, top_p)) << top_p;
  }
  // A peaked distribution: a few high logits above a flat floor.
  auto peaked = original;
  for (size_t i = 0; i < peaked.size(); i += 10007)
    peaked[i].logit = 25.0f - static_cast<float>(i) * 1e-4f;
  for (float top_p : {0.5f, 0.95f}) {
    auto c = peaked;
    keep_top_p(c, top_p);
    EXPECT_EQ(id_set(c), reference_top_p(peaked, top_p)) << top_p;
  }
}

TEST(TopKTest, MatchesAFullSortOnALargeVocabulary) {
  const auto original = lcg_candidates(128256, 4);
  auto sorted = original;
  std::sort(sorted.begin(), sorted.end(), ranks_before);
  // 40 and 1024 take the heap path, 1025 and 20000 nth_element.
  for (int32_t k : {1, 40, 1024, 1025, 20000}) {
    auto c = original;
    keep_top_k(c, k);
    ASSERT_EQ(c.size(), static_cast<size_t>(k));
    EXPECT_EQ(ids(c), ids({sorted.begin(), sorted.begin() + k})) << k;
  }
}

TEST(MinPTest, KeepsTokensAtLeastMinPTimesTheBest) {
  const auto original = from_probabilities({0.3, 0.05, 0.5, 0.15});
  auto c = original;
  keep_min_p(c, 0.2f);  // p >= 0.1: ids 0, 2, 3, in their original order
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 2, 3}));
  c = original;
  keep_min_p(c, 0.5f);  // p >= 0.25: ids 0, 2
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 2}));
  c = original;
  keep_min_p(c, 1.0f);  // only the best
  EXPECT_EQ(ids(c), (std::vector<int32_t>{2}));
  c = original;
  keep_min_p(c, 0.0f);
  EXPECT_EQ(ids(c), ids(original));
}

}  // namespace
}  // namespace strata::sampling
