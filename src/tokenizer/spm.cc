// SentencePiece encoding as llama.cpp and HF's slow Llama tokenizer do it (the "BPE" model type of
// sentencepiece): start from single UTF-8 characters and repeatedly merge the adjacent pair whose
// concatenation is the vocabulary piece with the highest score (left-most on ties). Characters
// that end up in no piece fall back to their <0xXX> byte tokens.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tokenizer/model.h"

namespace strata::tokenizer {
namespace {

struct Symbol {
  size_t start = 0;
  size_t len = 0;  // 0 once merged into its left neighbour
  int64_t prev = -1;
  int64_t next = -1;
  TokenId id = -1;  // known once the symbol came from a merge
};

struct Bigram {
  float score = 0;
  int64_t left = 0;
  int64_t right = 0;
  size_t len = 0;  // combined length when queued; a mismatch later means the entry is stale
  TokenId id = -1;
};

// Max-heap order: higher score first, then the left-most pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

void encode_word(const Tokenizer::Model& model, std::string_view text, std::vector<Symbol>& symbols,
                 std::vector<Bigram>& heap, std::vector<TokenId>* out) {
  symbols.clear();
  heap.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    Symbol symbol;
    symbol.start = pos;
    symbol.len = len;
    symbol.prev = static_cast<int64_t>(symbols.size()) - 1;
    pos += len;
    symbol.next = pos < text.size() ? static_cast<int64_t>(symbols.size()) + 1 : -1;
    symbols.push_back(symbol);
  }

  auto try_add_bigram = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const size_t len = symbols[left].len + symbols[right].len;
    const TokenId id = model.find(text.substr(symbols[left].start, len));
    if (id < 0) return;
    const float score = model.scores.empty() ? 0.0f : model.scores[static_cast<size_t>(id)];
    heap.push_back(Bigram{score, left, right, len, id});
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
    left.id = bigram.id;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add_bigram(left.prev, bigram.left);
    try_add_bigram(bigram.left, left.next);
  }

  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const Symbol& symbol = symbols[i];
    const std::string_view piece = text.substr(symbol.start, symbol.len);
    const TokenId id = symbol.id >= 0 ? symbol.id : model.find(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    // Byte fallback: <0xXX> per byte. A vocabulary without byte tokens gets one unknown token
    // for the character instead, as sentencepiece does without byte_fallback.
    const bool has_bytes = std::all_of(piece.begin(), piece.end(), [&](char c) {
      return model.byte_token[static_cast<uint8_t>(c)] >= 0;
    });
    if (has_bytes) {
      for (char c : piece) out->push_back(model.byte_token[static_cast<uint8_t>(c)]);
    } else if (model.unk >= 0) {
      out->push_back(model.unk);
    }
  }
}

}  // namespace

void encode_sentencepiece(const Tokenizer::Model& model, std::string_view text,
                          std::vector<TokenId>* out) {
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
  if (!model.spm_words_independent) {
    encode_word(model, text, symbols, heap, out);
    return;
  }
  // No piece has U+2581 after another character, so no merge crosses the start of a "▁word":
  // encoding the words one by one gives the same pieces with small queues.
  constexpr std::string_view kSpace = "\xE2\x96\x81";
  size_t start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t next = text.find(kSpace, pos);
    if (next == std::string_view::npos) break;
    // A word starts at a ▁ that follows something other than ▁.
    if (next > start && text.compare(next - kSpace.size(), kSpace.size(), kSpace) != 0) {
      encode_word(model, text.substr(start, next - start), symbols, heap, out);
      start = next;
    }
    pos = next + kSpace.size();
  }
  encode_word(model, text.substr(start), symbols, heap, out);
}

}  // namespace strata::tokenizer
