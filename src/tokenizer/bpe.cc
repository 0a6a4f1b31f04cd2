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
#include "tokenizer/symbol_merge.h"

namespace strata::tokenizer {
namespace {

uint64_t merge_key(TokenId left, TokenId right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Reused across the pieces of one encode call.
struct Workspace {
  std::vector<MergeSymbol> symbols;
  std::vector<MergeCandidate> heap;
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

  std::vector<MergeSymbol>& symbols = ws->symbols;
  split_symbols(
      piece.size(),
      [&](size_t pos) { return model.byte_encode ? size_t{1} : utf8_char_length(piece, pos); },
      symbols);
  for (MergeSymbol& symbol : symbols) {
    symbol.id = model.byte_encode ? model.byte_token[static_cast<uint8_t>(piece[symbol.start])]
                                  : model.find(piece.substr(symbol.start, symbol.len));
  }
  // Lower merge ranks go first: the priority is minus the rank.
  merge_symbols(
      symbols, ws->heap,
      [&](const MergeSymbol& left, const MergeSymbol& right) -> std::optional<MergeChoice> {
        if (left.id < 0 || right.id < 0) return std::nullopt;
        auto it = model.merges.find(merge_key(left.id, right.id));
        if (it == model.merges.end()) return std::nullopt;
        return MergeChoice{-static_cast<double>(it->second.rank), it->second.result};
      });

  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const MergeSymbol& symbol = symbols[i];
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
