// SentencePiece encoding as llama.cpp and HF's slow Llama tokenizer do it (the "BPE" model type of
// sentencepiece): start from single UTF-8 characters and repeatedly merge the adjacent pair whose
// concatenation is the vocabulary piece with the highest score (left-most on ties). Characters
// that end up in no piece fall back to their <0xXX> byte tokens.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tokenizer/model.h"
#include "tokenizer/symbol_merge.h"

namespace strata::tokenizer {
namespace {

void encode_word(const Tokenizer::Model& model, std::string_view text,
                 std::vector<MergeSymbol>& symbols, std::vector<MergeCandidate>& heap,
                 std::vector<TokenId>* out) {
  split_symbols(
      text.size(), [&](size_t pos) { return utf8_char_length(text, pos); }, symbols);
  merge_symbols(
      symbols, heap,
      [&](const MergeSymbol& left, const MergeSymbol& right) -> std::optional<MergeChoice> {
        const TokenId id = model.find(text.substr(left.start, left.len + right.len));
        if (id < 0) return std::nullopt;
        const float score = model.scores.empty() ? 0.0f : model.scores[static_cast<size_t>(id)];
        return MergeChoice{score, id};
      });

  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const MergeSymbol& symbol = symbols[i];
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
  std::vector<MergeSymbol> symbols;
  std::vector<MergeCandidate> heap;
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
