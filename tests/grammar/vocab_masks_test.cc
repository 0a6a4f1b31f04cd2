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

void check_masks_once(const tokenizer::Tokenizer& tok,
                      const std::shared_ptr<const TokenVocabulary>& vocab,
                      const std::shared_ptr<const CompiledGrammar>& g, const std::string& name,
                      std::string_view document) {
  GrammarMatcher m(g);
  const auto ids = tok.encode(document, false, false);
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

// Masks before each token of `document` equal the naive check (feed every token, roll back).
// Each pass is a new matcher on the same compiled grammar: later passes read the checks the
// earlier ones shared through the grammar (CompiledGrammar::shared_leftovers).
void check_masks_along_document(const std::string& name, std::string_view grammar,
                                std::string_view document, int passes = 1) {
  auto tok = load(name);
  ASSERT_NE(tok, nullptr);
  auto vocab = TokenVocabulary::from_tokenizer(*tok);
  auto g = testing::compile_or_die(grammar, vocab);
  ASSERT_NE(g, nullptr);
  for (int pass = 0; pass < passes; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    check_masks_once(*tok, vocab, g, name, document);
  }
}
TEST(VocabMasks, Gpt2JsonDocumentMatchesNaiveCheck) {
  check_masks_along_document("gpt-2", testing::kJsonGrammar, kDocument);
}
TEST(VocabMasks, DeepseekJsonDocumentMatchesNaiveCheck) {
  check_masks_along_document("deepseek-llm", testing::kJsonGrammar, kDocument);
}

// Shapes that JSON Schema writes and that leave nearly every token of a 50K-102K vocabulary to
// the mask-time check (issue 20's slow masks): a small rule called mid-sequence (the first
// character of a string with minLength 1), a counted group, and a string with a long maxLength
// (blocks of 1000 characters). Whatever makes them fast must keep them exact.
constexpr std::string_view kMidSequenceCalls = R"gbnf(
root ::= "{" ws "\"a\":" ws s1 "," ws "\"b\":" ws hex "," ws "\"c\":" ws long ws "}"
s1 ::= "\"" char char* "\""
hex ::= "\"" [I] ([0-9a-f] | "\\\\"){40} "\""
long ::= "\"" (block{0,2} char{0,999} | block{3} char{0,10}) "\""
block ::= char{1000}
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
ws ::= [ \n]{0,4}
)gbnf";

constexpr std::string_view kMidSequenceDocument =
    "{\"a\": \"Ada Lovelace\", \"b\": \"I0123456789abcdef0123456789abcdef01234567\", "
    "\"c\": \"a longer string, with words and punctuation: 1815, caf\xC3\xA9.\" }";

TEST(VocabMasks, MidSequenceCallsMatchNaiveCheck) {
  check_masks_along_document("gpt-2", kMidSequenceCalls, kMidSequenceDocument, /*passes=*/2);
}

// Strings with length bounds, where deepseek-llm's tokens of 33-128 bytes (runs of '-', '=',
// ' ', '/', CJK phrases) fit or do not fit in what is left, and two strings whose character
// sets differ only in bytes of such tokens ("//-----..." fits the first). Those tokens are keyed
// by signatures over their own bytes (TokenSignatures), which must not call two positions alike
// that differ for them. Masks at every step, from 0 to 100 characters into a string.
constexpr std::string_view kLongTokens = R"gbnf(
root ::= "{" ws "\"a\":" ws "\"" char{0,100} "\"," ws "\"b\":" ws "\"" char{2,70} "\"," ws cd
cd ::= "\"c\":" ws "\"" [-/]{0,80} "\"," ws "\"d\":" ws "\"" [/=]{0,80} "\"" ws "}"
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
ws ::= [ \n]{0,40}
)gbnf";

TEST(VocabMasks, LongTokensNearLengthBoundsMatchNaiveCheck) {
  const std::string document = "{\"a\": \"" + std::string(50, '-') + " and " +
                               std::string(40, '=') + "\", \"b\": \"" + std::string(64, ' ') +
                               "x\", \"c\": \"//" + std::string(30, '-') + "\", \"d\": \"//" +
                               std::string(30, '=') + "\"" + std::string(30, ' ') + "}";
  check_masks_along_document("deepseek-llm", kLongTokens, document);
}

}  // namespace
}  // namespace strata::grammar
