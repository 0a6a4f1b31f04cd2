#include "gguf/gguf.h"
#include "strata/tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace strata {

struct TextTokenizer::Impl {
  std::unique_ptr<gguf::File> file;  // mapped, so tensor data is never read
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

TextTokenizer::TextTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextTokenizer::~TextTokenizer() = default;

Result<std::unique_ptr<TextTokenizer>> TextTokenizer::load(const std::string& gguf_path) {
  auto impl = std::make_unique<Impl>();
  STRATA_ASSIGN_OR_RETURN(impl->file, gguf::File::open(gguf_path, MappedFile::Mode::kMmap));
  STRATA_ASSIGN_OR_RETURN(impl->tokenizer, tokenizer::Tokenizer::from_gguf(*impl->file));
  return std::unique_ptr<TextTokenizer>(new TextTokenizer(std::move(impl)));
}

std::vector<TokenId> TextTokenizer::tokenize(std::string_view text, bool add_special,
                                             bool parse_special) const {
  return impl_->tokenizer->encode(text, add_special, parse_special);
}

std::string TextTokenizer::detokenize(std::span<const TokenId> ids) const {
  return impl_->tokenizer->decode(ids);
}

std::string TextTokenizer::token_piece(TokenId id) const {
  return impl_->tokenizer->token_to_piece(id);
}

size_t TextTokenizer::n_vocab() const { return impl_->tokenizer->n_vocab(); }

}  // namespace strata
