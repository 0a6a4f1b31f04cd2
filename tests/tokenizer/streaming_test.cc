// StreamingDetokenizer: multi-byte characters split across byte tokens come out whole.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::spm_spec;

// Byte tokens are ids 3 + byte in spm_spec.
TokenId byte_id(uint8_t byte) { return 3 + byte; }

TEST(StreamingDetokenizer, HoldsBackSplitChineseCharacter) {
  auto tokenizer = Tokenizer::from_spec(spm_spec({"\xE2\x96\x81"}, {0}));
  ASSERT_TRUE(tokenizer.ok());
  StreamingDetokenizer stream(**tokenizer);
  // U+4F60 '你' = E4 BD A0.
  EXPECT_EQ(stream.push(byte_id(0xE4)), "");
  EXPECT_EQ(stream.push(byte_id(0xBD)), "");
  EXPECT_EQ(stream.push(byte_id(0xA0)), "你");
  EXPECT_EQ(stream.push(byte_id('a')), "a");
  EXPECT_EQ(stream.finish(), "");
}

TEST(StreamingDetokenizer, HoldsBackSplitEmojiAndFlushesIncompleteTail) {
  auto tokenizer = Tokenizer::from_spec(spm_spec({"\xE2\x96\x81"}, {0}));
  ASSERT_TRUE(tokenizer.ok());
  StreamingDetokenizer stream(**tokenizer);
  // U+1F999 '🦙' = F0 9F A6 99, then the first two bytes of another one.
  EXPECT_EQ(stream.push(byte_id('x')), "x");
  EXPECT_EQ(stream.push(byte_id(0xF0)), "");
  EXPECT_EQ(stream.push(byte_id(0x9F)), "");
  EXPECT_EQ(stream.push(byte_id(0xA6)), "");
  EXPECT_EQ(stream.push(byte_id(0x99)), "🦙");
  EXPECT_EQ(stream.push(byte_id(0xF0)), "");
  EXPECT_EQ(stream.push(byte_id(0x9F)), "");
  EXPECT_EQ(stream.finish(), "\xF0\x9F");
  EXPECT_EQ(stream.finish(), "");
}

TEST(StreamingDetokenizer, PassesThroughBytesThatCannotComplete) {
  auto tokenizer = Tokenizer::from_spec(spm_spec({"\xE2\x96\x81"}, {0}));
  ASSERT_TRUE(tokenizer.ok());
  StreamingDetokenizer stream(**tokenizer);
  EXPECT_EQ(stream.push(byte_id(0xFF)), "\xFF");  // never a UTF-8 lead byte
  EXPECT_EQ(stream.push(byte_id(0xE0)), "");
  EXPECT_EQ(stream.push(byte_id(0x80)),
            "\xE0\x80");                          // E0 80 is an overlong prefix: cannot complete
  EXPECT_EQ(stream.push(byte_id(0xBF)), "\xBF");  // stray continuation byte
}

// With real vocabularies: every chunk is valid UTF-8 and the chunks add up to decode().
void check_stream(const Tokenizer& tokenizer, const std::string& text) {
  const std::vector<TokenId> ids = tokenizer.encode(text, false, false);
  StreamingDetokenizer stream(tokenizer);
  std::string streamed;
  size_t held_back = 0;
  for (TokenId id : ids) {
    const std::string chunk = stream.push(id);
    EXPECT_EQ(utf8_valid_prefix(chunk), chunk.size()) << "token " << id;
    if (chunk.empty()) ++held_back;
    streamed += chunk;
  }
  streamed += stream.finish();
  EXPECT_EQ(streamed, tokenizer.decode(ids));
  EXPECT_GT(held_back, 0u) << "the text should split some character across tokens";
}

const std::string kMixedText =
    "Hi 🦙 and 🚀! 我想在apple工作 😶‍🌫️ ✅ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢";

TEST(StreamingDetokenizer, ByteFallbackTokensOfLlamaSpm) {
  auto tokenizer = load_tokenizer(testing::kVocabDir + "ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tokenizer, nullptr);
  check_stream(*tokenizer, kMixedText);
}

TEST(StreamingDetokenizer, ByteLevelTokensOfGpt2) {
  auto tokenizer = load_tokenizer(testing::kVocabDir + "ggml-vocab-gpt-2.gguf");
  ASSERT_NE(tokenizer, nullptr);
  check_stream(*tokenizer, kMixedText);
}

}  // namespace
}  // namespace strata::tokenizer
