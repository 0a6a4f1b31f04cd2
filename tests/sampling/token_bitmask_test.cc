#include "sampling/token_bitmask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace strata::sampling {
namespace {

TEST(TokenBitmaskTest, AllowAndForbidSingleTokens) {
  TokenBitmask mask(100, /*allowed=*/false);
  EXPECT_EQ(mask.words().size(), 4u);
  EXPECT_EQ(mask.count_allowed(), 0u);
  mask.allow(0);
  mask.allow(33);
  mask.allow(99);
  EXPECT_TRUE(mask.is_allowed(0));
  EXPECT_TRUE(mask.is_allowed(33));
  EXPECT_TRUE(mask.is_allowed(99));
  EXPECT_FALSE(mask.is_allowed(1));
  EXPECT_FALSE(mask.is_allowed(100));  // past the vocabulary
  EXPECT_FALSE(mask.is_allowed(-1));
  EXPECT_EQ(mask.count_allowed(), 3u);
  // Layout: bit id % 32 of word id / 32.
  EXPECT_EQ(mask.words()[1], 1u << 1);
  EXPECT_EQ(mask.words()[3], 1u << 3);
  mask.forbid(33);
  EXPECT_FALSE(mask.is_allowed(33));
  EXPECT_EQ(mask.count_allowed(), 2u);
}

TEST(TokenBitmaskTest, AllowAllLeavesPaddingBitsClear) {
  TokenBitmask mask(100, /*allowed=*/true);
  EXPECT_EQ(mask.count_allowed(), 100u);
  EXPECT_EQ(mask.words()[3], 0xFu);  // ids 96..99
  mask.forbid_all();
  EXPECT_EQ(mask.count_allowed(), 0u);
  mask.allow_all();
  EXPECT_EQ(mask.count_allowed(), 100u);
}

TEST(TokenBitmaskTest, ApplyBansExactlyTheDisallowedTokens) {
  constexpr size_t kVocab = 77;
  TokenBitmask mask(kVocab, /*allowed=*/true);
  std::vector<bool> allowed(kVocab, true);
  for (int32_t id : {0, 5, 31, 32, 63, 64, 76}) {
    mask.forbid(id);
    allowed[static_cast<size_t>(id)] = false;
  }
  // Word 1 (ids 32..63) fully forbidden exercises the whole-word path.
  for (int32_t id = 32; id < 64; ++id) {
    mask.forbid(id);
    allowed[static_cast<size_t>(id)] = false;
  }
  std::vector<float> logits(kVocab);
  for (size_t i = 0; i < kVocab; ++i) logits[i] = static_cast<float>(i) * 0.5f - 10.0f;
  std::vector<float> original = logits;
  apply_token_bitmask(logits, mask);
  for (size_t i = 0; i < kVocab; ++i) {
    if (allowed[i]) {
      EXPECT_EQ(logits[i], original[i]) << i;
    } else {
      EXPECT_EQ(logits[i], -INFINITY) << i;
    }
  }
}

TEST(TokenBitmaskTest, TokensPastTheMaskAreBanned) {
  TokenBitmask mask(40, /*allowed=*/true);
  std::vector<float> logits(48, 1.0f);
  apply_token_bitmask(logits, mask);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(logits[i], 1.0f) << i;
  for (size_t i = 40; i < 48; ++i) EXPECT_EQ(logits[i], -INFINITY) << i;

  // A mask larger than the logits touches only the logits it covers.
  TokenBitmask big(64, /*allowed=*/false);
  std::vector<float> short_logits(10, 2.0f);
  apply_token_bitmask(short_logits, big);
  for (float logit : short_logits) EXPECT_EQ(logit, -INFINITY);
}

}  // namespace
}  // namespace strata::sampling
