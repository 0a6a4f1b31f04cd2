// stories260K (SentencePiece, 512 tokens) against llama.cpp's reference outputs in
// ../shared/models/reference/*.json: prompt ids with and without BOS, per-token pieces and the
// decoded continuation.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::read_binary;

const std::string kModel = "../shared/models/stories260K.gguf";
const std::string kReferenceDir = "../shared/models/reference/";

std::vector<std::string> reference_cases() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(kReferenceDir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(Stories260K, LoadsVocabulary) {
  auto tokenizer = load_tokenizer(kModel);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->n_vocab(), 512u);
  EXPECT_EQ(tokenizer->model_name(), "llama");
  EXPECT_EQ(tokenizer->bos(), 1);
  EXPECT_EQ(tokenizer->eos(), 2);
  EXPECT_TRUE(tokenizer->add_bos());  // no add_bos_token key: SentencePiece default
  EXPECT_FALSE(tokenizer->add_eos());
  EXPECT_TRUE(tokenizer->is_eog(2));
  EXPECT_FALSE(tokenizer->is_eog(1));
  EXPECT_EQ(tokenizer->token_type(1), TokenType::kControl);
  EXPECT_EQ(tokenizer->token_text(1), "<s>");
  EXPECT_EQ(tokenizer->token_text(-1), "");
  EXPECT_EQ(tokenizer->token_to_piece(1), "");
  EXPECT_EQ(tokenizer->token_to_piece(1, true), "<s>");
  EXPECT_EQ(tokenizer->token_to_piece(13), "\n");  // <0x0A>
}

TEST(Stories260K, MatchesLlamaCppReference) {
  auto tokenizer = load_tokenizer(kModel);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<std::string> cases = reference_cases();
  ASSERT_GE(cases.size(), 4u);
  for (const std::string& path : cases) {
    SCOPED_TRACE(path);
    const nlohmann::json ref = nlohmann::json::parse(read_binary(path));
    const std::string prompt = ref.at("prompt").get<std::string>();
    EXPECT_EQ(tokenizer->encode(prompt, true, true),
              ref.at("prompt_tokens_with_bos").get<std::vector<TokenId>>());
    EXPECT_EQ(tokenizer->encode(prompt, false, true),
              ref.at("prompt_tokens_no_bos").get<std::vector<TokenId>>());
    const auto generated = ref.at("generated_token_ids").get<std::vector<TokenId>>();
    const auto pieces = ref.at("generated_token_pieces").get<std::vector<std::string>>();
    ASSERT_EQ(generated.size(), pieces.size());
    for (size_t i = 0; i < generated.size(); ++i) {
      EXPECT_EQ(tokenizer->token_to_piece(generated[i]), pieces[i]) << "token " << generated[i];
    }
    EXPECT_EQ(tokenizer->decode(generated), ref.at("generated_text").get<std::string>());
  }
}

TEST(Stories260K, ParseSpecialRecognisesControlTokens) {
  auto tokenizer = load_tokenizer(kModel);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<TokenId> plain = tokenizer->encode("Once upon a time", false, true);
  // With parsing, "<s>" and "</s>" become BOS / EOS and the text after a special token gets the
  // dummy-prefix space again (llama.cpp's rule), so it tokenizes exactly like a fresh prompt.
  std::vector<TokenId> expected = {1};
  expected.insert(expected.end(), plain.begin(), plain.end());
  expected.push_back(2);
  EXPECT_EQ(tokenizer->encode("<s>Once upon a time</s>", false, true), expected);
  // Without parsing they are ordinary text: no control ids appear.
  for (TokenId id : tokenizer->encode("<s>Once upon a time</s>", false, false)) {
    EXPECT_NE(id, 1);
    EXPECT_NE(id, 2);
  }
  // decode undoes the dummy prefix only after a leading BOS.
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("Once upon a time", true, false)),
            "Once upon a time");
  EXPECT_EQ(tokenizer->decode(plain), " Once upon a time");
}

}  // namespace
}  // namespace strata::tokenizer
