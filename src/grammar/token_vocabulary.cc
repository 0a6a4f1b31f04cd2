#include "grammar/token_vocabulary.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace strata::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> pieces,
                                 const std::vector<int32_t>& eog_ids)
    : pieces_(std::move(pieces)), is_eog_(pieces_.size(), false) {
  for (int32_t id : eog_ids) {
    if (id >= 0 && static_cast<size_t>(id) < pieces_.size() && !is_eog_[id]) {
      is_eog_[id] = true;
      eog_ids_.push_back(id);
    }
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    if (!pieces_[id].empty() && !is_eog_[id]) sorted_ids_.push_back(static_cast<int32_t>(id));
    if (!is_eog_[id] && pieces_[id].find('"') != std::string::npos) {
      ids_with_quote_.push_back(static_cast<int32_t>(id));
    }
    max_piece_length_ = std::max(max_piece_length_, pieces_[id].size());
  }
  std::stable_sort(sorted_ids_.begin(), sorted_ids_.end(), [&](int32_t a, int32_t b) {
    return pieces_[a] < pieces_[b];  // std::string compares as unsigned bytes (char_traits)
  });
  sorted_index_.assign(pieces_.size(), kNotSorted);
  sorted_offsets_.reserve(sorted_ids_.size() + 1);
  for (size_t k = 0; k < sorted_ids_.size(); ++k) {
    sorted_index_[static_cast<size_t>(sorted_ids_[k])] = static_cast<uint32_t>(k);
    sorted_offsets_.push_back(static_cast<uint32_t>(sorted_bytes_.size()));
    sorted_bytes_ += pieces_[sorted_ids_[k]];
  }
  sorted_offsets_.push_back(static_cast<uint32_t>(sorted_bytes_.size()));
  sorted_bytes_.append(kPieceSlack, '\0');
  first_byte_begin_.assign(257, 0);
  size_t k = 0;
  for (unsigned b = 0; b < 256; ++b) {
    first_byte_begin_[b] = static_cast<uint32_t>(k);
    while (k < sorted_ids_.size() &&
           static_cast<uint8_t>(pieces_[sorted_ids_[k]][0]) == static_cast<uint8_t>(b)) {
      ++k;
    }
  }
  first_byte_begin_[256] = static_cast<uint32_t>(k);
  for (int32_t id : sorted_ids_) {
    const std::string& piece = pieces_[id];
    uint32_t& longest = longest_from_[static_cast<uint8_t>(piece[0])];
    longest = std::max(longest, static_cast<uint32_t>(piece.size()));
    for (size_t i = 1; i < piece.size(); ++i) {
      uint32_t& tail = longest_tail_from_[static_cast<uint8_t>(piece[i])];
      tail = std::max(tail, static_cast<uint32_t>(piece.size() - i));
    }
  }
}

void TokenVocabulary::find(std::string_view piece, std::vector<int32_t>* ids) const {
  auto it = std::lower_bound(sorted_ids_.begin(), sorted_ids_.end(), piece,
                             [&](int32_t id, std::string_view p) { return pieces_[id] < p; });
  for (; it != sorted_ids_.end() && pieces_[*it] == piece; ++it) ids->push_back(*it);
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_pieces(
    std::vector<std::string> pieces, const std::vector<int32_t>& eog_ids) {
  return std::shared_ptr<const TokenVocabulary>(new TokenVocabulary(std::move(pieces), eog_ids));
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(
    const tokenizer::Tokenizer& tok) {
  std::vector<std::string> pieces(tok.n_vocab());
  std::vector<int32_t> eog;
  for (size_t id = 0; id < pieces.size(); ++id) {
    const auto t = static_cast<tokenizer::TokenId>(id);
    if (tok.is_eog(t)) eog.push_back(t);
    pieces[id] = tok.token_to_piece(t, /*render_special=*/false);
  }
  return from_pieces(std::move(pieces), eog);
}

}  // namespace strata::grammar
