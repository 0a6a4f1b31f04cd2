// Real vocabularies: token bytes as strata's streaming detokenizer emits them, and masks along a
// JSON document on gpt-2 (50K) and deepseek-llm (102K) equal the naive per-token check.
#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "test_grammars.h"
#include "tokenizer/tokenizer.h"

namespace strata::grammar {
namespace {

std::unique_ptr<tokenizer::Tokenizer> load(const std::string& name) {
  auto file = gguf::File::open("../shared/testdata/vocab/ggml-vocab-" + name + ".gguf");
  EXPECT_TRUE(file.ok());
  if (!file.ok()) return nullptr;
  auto tok = tokenizer::Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tok.ok());
  return tok.ok() ? std::move(*tok) : nullptr;
}

constexpr std::string_view kDocument =
    "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"tags\": [\"math\", \"caf\xC3\xA9\"],\n"
    "  \"note\": \"line\\nbreak \\u00e9\", \"ok\": true, \"ratio\": -0.25e3, \"none\": null}";

TEST(TokenVocabulary, PiecesAreWhatTheStreamingDetokenizerEmits) {
  for (const char* name : {"gpt-2", "deepseek-llm", "llama-spm"}) {
    auto tok = load(name);
    ASSERT_NE(tok, nullptr);
    auto vocab = TokenVocabulary::from_tokenizer(*tok);
    ASSERT_EQ(vocab->size(), tok->n_vocab());
    const auto ids = tok->encode(kDocument, /*add_special=*/false, /*parse_special=*/false);
    tokenizer::StreamingDetokenizer detok(*tok);
    std::string streamed, pieces;
    for (auto id : ids) {
      streamed += detok.push(id);
      pieces += vocab->piece(id);
    }
    streamed += detok.finish();
    EXPECT_EQ(pieces, streamed) << name;
    for (size_t id = 0; id < tok->n_vocab(); ++id) {
      const auto t = static_cast<tokenizer::TokenId>(id);
      if (tok->token_type(t) == tokenizer::TokenType::kControl) {
        EXPECT_TRUE(vocab->piece(t).empty()) << name << " " << id;
      }
      EXPECT_EQ(vocab->is_eog(t), tok->is_eog(t));
    }
  }
  auto spm = load("llama-spm");
  ASSERT_NE(spm, nullptr);
  auto vocab = TokenVocabulary::from_tokenizer(*spm);
  EXPECT_EQ(vocab->piece(spm->encode("\n", false, false).back()), "\n");  // <0x0A>
  const auto hello = spm->encode(" Hello", false, false);
  ASSERT_FALSE(hello.empty());
  EXPECT_EQ(vocab->piece(hello[0])[0], ' ');  // U+2581 becomes a space
}

void check_masks_along_document(const std::string& name) {
  auto tok = load(name);
  ASSERT_NE(tok, nullptr);
  auto vocab = TokenVocabulary::from_tokenizer(*tok);
  auto g = testing::compile_or_die(testing::kJsonGrammar, vocab);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  const auto ids = tok->encode(kDocument, false, false);
  const size_t n = vocab->size();
  std::vector<uint32_t> words((n + 31) / 32);
  for (size_t step = 0; step <= ids.size(); ++step) {
    m.fill_next_token_bitmask(words);
    size_t mismatches = 0;
    for (size_t id = 0; id < n; ++id) {
      const bool fast = (words[id / 32] >> (id % 32)) & 1;
      bool slow = m.accept_token(static_cast<int32_t>(id));
      if (slow) m.rollback(1);
      if (fast != slow && ++mismatches <= 5) {
        ADD_FAILURE() << name << " step " << step << " token " << id << " '" << vocab->piece(id)
                      << "' fast=" << fast << " naive=" << slow;
      }
    }
    ASSERT_EQ(mismatches, 0u);
    if (step == ids.size()) break;
    ASSERT_TRUE((words[ids[step] / 32] >> (ids[step] % 32)) & 1) << name << " step " << step;
    ASSERT_TRUE(m.accept_token(ids[step]));
  }
  EXPECT_TRUE(m.can_end());
  for (int32_t eog : vocab->eog_ids()) EXPECT_TRUE((words[eog / 32] >> (eog % 32)) & 1);
}

TEST(VocabMasks, Gpt2JsonDocumentMatchesNaiveCheck) { check_masks_along_document("gpt-2"); }
TEST(VocabMasks, DeepseekJsonDocumentMatchesNaiveCheck) {
  check_masks_along_document("deepseek-llm");
}

}  // namespace
}  // namespace strata::grammar
