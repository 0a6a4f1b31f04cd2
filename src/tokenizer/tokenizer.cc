#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "tokenizer/model.h"

namespace strata::tokenizer {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// A run of plain text [begin, end), or a special token found in the text.
struct Fragment {
  size_t begin = 0;
  size_t end = 0;
  TokenId token = -1;
};

// Splits special-token texts out of `text` with llama.cpp's semantics (tokenizer_st_partition):
// tokens are taken longest first, each at all its non-overlapping places left to right in what
// is still plain text. One pass collects every place any such token occurs; the longest-first
// acceptance then runs over those places only.
std::vector<Fragment> split_special(const Tokenizer::Model& model, std::string_view text,
                                    bool parse_special) {
  const auto& buckets =
      parse_special ? model.special_by_first_byte : model.user_defined_by_first_byte;
  struct Occurrence {
    size_t pos;
    uint32_t rank;  // index in special_by_length: longer tokens have smaller ranks
  };
  std::vector<Occurrence> occurrences;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    for (uint32_t rank : buckets[static_cast<uint8_t>(text[pos])]) {
      const std::string& token = model.tokens[model.special_by_length[rank]];
      if (text.compare(pos, token.size(), token) == 0) occurrences.push_back({pos, rank});
    }
  }
  if (occurrences.empty()) return {Fragment{0, text.size(), -1}};

  std::sort(occurrences.begin(), occurrences.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
  });
  std::vector<bool> taken(text.size(), false);
  std::vector<Fragment> specials;
  for (const Occurrence& occurrence : occurrences) {
    const TokenId id = model.special_by_length[occurrence.rank];
    const size_t end = occurrence.pos + model.tokens[id].size();
    if (std::any_of(taken.begin() + occurrence.pos, taken.begin() + end,
                    [](bool t) { return t; })) {
      continue;
    }
    std::fill(taken.begin() + occurrence.pos, taken.begin() + end, true);
    specials.push_back(Fragment{occurrence.pos, end, id});
  }
  std::sort(specials.begin(), specials.end(),
            [](const Fragment& a, const Fragment& b) { return a.begin < b.begin; });

  // Plain text between the tokens, less the whitespace that lstrip / rstrip tokens swallow
  // (C isspace: space, \t, \n, \v, \f, \r).
  auto is_space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  std::vector<Fragment> fragments;
  size_t pos = 0;
  bool strip_next = false;
  auto add_text = [&](size_t begin, size_t end, bool strip_end) {
    if (strip_next) {
      while (begin < end && is_space(text[begin])) ++begin;
    }
    if (strip_end) {
      while (end > begin && is_space(text[end - 1])) --end;
    }
    if (end > begin) fragments.push_back(Fragment{begin, end, -1});
  };
  for (const Fragment& special : specials) {
    const uint8_t strip = model.strip[static_cast<size_t>(special.token)];
    add_text(pos, special.begin, (strip & Tokenizer::Model::kStripLeft) != 0);
    fragments.push_back(special);
    pos = special.end;
    strip_next = (strip & Tokenizer::Model::kStripRight) != 0;
  }
  add_text(pos, text.size(), false);
  return fragments;
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, kSpaceMarker.size(), kSpaceMarker) == 0) {
      out.push_back(' ');
      pos += kSpaceMarker.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

// "<0xXX>" -> the byte; -1 when the text is not in that form.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Model> model) : model_(std::move(model)) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_spec(VocabSpec spec) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, build_model(std::move(spec)));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(model)));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Model& model = *model_;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && model.add_bos && model.bos >= 0) out.push_back(model.bos);
  const std::vector<Fragment> fragments =
      text.empty() ? std::vector<Fragment>{} : split_special(model, text, parse_special);

  bool previous_was_special = true;  // SentencePiece's dummy prefix goes on the first text run
  std::string escaped;
  for (const Fragment& fragment : fragments) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      previous_was_special = true;
      continue;
    }
    const std::string_view run = text.substr(fragment.begin, fragment.end - fragment.begin);
    switch (model.algorithm) {
      case Algorithm::kSentencePiece: {
        // Dummy prefix (sentencepiece add_dummy_prefix) after BOS or a special token, then
        // spaces escaped as U+2581.
        escaped.clear();
        if (model.add_space_prefix && previous_was_special) escaped += kSpaceMarker;
        for (char c : run) {
          if (c == ' ') {
            escaped += kSpaceMarker;
          } else {
            escaped.push_back(c);
          }
        }
        encode_sentencepiece(model, escaped, &out);
        break;
      }
      case Algorithm::kBytePairEncoding:
        encode_bpe(model, run, &out);
        break;
      case Algorithm::kWordPiece:
        encode_wordpiece(model, run, &out);
        break;
      case Algorithm::kUnigram:
        encode_unigram(model, run, &out);
        break;
    }
    previous_was_special = false;
  }
  if (add_special && model.add_eos && model.eos >= 0) out.push_back(model.eos);
  return out;
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  const Model& model = *model_;
  if (!model.valid(id)) return {};
  const std::string& text = model.tokens[static_cast<size_t>(id)];
  switch (model.type(id)) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      return render_special ? text : std::string();
    case TokenType::kUnused:
      return {};
    case TokenType::kUserDefined:
      return text;  // stored as plain text, not in the model's alphabet
    case TokenType::kByte: {
      const int byte = parse_byte_token(text);
      return byte >= 0 ? std::string(1, static_cast<char>(byte)) : text;
    }
    case TokenType::kNormal:
      break;
  }
  switch (model.algorithm) {
    case Algorithm::kSentencePiece:
      return unescape_spaces(text);
    case Algorithm::kBytePairEncoding: {
      if (!model.byte_encode) return unescape_spaces(text);
      std::string out;
      model.alphabet.decode_text(text, &out);
      return out;
    }
    case Algorithm::kWordPiece:
      // Word-initial pieces carry U+2581; continuation pieces (## stripped by the converter) join.
      return unescape_spaces(text);
    case Algorithm::kUnigram:
      return unescape_spaces(text);
  }
  return text;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_special) const {
  const Model& model = *model_;
  std::string out;
  // Which piece loses its leading space: the one right after a leading BOS for SentencePiece
  // (undoing the dummy prefix encode added after BOS), the first one for Unigram, the first
  // non-empty one for WordPiece (whose word-initial pieces all start with U+2581).
  size_t strip_index = ids.size();
  const bool wordpiece = model.algorithm == Algorithm::kWordPiece;
  const bool starts_with_bos = !ids.empty() && model.bos >= 0 && ids[0] == model.bos;
  if (model.algorithm == Algorithm::kSentencePiece && model.add_space_prefix && starts_with_bos) {
    strip_index = 1;
  } else if (model.algorithm == Algorithm::kUnigram && model.add_space_prefix) {
    // Unigram vocabularies (T5) have no BOS; llama.cpp drops the first piece's dummy prefix.
    strip_index = starts_with_bos ? 1 : 0;
  } else if (wordpiece) {
    strip_index = 0;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = token_to_piece(ids[i], render_special);
    if (i == strip_index) {
      if (wordpiece && piece.empty()) {
        ++strip_index;
      } else if (!piece.empty() && piece[0] == ' ') {
        piece.erase(0, 1);
      }
    }
    out += piece;
  }
  return out;
}

size_t Tokenizer::n_vocab() const { return model_->tokens.size(); }
TokenId Tokenizer::bos() const { return model_->bos; }
TokenId Tokenizer::eos() const { return model_->eos; }
bool Tokenizer::add_bos() const { return model_->add_bos; }
bool Tokenizer::add_eos() const { return model_->add_eos; }
bool Tokenizer::is_eog(TokenId id) const { return model_->end_of_generation.count(id) > 0; }

TokenType Tokenizer::token_type(TokenId id) const {
  return model_->valid(id) ? model_->type(id) : TokenType::kUnused;
}

const std::string& Tokenizer::token_text(TokenId id) const {
  static const std::string kEmpty;  // immutable, so not mutable global state
  return model_->valid(id) ? model_->tokens[static_cast<size_t>(id)] : kEmpty;
}

std::string_view Tokenizer::model_name() const { return model_->model_name; }
std::string_view Tokenizer::pre_name() const { return model_->pre_name; }

std::string StreamingDetokenizer::push(TokenId id) {
  pending_ += tokenizer_.token_to_piece(id, render_special_);
  const size_t hold = utf8_incomplete_tail(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamingDetokenizer::finish() { return std::exchange(pending_, std::string()); }

}  // namespace strata::tokenizer
