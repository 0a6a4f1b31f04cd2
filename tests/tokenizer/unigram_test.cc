// Unigram (T5) on a hand-built vocabulary: Viterbi picks the best total score (not the longest
// piece), unknown characters collapse into one <unk>, and the precompiled charsmap rewrites text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

const std::string kSpace = "\xE2\x96\x81";

VocabSpec t5_spec() {
  VocabSpec spec;
  spec.model = "t5";
  spec.tokens = {"<pad>", "</s>", "<unk>", kSpace, kSpace + "he",    "llo",       kSpace + "hello",
                 "h",     "e",    "l",     "o",    kSpace + "world", kSpace + "y"};
  spec.scores = {0, 0, 0, -2, -3, -3, -7, -5, -5, -5, -5, -4, -1};
  spec.types.assign(spec.tokens.size(), TokenType::kNormal);
  spec.types[0] = TokenType::kControl;
  spec.types[1] = TokenType::kControl;
  spec.types[2] = TokenType::kUnknown;
  spec.pad = 0;
  spec.eos = 1;
  spec.unk = 2;
  return spec;
}

std::unique_ptr<Tokenizer> build(VocabSpec spec) {
  auto tokenizer = Tokenizer::from_spec(std::move(spec));
  EXPECT_TRUE(tokenizer.ok()) << (tokenizer.ok() ? "" : tokenizer.error().message);
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

TEST(Unigram, ViterbiPrefersBestTotalScore) {
  auto tokenizer = build(t5_spec());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->model_name(), "t5");
  EXPECT_TRUE(tokenizer->add_eos());
  EXPECT_FALSE(tokenizer->add_bos());
  // "▁hello" alone scores -7; "▁he" + "llo" scores -6 and wins.
  EXPECT_EQ(tokenizer->encode("hello", false, false), (std::vector<TokenId>{4, 5}));
  EXPECT_EQ(tokenizer->encode("hello world", true, false), (std::vector<TokenId>{4, 5, 11, 1}));
  EXPECT_EQ(tokenizer->decode(std::vector<TokenId>{4, 5, 11, 1}), "hello world");
}

TEST(Unigram, ConsecutiveUnknownCharactersBecomeOneUnknownToken) {
  auto tokenizer = build(t5_spec());
  ASSERT_NE(tokenizer, nullptr);
  // "▁hello▁中中": ▁he llo ▁ and one <unk> for both ideographs.
  EXPECT_EQ(tokenizer->encode("hello 中中", false, false), (std::vector<TokenId>{4, 5, 3, 2}));
}

TEST(Unigram, RemoveExtraWhitespacesCollapsesRuns) {
  VocabSpec spec = t5_spec();
  spec.remove_extra_whitespaces = true;
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("  hello   world  ", false, false), (std::vector<TokenId>{4, 5, 11}));
}

// A precompiled charsmap with the single rule "x" -> "y": root BASE 0x100; the child for 'x'
// (0x78) at 0x100 ^ 0x78 = 0x178 is a leaf with BASE 1; its value unit at 0x179 holds offset 0
// into the replacement pool "y\0".
std::vector<uint8_t> x_to_y_charsmap() {
  std::vector<uint32_t> units(0x17A, 0);
  units[0] = 0x100u << 10;
  units[0x178] = 0x78u | (1u << 8) | (1u << 10);
  units[0x179] = 1u << 31;
  std::vector<uint8_t> blob(4 + units.size() * 4);
  const uint32_t size = static_cast<uint32_t>(units.size() * 4);
  for (int i = 0; i < 4; ++i) blob[i] = static_cast<uint8_t>(size >> (8 * i));
  for (size_t u = 0; u < units.size(); ++u) {
    for (int i = 0; i < 4; ++i) blob[4 + 4 * u + i] = static_cast<uint8_t>(units[u] >> (8 * i));
  }
  blob.push_back('y');
  blob.push_back('\0');
  return blob;
}

TEST(Unigram, PrecompiledCharsmapRewritesMatchedPrefixes) {
  VocabSpec spec = t5_spec();
  spec.precompiled_charsmap = x_to_y_charsmap();
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("x", false, false), (std::vector<TokenId>{12}));  // "▁y"
  EXPECT_EQ(tokenizer->encode("hello", false, false), (std::vector<TokenId>{4, 5}));
}

TEST(Unigram, MalformedCharsmapIsAnError) {
  VocabSpec spec = t5_spec();
  spec.precompiled_charsmap = {0xFF, 0xFF, 0x00, 0x00, 1, 2, 3};
  auto tokenizer = Tokenizer::from_spec(std::move(spec));
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.error().code, ErrorCode::kInvalidFile);
}

TEST(Unigram, ArbitraryBytesGiveValidIds) {
  VocabSpec spec = t5_spec();
  spec.precompiled_charsmap = x_to_y_charsmap();
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  uint32_t state = 7;
  for (int round = 0; round < 100; ++round) {
    std::string text;
    for (int i = 0; i < round % 23; ++i) {
      state = state * 1664525u + 1013904223u;  // LCG: deterministic pseudo-random bytes
      text.push_back(static_cast<char>(state >> 24));
    }
    for (TokenId id : tokenizer->encode(text, true, true)) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, static_cast<TokenId>(tokenizer->n_vocab()));
    }
  }
}

}  // namespace
}  // namespace strata::tokenizer
