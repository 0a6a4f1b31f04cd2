// Unigram (sentencepiece "unigram" model, T5) as llama.cpp's llm_tokenizer_ugm and HF do it:
//   normalize: sentencepiece's precompiled_charsmap maps each longest matching input prefix to
//              its replacement (NFKC-style rules compiled into a double array); spaces become
//              U+2581, with a dummy prefix and optionally collapsed runs;
//   segment:   Viterbi over byte offsets, maximizing the sum of piece log-probabilities; a
//              character no piece covers costs (lowest score - 10) as the unknown token, and
//              consecutive unknowns collapse into one.
#include <algorithm>
#include <cfloat>
#include <cstring>
#include <string>
#include <vector>

#include "tokenizer/model.h"

namespace strata::tokenizer {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";

// The charsmap's trie is darts-clone's XOR-compressed compact double array: each 32-bit unit
// packs BASE (bits 10..30, shifted left 8 when bit 9 is set), a leaf flag (bit 8) and the label
// (bits 0..7, plus bit 31 for value units). A child of node s for byte c sits at BASE(s) ^ c.
struct DoubleArray {
  const std::vector<uint32_t>& units;
  bool get(size_t index, uint32_t* unit) const {
    if (index >= units.size()) return false;
    *unit = units[index];
    return true;
  }
  static uint32_t base(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
  static uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFFu); }
  static bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1u) != 0; }
  static uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
};

// One normalization step at `pos`: the replacement text and how many input bytes it consumed.
struct Replacement {
  std::string_view text;
  size_t consumed;
};

Replacement normalize_prefix(const Tokenizer::Model& model, std::string_view input, size_t pos) {
  // User-defined tokens pass through unnormalized (longest first).
  for (uint32_t rank : model.user_defined_by_first_byte[static_cast<uint8_t>(input[pos])]) {
    const std::string& token = model.tokens[model.special_by_length[rank]];
    if (input.compare(pos, token.size(), token) == 0)
      return {input.substr(pos, token.size()), token.size()};
  }
  size_t best_length = 0;
  uint32_t best_offset = 0;
  if (!model.charsmap_units.empty()) {
    const DoubleArray array{model.charsmap_units};
    uint32_t unit = 0;
    if (array.get(0, &unit)) {
      size_t node = DoubleArray::base(unit);
      for (size_t i = pos; i < input.size(); ++i) {
        const auto c = static_cast<uint8_t>(input[i]);
        if (c == 0) break;
        node ^= c;
        if (!array.get(node, &unit) || DoubleArray::label(unit) != c) break;
        const bool leaf = DoubleArray::has_leaf(unit);
        node ^= DoubleArray::base(unit);
        if (leaf) {
          uint32_t value_unit = 0;
          if (!array.get(node, &value_unit)) break;
          best_length = i - pos + 1;
          best_offset = DoubleArray::value(value_unit);
        }
      }
    }
  }
  if (best_length > 0 && best_offset < model.charsmap_replacements.size()) {
    std::string_view pool = model.charsmap_replacements;
    pool.remove_prefix(best_offset);
    const size_t end = pool.find('\0');
    return {pool.substr(0, end), best_length};
  }
  uint32_t cp = 0;
  const size_t len = utf8_decode(input, pos, &cp);
  if (len == 0) return {"\xEF\xBF\xBD", 1};  // invalid byte -> U+FFFD
  return {input.substr(pos, len), len};
}

std::string normalize(const Tokenizer::Model& model, std::string_view input) {
  std::string out;
  out.reserve(input.size() * 3 / 2 + 3);
  const bool merge_spaces = model.remove_extra_whitespaces;
  bool space_prepended = false;
  bool in_word = false;
  for (size_t pos = 0; pos < input.size();) {
    const Replacement step = normalize_prefix(model, input, pos);
    for (char c : step.text) {
      if (c != ' ') {
        if (!in_word) {
          in_word = true;
          // The dummy prefix; with merged whitespace every word restarts with one space.
          if ((model.add_space_prefix && !space_prepended) || merge_spaces) {
            out += kSpaceMarker;
            space_prepended = true;
          }
        }
        out.push_back(c);
      } else {
        in_word = false;
        if (!merge_spaces) out += kSpaceMarker;
      }
    }
    pos += step.consumed;
  }
  return out;
}

struct Best {
  TokenId id;
  size_t start;  // where the token ending here begins
  double score;  // best total log-probability of the text up to here
};

}  // namespace

void encode_unigram(const Tokenizer::Model& model, std::string_view text,
                    std::vector<TokenId>* out) {
  const std::string normalized = normalize(model, text);
  const size_t n = normalized.size();
  if (n == 0) return;
  const std::string_view view = normalized;
  std::vector<Best> best(n + 1, Best{model.unk, 0, -DBL_MAX});
  best[0].score = 0;
  for (size_t pos = 0; pos < n;) {
    const size_t char_len = utf8_char_length(view, pos);
    const double base = best[pos].score;
    bool whole_char_token = false;
    const size_t longest = std::min(n - pos, model.max_token_bytes);
    for (size_t len = 1; len <= longest; ++len) {
      const TokenId id = model.find(view.substr(pos, len));
      if (id < 0) continue;
      const TokenType type = model.type(id);
      if (type != TokenType::kNormal && type != TokenType::kUserDefined &&
          type != TokenType::kUnused) {
        continue;
      }
      if (len == char_len) whole_char_token = true;
      // User-defined pieces score 0 (more likely than any log-probability), as in sentencepiece.
      const double score =
          base + (type == TokenType::kUserDefined || model.scores.empty() ? 0.0 : model.scores[id]);
      if (score > best[pos + len].score) best[pos + len] = Best{id, pos, score};
    }
    if (!whole_char_token) {
      const double score = base + model.unknown_score;
      if (score > best[pos + char_len].score) best[pos + char_len] = Best{model.unk, pos, score};
    }
    pos += char_len;
  }
  // Walk back from the end; runs of unknown tokens become one.
  const size_t mark = out->size();
  bool previous_unknown = false;
  for (size_t end = n; end > 0;) {
    const Best& step = best[end];
    const bool unknown = step.id == model.unk;
    if (!(previous_unknown && unknown) && step.id >= 0) out->push_back(step.id);
    previous_unknown = unknown;
    end = step.start;
  }
  std::reverse(out->begin() + static_cast<std::ptrdiff_t>(mark), out->end());
}

Status load_charsmap(const std::vector<uint8_t>& charsmap, Tokenizer::Model* model) {
  if (charsmap.empty()) return ok_status();
  // Layout: uint32 little-endian byte size of the double array, the array, then the pool of
  // NUL-terminated replacement strings.
  if (charsmap.size() < 4) {
    return make_error(ErrorCode::kInvalidFile, "tokenizer.ggml.precompiled_charsmap is truncated");
  }
  const uint32_t array_bytes =
      static_cast<uint32_t>(charsmap[0]) | (static_cast<uint32_t>(charsmap[1]) << 8) |
      (static_cast<uint32_t>(charsmap[2]) << 16) | (static_cast<uint32_t>(charsmap[3]) << 24);
  if (array_bytes % 4 != 0 || static_cast<size_t>(array_bytes) + 4 > charsmap.size()) {
    return make_error(ErrorCode::kInvalidFile,
                      "tokenizer.ggml.precompiled_charsmap declares a double array of " +
                          std::to_string(array_bytes) + " bytes in a " +
                          std::to_string(charsmap.size()) + "-byte blob; the GGUF is corrupt");
  }
  model->charsmap_units.resize(array_bytes / 4);
  for (size_t i = 0; i < model->charsmap_units.size(); ++i) {
    const uint8_t* p = charsmap.data() + 4 + 4 * i;
    model->charsmap_units[i] = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                               (static_cast<uint32_t>(p[2]) << 16) |
                               (static_cast<uint32_t>(p[3]) << 24);
  }
  model->charsmap_replacements.assign(charsmap.begin() + 4 + array_bytes, charsmap.end());
  return ok_status();
}

}  // namespace strata::tokenizer
