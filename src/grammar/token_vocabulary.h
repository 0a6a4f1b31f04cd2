// The bytes each token appends to the output, per tokenizer: built once and shared by every
// grammar compiled against it. Tokens that append nothing (control, unknown, unused tokens) are
// never allowed by a grammar; end-of-generation tokens are allowed exactly where the grammar
// may end. The other tokens are kept sorted by their bytes so mask computation can walk them as
// a trie: consecutive tokens share a prefix, and the walk resumes from the shared prefix.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tokenizer {
class Tokenizer;
}

namespace strata::grammar {

class TokenVocabulary {
 public:
  // Pieces as strata's StreamingDetokenizer emits them (token_to_piece without special text):
  // SentencePiece U+2581 as a space, <0xXX> byte tokens as that byte, control tokens empty.
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const tokenizer::Tokenizer& tok);
  // pieces[id] = the token's bytes ("" = never allowed); eog_ids end generation.
  static std::shared_ptr<const TokenVocabulary> from_pieces(std::vector<std::string> pieces,
                                                            const std::vector<int32_t>& eog_ids);

  size_t size() const { return pieces_.size(); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  bool is_eog(int32_t id) const { return is_eog_[static_cast<size_t>(id)]; }
  std::span<const int32_t> eog_ids() const { return eog_ids_; }

  // Grammar-visible tokens (non-empty, not end-of-generation) in byte order.
  size_t n_sorted() const { return sorted_ids_.size(); }
  int32_t sorted_id(uint32_t k) const { return sorted_ids_[k]; }
  // Read from one buffer in sorted order: the compiler walks the pieces in that order, and
  // reaching each through its id was a cache miss per token (half of a vocabulary walk). The
  // buffer holds kPieceSlack zero bytes past the last piece, so that 8 bytes may be loaded at
  // the start of any piece or tail of one (how the compiler compares leftovers).
  static constexpr size_t kPieceSlack = 8;
  std::string_view sorted_piece(uint32_t k) const {
    return std::string_view(sorted_bytes_.data() + sorted_offsets_[k],
                            sorted_offsets_[k + 1] - sorted_offsets_[k]);
  }
  // The inverse: the sorted index of a token id (kNotSorted for end and empty pieces).
  uint32_t sorted_index(int32_t id) const { return sorted_index_[static_cast<size_t>(id)]; }
  static constexpr uint32_t kNotSorted = UINT32_MAX;
  // The ids whose piece is exactly `piece` (a binary search of the sorted pieces).
  void find(std::string_view piece, std::vector<int32_t>* ids) const;
  // Sorted indices [first_byte_begin(b), first_byte_begin(b + 1)) start with byte b.
  uint32_t first_byte_begin(unsigned b) const { return first_byte_begin_[b]; }
  size_t max_piece_length() const { return max_piece_length_; }
  // Ids of the (non-end) pieces holding a '"' byte: inside a JSON string only they can end it.
  std::span<const int32_t> ids_with_quote() const { return ids_with_quote_; }
  // The longest grammar-visible piece that starts with byte b, and the longest tail piece[i..]
  // (i >= 1) of one that does (a leftover a token brings past a frame): what compiled grammars
  // read as deep as, per byte (0 for none).
  uint32_t longest_from(unsigned b) const { return longest_from_[b]; }
  uint32_t longest_tail_from(unsigned b) const { return longest_tail_from_[b]; }

 private:
  TokenVocabulary(std::vector<std::string> pieces, const std::vector<int32_t>& eog_ids);

  std::vector<std::string> pieces_;
  std::vector<int32_t> eog_ids_;
  std::vector<bool> is_eog_;
  std::vector<int32_t> sorted_ids_;
  std::vector<uint32_t> sorted_index_;
  std::string sorted_bytes_;              // the sorted pieces, back to back
  std::vector<uint32_t> sorted_offsets_;  // n_sorted() + 1 offsets into sorted_bytes_
  std::vector<int32_t> ids_with_quote_;
  std::vector<uint32_t> first_byte_begin_;  // 257 entries
  size_t max_piece_length_ = 0;
  std::array<uint32_t, 256> longest_from_{}, longest_tail_from_{};
};

}  // namespace strata::grammar
