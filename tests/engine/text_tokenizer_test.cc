// TextTokenizer: the tokenizer of any GGUF file without its weights, equal to the engine's.
#include <gtest/gtest.h>

#include "strata/tokenizer.h"

namespace strata {
namespace {

TEST(TextTokenizerTest, MatchesTheEnginesTokenizer) {
  Result<std::unique_ptr<TextTokenizer>> t =
      TextTokenizer::load("../shared/models/stories260K.gguf");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EngineOptions options;
  options.model_path = "../shared/models/stories260K.gguf";
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  ASSERT_TRUE(engine.ok());
  const std::string text = "Once upon a time, Lily saw 3 big dogs.";
  const std::vector<TokenId> ids = (*t)->tokenize(text, true, false);
  EXPECT_EQ(ids, (*engine)->tokenize(text, true, false));
  EXPECT_EQ((*t)->detokenize(ids), (*engine)->detokenize(ids));
  EXPECT_EQ((*t)->n_vocab(), (*engine)->model().n_vocab);
}

TEST(TextTokenizerTest, LoadsVocabularyOnlyFilesOfAnyArchitecture) {
  // gpt-2's file has no weights and an architecture the engine does not run.
  Result<std::unique_ptr<TextTokenizer>> t =
      TextTokenizer::load("../shared/testdata/vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const std::vector<TokenId> ids = (*t)->tokenize("Hello world", false, false);
  EXPECT_EQ(ids, (std::vector<TokenId>{15496, 995}));  // GPT-2's ids for "Hello", " world"
  EXPECT_EQ((*t)->detokenize(ids), "Hello world");
  EXPECT_FALSE(TextTokenizer::load("/nonexistent.gguf").ok());
}

}  // namespace
}  // namespace strata
