// Placeholder; WordPiece is implemented below once the Unicode tables land.
#include "tokenizer/model.h"

namespace strata::tokenizer {

void encode_wordpiece(const Tokenizer::Model& model, std::string_view text,
                      std::vector<TokenId>* out) {
  (void)model;
  (void)text;
  (void)out;
}

}  // namespace strata::tokenizer
