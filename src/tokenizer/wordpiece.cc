// WordPiece (BERT) as HF's BertNormalizer + BertPreTokenizer + WordPiece model do it:
//   normalize: drop NUL, U+FFFD and control characters; whitespace separates words; CJK
//              ideographs become words of their own; strip accents (NFD, drop Mn) and lowercase;
//   split:     punctuation characters are words of their own;
//   model:     greedy longest-match-first pieces per word; a word with an unmatchable rest is
//              one unknown token.
// GGUF stores word-initial pieces with a leading U+2581 and continuation pieces without "##"
// (llama.cpp's converter), so a word is matched as "▁" + word.
#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer/bert_tables.h"
#include "tokenizer/model.h"

namespace strata::tokenizer {
namespace {

constexpr size_t kMaxCharsPerWord = 100;  // HF WordPiece max_input_chars_per_word

bert::CharClass char_class(uint32_t cp) {
  const bert::ClassRange* end = bert::kClassRanges + bert::kClassRangeCount;
  const bert::ClassRange* it = std::upper_bound(
      bert::kClassRanges, end, cp,
      [](uint32_t value, const bert::ClassRange& range) { return value < range.first; });
  if (it == bert::kClassRanges) return bert::kOrdinary;
  --it;
  return cp <= it->last ? it->cls : bert::kOrdinary;
}

// BERT's "Chinese character" blocks (CJK Unified Ideographs and their extensions, compatibility
// ideographs), as in the original BERT tokenization.py.
bool is_cjk_ideograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Appends strip_accents + lowercase of `cp` to `out`.
void append_normalized(uint32_t cp, std::vector<uint32_t>* out) {
  if (cp >= 0xAC00 && cp <= 0xD7A3) {
    // Hangul syllable: canonical decomposition into leading, vowel and trailing jamo (Unicode
    // chapter 3.12); jamo are letters, so nothing is dropped.
    const uint32_t index = cp - 0xAC00;
    out->push_back(0x1100 + index / (21 * 28));
    out->push_back(0x1161 + (index % (21 * 28)) / 28);
    if (index % 28 != 0) out->push_back(0x11A7 + index % 28);
    return;
  }
  const bert::Mapping* end = bert::kMappings + bert::kMappingCount;
  const bert::Mapping* it =
      std::lower_bound(bert::kMappings, end, cp,
                       [](const bert::Mapping& m, uint32_t value) { return m.cp < value; });
  if (it == end || it->cp != cp) {
    out->push_back(cp);
    return;
  }
  for (uint32_t to : it->to) {
    if (to == 0) break;
    out->push_back(to);
  }
}

// Normalized words of `text`, each as UTF-8.
std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words(1);
  auto end_word = [&] {
    if (!words.back().empty()) words.emplace_back();
  };
  std::vector<uint32_t> normalized;
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cp = 0xFFFD;
    const size_t len = utf8_decode(text, pos, &cp);
    pos += len == 0 ? 1 : len;  // invalid bytes count as U+FFFD, which clean_text drops
    if (cp == 0 || cp == 0xFFFD) continue;
    const bert::CharClass cls = char_class(cp);
    if (cls == bert::kControl) continue;
    if (cls == bert::kSpace) {
      end_word();
      continue;
    }
    normalized.clear();
    append_normalized(cp, &normalized);
    for (uint32_t c : normalized) {
      if (is_cjk_ideograph(c) || char_class(c) == bert::kPunct) {
        end_word();
        utf8_append(c, &words.back());
        words.emplace_back();
      } else {
        utf8_append(c, &words.back());
      }
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void encode_wordpiece(const Tokenizer::Model& model, std::string_view text,
                      std::vector<TokenId>* out) {
  static constexpr std::string_view kWordStart = "\xE2\x96\x81";
  std::string word;
  for (const std::string& raw : split_words(text)) {
    word.assign(kWordStart);
    word += raw;
    size_t n_chars = 0;
    for (size_t i = 0; i < raw.size(); i += utf8_char_length(raw, i)) ++n_chars;
    const size_t mark = out->size();
    bool matched = n_chars <= kMaxCharsPerWord;
    for (size_t i = 0; matched && i < word.size();) {
      // Longest vocabulary piece starting at i.
      matched = false;
      for (size_t j = std::min(word.size(), i + model.max_token_bytes); j > i; --j) {
        const TokenId id = model.find(std::string_view(word).substr(i, j - i));
        if (id >= 0) {
          out->push_back(id);
          i = j;
          matched = true;
          break;
        }
      }
    }
    if (!matched) {
      out->resize(mark);
      if (model.unk >= 0) out->push_back(model.unk);
    }
  }
}

}  // namespace strata::tokenizer
