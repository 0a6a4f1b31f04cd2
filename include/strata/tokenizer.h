// A model file's tokenizer alone: no weights are read and no architecture is needed, so
// vocabulary-only GGUF files (as the community ships for tokenizer tests) work too.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/engine.h"
#include "strata/result.h"

namespace strata {

class TextTokenizer {
 public:
  static Result<std::unique_ptr<TextTokenizer>> load(const std::string& gguf_path);
  ~TextTokenizer();
  TextTokenizer(const TextTokenizer&) = delete;
  TextTokenizer& operator=(const TextTokenizer&) = delete;

  // As Engine::tokenize / detokenize / token_piece.
  std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special) const;
  std::string detokenize(std::span<const TokenId> ids) const;
  std::string token_piece(TokenId id) const;
  size_t n_vocab() const;

 private:
  struct Impl;
  explicit TextTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
