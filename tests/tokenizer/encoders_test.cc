// SentencePiece and byte-level BPE on hand-built vocabularies, with expectations worked out by
// hand from the algorithms' definitions (highest score / lowest rank first, left-most on ties).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

using testing::spm_piece;
using testing::spm_spec;

const std::string kSpace = "\xE2\x96\x81";  // U+2581

std::unique_ptr<Tokenizer> build(VocabSpec spec) {
  auto tokenizer = Tokenizer::from_spec(std::move(spec));
  EXPECT_TRUE(tokenizer.ok()) << (tokenizer.ok() ? "" : tokenizer.error().message);
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

TEST(SentencePiece, MergesHighestScoreFirstNotLeftToRight) {
  // "▁abc": candidates ▁a (-4), ab (-3), bc (-1.5). bc merges first, then a+bc = abc (-0.5);
  // the queued ▁a is stale by then. A left-to-right greedy would have produced ▁a, bc.
  auto tokenizer = build(spm_spec({kSpace, "a", "b", "c", "ab", "bc", kSpace + "a", "abc"},
                                  {-1, -2, -2, -2, -3, -1.5f, -4, -0.5f}));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("abc", false, false),
            (std::vector<TokenId>{spm_piece(0), spm_piece(7)}));
  EXPECT_EQ(tokenizer->encode("abc", true, false),
            (std::vector<TokenId>{1, spm_piece(0), spm_piece(7)}));
}

TEST(SentencePiece, EqualScoresMergeLeftMostPair) {
  auto tokenizer = build(spm_spec({kSpace, "a", "aa"}, {-1, -2, -1}));
  ASSERT_NE(tokenizer, nullptr);
  // "▁aaa": the pairs (a,a) at 1-2 and 2-3 tie; the left one wins, leaving "▁", "aa", "a".
  EXPECT_EQ(tokenizer->encode("aaa", false, false),
            (std::vector<TokenId>{spm_piece(0), spm_piece(2), spm_piece(1)}));
}

TEST(SentencePiece, PiecesSpanningWordsStillMerge) {
  // "a▁" has U+2581 after a letter, so words cannot be encoded separately: "▁a▁b" merges a+▁,
  // then a▁+b.
  auto tokenizer =
      build(spm_spec({kSpace, "a", "b", "a" + kSpace, "a" + kSpace + "b"}, {-1, -2, -2, -1, -1}));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("a b", false, false),
            (std::vector<TokenId>{spm_piece(0), spm_piece(4)}));
}

TEST(SentencePiece, UnknownCharactersFallBackToByteTokens) {
  auto tokenizer = build(spm_spec({kSpace, "a"}, {-1, -2}));
  ASSERT_NE(tokenizer, nullptr);
  // "é" = C3 A9 is not a piece: <0xC3> <0xA9> (ids 3 + byte). Spaces become ▁.
  EXPECT_EQ(tokenizer->encode("a é", false, false),
            (std::vector<TokenId>{spm_piece(0), spm_piece(1), spm_piece(0), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("a é", true, false)), "a é");
  EXPECT_EQ(tokenizer->token_to_piece(3 + 0x0A), "\n");
}

TEST(SentencePiece, WithoutDummyPrefixNoLeadingSpaceIsAdded) {
  VocabSpec spec = spm_spec({kSpace, "a"}, {-1, -2});
  spec.add_space_prefix = false;
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("a", false, false), (std::vector<TokenId>{spm_piece(1)}));
}

TEST(SpecialTokens, UserDefinedAlwaysSplitControlOnlyWhenParsing) {
  VocabSpec spec = spm_spec({kSpace, "x", "<u>", "<c>"}, {-1, -2, 0, 0});
  spec.types[spm_piece(2)] = TokenType::kUserDefined;
  spec.types[spm_piece(3)] = TokenType::kControl;
  spec.add_space_prefix = false;
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("x<u>x", false, false),
            (std::vector<TokenId>{spm_piece(1), spm_piece(2), spm_piece(1)}));
  EXPECT_EQ(tokenizer->encode("x<c>", false, true),
            (std::vector<TokenId>{spm_piece(1), spm_piece(3)}));
  const std::vector<TokenId> unparsed = tokenizer->encode("x<c>", false, false);
  EXPECT_EQ(std::count(unparsed.begin(), unparsed.end(), spm_piece(3)), 0);
  EXPECT_EQ(tokenizer->decode(std::vector<TokenId>{spm_piece(3)}), "");
  EXPECT_EQ(tokenizer->decode(std::vector<TokenId>{spm_piece(3)}, true), "<c>");
}

TEST(SpecialTokens, LongerTokenWinsOverEarlierOverlappingOne) {
  // llama.cpp splits the longest special token out first: in "wxyz" that is "xyz" at 1, which
  // leaves "w" as text, although the shorter "wx" starts earlier.
  VocabSpec spec = spm_spec({"w", "wx", "xyz"}, {-1, 0, 0});
  spec.types[spm_piece(1)] = TokenType::kUserDefined;
  spec.types[spm_piece(2)] = TokenType::kUserDefined;
  spec.add_space_prefix = false;
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("wxyz", false, false),
            (std::vector<TokenId>{spm_piece(0), spm_piece(2)}));
  EXPECT_EQ(tokenizer->encode("wxwx", false, false),
            (std::vector<TokenId>{spm_piece(1), spm_piece(1)}));
}

TEST(SpecialTokens, Phi3SpecialTokensSwallowFollowingWhitespace) {
  // llama.cpp gives Phi-3's special tokens (chosen by general.name) rstrip, except <s>, <unk>
  // and <|endoftext|>, so the newline after <|user|> disappears.
  auto make = [](const std::string& name) {
    VocabSpec spec =
        spm_spec({kSpace, "H", "i", kSpace + "H", "<|user|>", "<|end|>"}, {-1, -2, -2, -1, 0, 0});
    spec.types[spm_piece(4)] = TokenType::kControl;
    spec.types[spm_piece(5)] = TokenType::kControl;
    spec.name = name;
    return build(std::move(spec));
  };
  auto phi3 = make("Phi-3 mini");
  auto other = make("Other");
  ASSERT_NE(phi3, nullptr);
  ASSERT_NE(other, nullptr);
  const std::vector<TokenId> expected = {spm_piece(4), spm_piece(3), spm_piece(2), spm_piece(5)};
  EXPECT_EQ(phi3->encode("<|user|>\n Hi<|end|>", false, true), expected);
  EXPECT_EQ(other->encode("<|user|>Hi<|end|>", false, true), expected);
  // Without the attribute the newline stays (as a byte token after the dummy-prefix ▁).
  EXPECT_EQ(other->encode("<|user|>\nHi<|end|>", false, true),
            (std::vector<TokenId>{spm_piece(4), spm_piece(0), 3 + '\n', spm_piece(1), spm_piece(2),
                                  spm_piece(5)}));
  // The BOS text keeps following whitespace.
  EXPECT_EQ(phi3->encode("<s> Hi", false, true),
            (std::vector<TokenId>{1, spm_piece(0), spm_piece(3), spm_piece(2)}));
}

// Byte-level BPE spec: the 256 GPT-2 alphabet characters (id = byte), then `extra` tokens.
VocabSpec bpe_spec(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  VocabSpec spec;
  spec.model = "gpt2";
  spec.pre = "gpt-2";
  ByteAlphabet alphabet;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(alphabet.encode(static_cast<uint8_t>(b)));
  for (const std::string& token : extra) spec.tokens.push_back(token);
  spec.merges = merges;
  return spec;
}

TEST(BytePairEncoding, LowestRankMergesFirst) {
  auto tokenizer = build(bpe_spec({"bc", "ab", "abc"}, {"b c", "a b", "a bc"}));
  ASSERT_NE(tokenizer, nullptr);
  // b+c has rank 0, then a+bc (rank 2); a+b (rank 1) never gets its chance.
  EXPECT_EQ(tokenizer->encode("abc", false, false), (std::vector<TokenId>{258}));
  auto other = build(bpe_spec({"ab", "bc"}, {"a b", "b c"}));
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->encode("abc", false, false), (std::vector<TokenId>{256, 'c'}));
}

TEST(BytePairEncoding, EqualRanksMergeLeftMostAndWordsStaySeparate) {
  auto tokenizer = build(bpe_spec({"aa"}, {"a a"}));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->encode("aaa", false, false), (std::vector<TokenId>{256, 'a'}));
  // The GPT-2 regex keeps " aa" as one piece: space (Ġ = byte 0x20's token), aa.
  EXPECT_EQ(tokenizer->encode("aa aa", false, false), (std::vector<TokenId>{256, ' ', 256}));
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("aa aa\n\xFF", false, false)), "aa aa\n\xFF");
}

TEST(BytePairEncoding, Gemma4RunsOnRawUtf8WithEscapedSpaces) {
  VocabSpec spec;
  spec.model = "gemma4";
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    spec.tokens.push_back(name);
    spec.types.push_back(TokenType::kByte);
  }
  for (const std::string& token : {kSpace, std::string("a"), std::string("b"), kSpace + "a"}) {
    spec.tokens.push_back(token);
    spec.types.push_back(TokenType::kNormal);
  }
  spec.merges = {kSpace + " a"};
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->pre_name(), "gemma4");
  // "a b" -> "a▁b": no merge applies; " a" -> "▁a" merges; "é" falls back to its bytes.
  EXPECT_EQ(tokenizer->encode("a b", false, false), (std::vector<TokenId>{257, 256, 258}));
  EXPECT_EQ(tokenizer->encode(" a\n\n", false, false), (std::vector<TokenId>{259, 0x0A, 0x0A}));
  EXPECT_EQ(tokenizer->encode("\xC3\xA9", false, false), (std::vector<TokenId>{0xC3, 0xA9}));
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(" a b\n\xC3\xA9", false, false)), " a b\n\xC3\xA9");
}

TEST(BytePairEncoding, RejectsUnknownPreTokenizerAndBadMerges) {
  VocabSpec spec = bpe_spec({}, {});
  spec.pre = "no-such-pre";
  auto unknown = Tokenizer::from_spec(spec);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnsupported);
  spec = bpe_spec({}, {"nospace"});
  auto bad = Tokenizer::from_spec(spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidFile);
  spec = bpe_spec({}, {});
  spec.scores = {1.0f};
  EXPECT_FALSE(Tokenizer::from_spec(spec).ok());
  VocabSpec empty;
  empty.model = "llama";
  EXPECT_FALSE(Tokenizer::from_spec(empty).ok());
  VocabSpec other = bpe_spec({}, {});
  other.model = "rwkv";
  EXPECT_FALSE(Tokenizer::from_spec(other).ok());
}

TEST(WordPiece, NormalizesSplitsAndMatchesLongestPieces) {
  VocabSpec spec;
  spec.model = "bert";
  spec.tokens = {"[PAD]",          "[UNK]",       "[CLS]",      "[SEP]",       kSpace + "hello",
                 kSpace + "world", kSpace + "!",  kSpace + ",", kSpace + "un", "aff",
                 "able",           kSpace + "ap", "fel",        kSpace + "中", kSpace + "unaff"};
  spec.types.assign(spec.tokens.size(), TokenType::kNormal);
  for (int i = 0; i < 4; ++i) spec.types[i] = TokenType::kControl;
  spec.unk = 1;
  spec.bos = 2;
  spec.sep = 3;
  auto tokenizer = build(std::move(spec));
  ASSERT_NE(tokenizer, nullptr);
  // Lower-cased, punctuation split off, whitespace (incl. tab and NBSP) separates words.
  EXPECT_EQ(tokenizer->encode("Hello,\tWORLD\xC2\xA0!", false, false),
            (std::vector<TokenId>{4, 7, 5, 6}));
  // Greedy longest match: ▁unaff + able (not ▁un + aff + able).
  EXPECT_EQ(tokenizer->encode("unaffable", false, false), (std::vector<TokenId>{14, 10}));
  // Accents stripped (Ä -> a); a word that cannot be matched to the end is one [UNK].
  EXPECT_EQ(tokenizer->encode("Äpfel xyz", false, false), (std::vector<TokenId>{11, 12, 1}));
  // Every CJK ideograph is a word of its own; control characters vanish.
  EXPECT_EQ(tokenizer->encode("中\x01中文", false, false), (std::vector<TokenId>{13, 13, 1}));
  EXPECT_EQ(tokenizer->encode(" \n ", false, false), (std::vector<TokenId>{}));
  const std::vector<TokenId> ids = tokenizer->encode("Hello, world!", true, false);
  EXPECT_EQ(ids, (std::vector<TokenId>{2, 4, 7, 5, 6, 3}));
  EXPECT_EQ(tokenizer->decode(ids), "hello , world !");
}

TEST(Robustness, ArbitraryBytesRoundTripThroughByteLevelAndByteFallback) {
  auto bpe = build(bpe_spec({"aa"}, {"a a"}));
  auto spm = build(spm_spec({kSpace, "a"}, {-1, -2}));
  ASSERT_NE(bpe, nullptr);
  ASSERT_NE(spm, nullptr);
  uint32_t state = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const int length = round % 37;
    for (int i = 0; i < length; ++i) {
      state = state * 1664525u + 1013904223u;  // LCG: deterministic pseudo-random bytes
      text.push_back(static_cast<char>(state >> 24));
    }
    EXPECT_EQ(bpe->decode(bpe->encode(text, false, true)), text);
    EXPECT_EQ(spm->decode(spm->encode(text, true, true)), text);
  }
  EXPECT_EQ(bpe->token_to_piece(-5), "");
  EXPECT_EQ(bpe->token_to_piece(1 << 30), "");
}

}  // namespace
}  // namespace strata::tokenizer
