// Pre-tokenizer regex recipes: every name compiles, and splits worked out by hand from the regexes.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::tokenizer {
namespace {

std::vector<std::string> split(std::string_view name, std::string_view text) {
  auto recipe = find_pre_tokenizer_recipe(name);
  EXPECT_TRUE(recipe.ok()) << name;
  if (!recipe.ok()) return {};
  auto pre = PreTokenizer::compile(recipe->patterns);
  EXPECT_TRUE(pre.ok()) << name << ": " << (pre.ok() ? "" : pre.error().message);
  if (!pre.ok()) return {};
  std::vector<std::string_view> pieces;
  (*pre)->split(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

TEST(PreTokenizer, EveryKnownNameCompiles) {
  for (std::string_view name :
       {"default", "",           "llama3",       "llama-bpe",      "gpt-2",       "mpt",
        "olmo",    "falcon",     "deepseek-llm", "deepseek-coder", "deepseek-v3", "starcoder",
        "refact",  "command-r",  "smollm",       "qwen2",          "qwen35",      "stablelm2",
        "phi-2",   "gemma4",     "dbrx",         "gpt-4o",         "tekken",      "poro-chat",
        "viking",  "chatglm-bpe"}) {
    auto recipe = find_pre_tokenizer_recipe(name);
    ASSERT_TRUE(recipe.ok()) << name;
    auto pre = PreTokenizer::compile(recipe->patterns);
    EXPECT_TRUE(pre.ok()) << name << ": " << (pre.ok() ? "" : pre.error().message);
  }
  EXPECT_FALSE(find_pre_tokenizer_recipe("not-a-tokenizer").ok());
  EXPECT_FALSE(PreTokenizer::compile({"(unclosed"}).ok());
}

TEST(PreTokenizer, Gpt2WordsContractionsAndWhitespace) {
  // "  test": \s+(?!\S) backs off to leave one space for " test".
  EXPECT_EQ(split("gpt-2", "Hello world's 123  test\n"),
            (std::vector<std::string>{"Hello", " world", "'s", " 123", " ", " test", "\n"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThree) {
  EXPECT_EQ(split("llama3", "12345 abc"), (std::vector<std::string>{"123", "45", " abc"}));
  EXPECT_EQ(split("qwen2", "123"), (std::vector<std::string>{"1", "2", "3"}));
}

TEST(PreTokenizer, DeepseekLlmAppliesItsListInTurn) {
  // [\r\n] isolates the newline, the CJK range then the digit rule split the rest.
  EXPECT_EQ(split("deepseek-llm", "Hello\n世界123"),
            (std::vector<std::string>{"Hello", "\n", "世界", "123"}));
}

TEST(PreTokenizer, InvalidUtf8BytesBecomeOwnPieces) {
  EXPECT_EQ(split("gpt-2",
                  "ab\xFF"
                  "cd"),
            (std::vector<std::string>{"ab", "\xFF", "cd"}));
  EXPECT_EQ(split("llama3", "\xC3"), (std::vector<std::string>{"\xC3"}));
}

TEST(PreTokenizer, CoversTextExactly) {
  const std::string text = "  Mixed: 😶‍🌫️ 我想 3.14159 'LL x\t\r\n\n  end  ";
  for (std::string_view name : {"default", "llama3", "deepseek-llm", "deepseek-coder", "falcon",
                                "starcoder", "qwen35", "deepseek-v3", "gpt-4o", "gemma4"}) {
    std::string joined;
    for (const std::string& piece : split(name, text)) {
      EXPECT_FALSE(piece.empty()) << name;
      joined += piece;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

}  // namespace
}  // namespace strata::tokenizer
