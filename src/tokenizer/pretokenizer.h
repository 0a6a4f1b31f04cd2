// Regex pre-tokenizers for byte-level BPE, selected by tokenizer.ggml.pre.
//
// GGUF stores only the pre-tokenizer's name; the expressions come from each model's Hugging Face
// tokenizer.json (its pre_tokenizer Split / ByteLevel regexes). A recipe is a list of regexes
// applied in turn: each one splits every current piece into its matches and the text between
// them (HF Split with behavior "Isolated"), so later regexes refine earlier pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace strata::tokenizer {

struct PreTokenizerRecipe {
  std::vector<std::string> patterns;  // PCRE2 syntax, compiled with PCRE2_UTF | PCRE2_UCP
  bool ignore_merges = false;  // a piece that is itself a vocabulary token is not merged (llama3)
  bool byte_encode = true;     // false: BPE over raw UTF-8 with <0xXX> byte fallback (gemma4)
  bool escape_spaces = false;  // ' ' -> U+2581 before splitting (SentencePiece-style BPE)
};

// The recipe for a tokenizer.ggml.pre name ("" and "default" give llama.cpp's default list), or a
// kUnsupported error naming the pre-tokenizer.
Result<PreTokenizerRecipe> find_pre_tokenizer_recipe(std::string_view name);

class PreTokenizer {
 public:
  // Compiles the patterns; an error names the pattern PCRE2 rejected and why.
  static Result<std::unique_ptr<PreTokenizer>> compile(const std::vector<std::string>& patterns);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Appends the pieces of `text` (views into it, in order, covering it exactly). Safe to call
  // from several threads at once. Bytes that are not valid UTF-8 become one-byte pieces of their
  // own: PCRE2 in UTF mode cannot match across them, and byte-level BPE needs no more.
  void split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  struct Compiled;
  explicit PreTokenizer(std::vector<Compiled> regexes);
  void split_valid(size_t regex_index, std::string_view text, std::vector<std::string_view>* pieces,
                   void* match_data) const;
  std::vector<Compiled> regexes_;
};

}  // namespace strata::tokenizer
