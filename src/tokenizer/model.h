// Internal: the tables a Tokenizer is built from, shared by the per-algorithm encoders.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strata::tokenizer {

enum class Algorithm { kSentencePiece, kBytePairEncoding, kWordPiece, kUnigram };

// One BPE merge rule: priority (lower merges first) and the token it produces (-1 if the merged
// text is not in the vocabulary).
struct MergeRule {
  int32_t rank = 0;
  TokenId result = -1;
};

struct Tokenizer::Model {
  Algorithm algorithm = Algorithm::kSentencePiece;
  std::string model_name;
  std::string pre_name;

  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<TokenType> types;
  // Views into `tokens` (which never changes after load). Later duplicates win, as in llama.cpp.
  std::unordered_map<std::string_view, TokenId> text_to_id;

  // BPE: merges keyed by (left id << 32 | right id).
  std::unordered_map<uint64_t, MergeRule> merges;
  bool byte_encode = true;     // BPE symbols are GPT-2 alphabet characters (false: raw UTF-8)
  bool escape_spaces = false;  // BPE on SentencePiece-style text (' ' -> U+2581)
  bool ignore_merges = false;  // a pre-token that is itself a token is taken whole (llama3)
  std::unique_ptr<PreTokenizer> pre;
  ByteAlphabet alphabet;
  // The token for each byte: SentencePiece / raw-UTF-8 BPE "<0xXX>" tokens, or the byte's GPT-2
  // alphabet character for byte-level BPE; -1 where the vocabulary lacks it.
  std::array<TokenId, 256> byte_token{};

  TokenId bos = -1, eos = -1, unk = -1, sep = -1, pad = -1, eot = -1, eom = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  // SentencePiece: no token has U+2581 after a different character (true of sentencepiece's
  // whitespace-split training), so text can be encoded word by word.
  bool spm_words_independent = false;
  size_t max_token_bytes = 0;
  // Control, user-defined and unknown-type tokens, longest text first: the order llama.cpp
  // splits them out of the text.
  std::vector<TokenId> special_by_length;
  // Indexes into special_by_length grouped by the token's first byte, for one pass over the
  // text: all such tokens (parse_special) and the user-defined ones only (always recognised).
  std::array<std::vector<uint32_t>, 256> special_by_first_byte;
  std::array<std::vector<uint32_t>, 256> user_defined_by_first_byte;
  std::unordered_set<TokenId> end_of_generation;
  // Per token: kStripLeft / kStripRight remove ASCII whitespace before / after the token where it
  // is split out of the text (HF added-token lstrip / rstrip).
  static constexpr uint8_t kStripLeft = 1, kStripRight = 2;
  std::vector<uint8_t> strip;

  // Unigram (T5): sentencepiece's precompiled_charsmap split into its XOR-compressed compact
  // double array and the pool of NUL-terminated replacements; whitespace options.
  std::vector<uint32_t> charsmap_units;
  std::string charsmap_replacements;
  bool remove_extra_whitespaces = false;
  double unknown_score = 0;  // lowest normal-token score minus 10 (sentencepiece's penalty)

  TokenId find(std::string_view text) const {
    auto it = text_to_id.find(text);
    return it == text_to_id.end() ? -1 : it->second;
  }
  TokenType type(TokenId id) const { return types[static_cast<size_t>(id)]; }
  bool valid(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < tokens.size(); }
};

// Encoders append the ids for one run of plain text (special tokens already split out).
void encode_sentencepiece(const Tokenizer::Model& model, std::string_view text,
                          std::vector<TokenId>* out);
void encode_bpe(const Tokenizer::Model& model, std::string_view text, std::vector<TokenId>* out);
void encode_wordpiece(const Tokenizer::Model& model, std::string_view text,
                      std::vector<TokenId>* out);
void encode_unigram(const Tokenizer::Model& model, std::string_view text,
                    std::vector<TokenId>* out);

// Splits tokenizer.ggml.precompiled_charsmap into model->charsmap_*; an error if it is malformed.
Status load_charsmap(const std::vector<uint8_t>& charsmap, Tokenizer::Model* model);

// Builds the lookup tables from a spec; fails on inconsistent arrays or unknown model kinds.
Result<std::unique_ptr<Tokenizer::Model>> build_model(VocabSpec spec);

}  // namespace strata::tokenizer
