// Text <-> token ids for the vocabularies GGUF files carry (tokenizer.ggml.*):
//   llama -> SentencePiece (score-driven merges, byte fallback), gpt2 -> byte-level BPE with a
//   regex pre-tokenizer chosen by tokenizer.ggml.pre, bert -> WordPiece, t5 -> Unigram.
// Results match llama.cpp, whose vocab tests compare against Hugging Face `transformers`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace strata::gguf {
class File;
}

namespace strata::tokenizer {

using TokenId = int32_t;

// tokenizer.ggml.token_type values.
enum class TokenType {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

// A vocabulary as GGUF stores it, for building a Tokenizer without a file (tests, converters).
// Optional fields left empty take llama.cpp's defaults for the model kind.
struct VocabSpec {
  std::string model;  // tokenizer.ggml.model: "llama", "gpt2", "gemma4", "bert", "t5"
  std::string pre;    // tokenizer.ggml.pre; empty when absent ("default")
  std::vector<std::string> tokens;
  std::vector<float> scores;        // SentencePiece piece scores; empty = all 0
  std::vector<TokenType> types;     // empty = all kNormal
  std::vector<std::string> merges;  // BPE: "left right", highest priority first
  TokenId bos = -1, eos = -1, unk = -1, sep = -1, pad = -1, eot = -1, eom = -1;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  // general.name and general.architecture: llama.cpp keys a few token attributes on them
  // (Phi-3's special tokens swallow the whitespace after them; some BERTs' <mask> the one before).
  std::string name;
  std::string architecture;
  // Unigram (t5) only: tokenizer.ggml.precompiled_charsmap and remove_extra_whitespaces.
  std::vector<uint8_t> precompiled_charsmap;
  std::optional<bool> remove_extra_whitespaces;
};

class Tokenizer {  // immutable after load; thread-safe for concurrent encode/decode
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::File& file);
  static Result<std::unique_ptr<Tokenizer>> from_spec(VocabSpec spec);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: BOS/EOS as the vocabulary asks (add_bos_token / add_eos_token).
  // parse_special: control and unknown-type token texts in `text` become those tokens
  // (user-defined tokens are always recognised, as in llama.cpp and HF added tokens).
  std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const;
  // Raw bytes of one token (may be part of a UTF-8 character). Control tokens render as their
  // text only when render_special is set. Out-of-range ids give "".
  std::string token_to_piece(TokenId id, bool render_special = false) const;
  // Concatenated pieces. For SentencePiece with a dummy prefix, when the sequence starts with BOS
  // the leading space of the token after it is dropped (encode's dummy prefix, undone).
  std::string decode(std::span<const TokenId> ids, bool render_special = false) const;

  size_t n_vocab() const;
  TokenId bos() const;  // -1 when absent
  TokenId eos() const;
  bool add_bos() const;
  bool add_eos() const;
  bool is_eog(TokenId id) const;  // end of generation: eos, eot, eom, <|im_end|>, <|eot_id|>, ...
  TokenType token_type(TokenId id) const;           // kUnused for out-of-range ids
  const std::string& token_text(TokenId id) const;  // as stored; "" for out-of-range ids
  std::string_view model_name() const;              // "llama", "gpt2", "bert", "t5"
  std::string_view pre_name() const;                // tokenizer.ggml.pre, "default" when absent

  struct Model;  // vocabulary tables and the encoder chosen for it

 private:
  explicit Tokenizer(std::unique_ptr<Model> model);
  std::unique_ptr<Model> model_;
};

// Streaming detokenizer: feed ids one at a time, get text that never ends inside a UTF-8
// character. Incomplete trailing bytes are held back until completed and flushed by finish();
// bytes that can never complete a character are passed through as they are.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(tokenizer), render_special_(render_special) {}
  std::string push(TokenId id);
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;
};

}  // namespace strata::tokenizer
