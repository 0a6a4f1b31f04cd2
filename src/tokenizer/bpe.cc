// Byte-level BPE (GPT-2 style) as llama.cpp and HF tokenizers do it: the pre-tokenizer splits the
// text into pieces; each piece's bytes become GPT-2 alphabet symbols, and the adjacent pair with
// the lowest merge rank (left-most on ties) is merged until no listed merge applies.
//
// Merges are looked up by the pair of token ids (one hash probe, no strings built), and each rule
// carries the id of the token it produces.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/model.h"

namespace strata::tokenizer {
namespace {

struct Symbol {
  size_t start = 0;  // byte range in the piece
  size_t len = 0;    // 0 once merged into its left neighbour
  int64_t prev = -1;
  int64_t next = -1;
  TokenId id = -1;
};

struct Bigram {
  int32_t rank = 0;
  int64_t left = 0;
  int64_t right = 0;
  size_t len = 0;
  TokenId result = -1;
};

// Max-heap order that pops the lowest rank first, then the left-most pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

uint64_t merge_key(TokenId left, TokenId right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Reused across the pieces of one encode call.
struct Workspace {
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
  std::string encoded;
};

void encode_piece(const Tokenizer::Model& model, std::string_view piece, Workspace* ws,
                  std::vector<TokenId>* out) {
  if (model.ignore_merges) {
    TokenId whole = -1;
    if (model.byte_encode) {
      ws->encoded.clear();
      for (char c : piece) ws->encoded += model.alphabet.encode(static_cast<uint8_t>(c));
      whole = model.find(ws->encoded);
    } else {
      whole = model.find(piece);
    }
    if (whole >= 0) {
      out->push_back(whole);
      return;
    }
  }

  std::vector<Symbol>& symbols = ws->symbols;
  symbols.clear();
  for (size_t pos = 0; pos < piece.size();) {
    Symbol symbol;
    symbol.start = pos;
    if (model.byte_encode) {
      symbol.len = 1;
      symbol.id = model.byte_token[static_cast<uint8_t>(piece[pos])];
    } else {
      symbol.len = utf8_char_length(piece, pos);
      symbol.id = model.find(piece.substr(pos, symbol.len));
    }
    symbol.prev = static_cast<int64_t>(symbols.size()) - 1;
    pos += symbol.len;
    symbol.next = pos < piece.size() ? static_cast<int64_t>(symbols.size()) + 1 : -1;
    symbols.push_back(symbol);
  }

  std::vector<Bigram>& heap = ws->heap;
  heap.clear();
  auto try_add_bigram = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const TokenId left_id = symbols[left].id;
    const TokenId right_id = symbols[right].id;
    if (left_id < 0 || right_id < 0) return;
    auto it = model.merges.find(merge_key(left_id, right_id));
    if (it == model.merges.end()) return;
    heap.push_back(Bigram{it->second.rank, left, right, symbols[left].len + symbols[right].len,
                          it->second.result});
    std::push_heap(heap.begin(), heap.end(), BigramLess{});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add_bigram(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess{});
    const Bigram bigram = heap.back();
    heap.pop_back();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Symbols only grow or vanish, so unchanged lengths mean the pair is still as queued.
    if (left.len == 0 || right.len == 0 || left.len + right.len != bigram.len) continue;
    left.len += right.len;
    left.id = bigram.result;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add_bigram(left.prev, bigram.left);
    try_add_bigram(bigram.left, left.next);
  }

  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const Symbol& symbol = symbols[i];
    if (symbol.id >= 0) {
      out->push_back(symbol.id);
      continue;
    }
    // The symbol's text is no token (a merge result missing from the vocabulary, or a byte or
    // character the vocabulary lacks): emit its bytes' tokens where they exist.
    for (size_t b = 0; b < symbol.len; ++b) {
      const TokenId byte_id = model.byte_token[static_cast<uint8_t>(piece[symbol.start + b])];
      if (byte_id >= 0) out->push_back(byte_id);
    }
  }
}

}  // namespace

void encode_bpe(const Tokenizer::Model& model, std::string_view text, std::vector<TokenId>* out) {
  std::string escaped;
  if (model.escape_spaces) {
    escaped.reserve(text.size());
    for (char c : text) {
      if (c == ' ') {
        escaped += "\xE2\x96\x81";
      } else {
        escaped.push_back(c);
      }
    }
    text = escaped;
  }
  std::vector<std::string_view> pieces;
  model.pre->split(text, &pieces);
  Workspace workspace;
  for (std::string_view piece : pieces) encode_piece(model, piece, &workspace, out);
}

}  // namespace strata::tokenizer
