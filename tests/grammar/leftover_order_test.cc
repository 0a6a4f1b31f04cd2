// The compiler's order of (leftover, token) pairs against std::pair's: every tail of pieces
// that share long prefixes, hold zero and high bytes, and differ in length around the 8 bytes
// compared as one integer.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/token_vocabulary.h"
#include "grammar/token_walk.h"

namespace strata::grammar {
namespace {

TEST(LeftoverOrder, AgreesWithStringViewOrderOnEveryTailOfEveryPiece) {
  std::mt19937 rng(3);
  const std::string alphabet("\0\1a\x7f\x80\xff", 6);
  std::vector<std::string> pieces;
  for (int i = 0; i < 400; ++i) {
    std::string piece(1 + rng() % 20, 'a');
    for (char& c : piece) c = alphabet[rng() % alphabet.size()];
    pieces.push_back(piece);
  }
  pieces.push_back("");  // end of generation
  const auto vocab =
      TokenVocabulary::from_pieces(pieces, {static_cast<int32_t>(pieces.size() - 1)});
  std::vector<std::pair<std::string_view, int32_t>> tails;
  for (uint32_t k = 0; k < vocab->n_sorted(); ++k) {
    const std::string_view piece = vocab->sorted_piece(k);
    for (size_t d = 0; d <= piece.size(); ++d) {
      tails.push_back({piece.substr(d), static_cast<int32_t>(rng() % 4)});
    }
  }
  const LeftoverLess less;
  for (size_t i = 0; i < tails.size(); ++i) {
    for (size_t j = 0; j < tails.size(); j += 1 + i % 7) {
      ASSERT_EQ(less(tails[i], tails[j]), tails[i] < tails[j])
          << "\"" << tails[i].first << "\" " << tails[i].second << " vs \"" << tails[j].first
          << "\" " << tails[j].second;
    }
  }
}

}  // namespace
}  // namespace strata::grammar
