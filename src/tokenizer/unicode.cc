#include "tokenizer/unicode.h"

namespace strata::tokenizer {

size_t utf8_decode(std::string_view text, size_t pos, uint32_t* codepoint) {
  const size_t n = text.size() - pos;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const auto is_cont = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
  if (n == 0) return 0;
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) {
    *codepoint = b0;
    return 1;
  }
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (n < 2 || !is_cont(1)) return 0;
    *codepoint = ((b0 & 0x1Fu) << 6) | (byte(1) & 0x3Fu);
    return 2;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (n < 3 || !is_cont(1) || !is_cont(2)) return 0;
    const uint32_t cp = ((b0 & 0x0Fu) << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    *codepoint = cp;
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (n < 4 || !is_cont(1) || !is_cont(2) || !is_cont(3)) return 0;
    const uint32_t cp = ((b0 & 0x07u) << 18) | ((byte(1) & 0x3Fu) << 12) |
                        ((byte(2) & 0x3Fu) << 6) | (byte(3) & 0x3Fu);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
    *codepoint = cp;
    return 4;
  }
  return 0;
}

size_t utf8_char_length(std::string_view text, size_t pos) {
  if (static_cast<uint8_t>(text[pos]) < 0x80) return 1;
  uint32_t cp = 0;
  const size_t len = utf8_decode(text, pos, &cp);
  return len == 0 ? 1 : len;
}

size_t utf8_valid_prefix(std::string_view text) {
  size_t pos = 0;
  uint32_t cp = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t len = utf8_decode(text, pos, &cp);
    if (len == 0) break;
    pos += len;
  }
  return pos;
}

void utf8_append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t utf8_incomplete_tail(std::string_view text) {
  // Find the last lead byte within the final 3 bytes; the bytes after it are continuations.
  const size_t limit = text.size() < 3 ? text.size() : 3;
  for (size_t back = 1; back <= limit; ++back) {
    const auto lead = static_cast<uint8_t>(text[text.size() - back]);
    if ((lead & 0xC0) == 0x80) continue;
    if (lead < 0xC2 || lead > 0xF4 || utf8_sequence_length(lead) <= back) return 0;
    if (back >= 2) {
      // RFC 3629 restricts the second byte after E0 (no overlongs), ED (no surrogates),
      // F0 (no overlongs) and F4 (nothing above U+10FFFF).
      const auto second = static_cast<uint8_t>(text[text.size() - back + 1]);
      if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) ||
          (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second > 0x8F)) {
        return 0;
      }
    }
    return back;
  }
  return 0;
}

ByteAlphabet::ByteAlphabet() {
  codepoint_to_byte_.fill(-1);
  int next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next_extra++);
    utf8_append(cp, &byte_to_text_[b]);
    codepoint_to_byte_[cp] = static_cast<int16_t>(b);
  }
}

void ByteAlphabet::decode_text(std::string_view text, std::string* out) const {
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cp = 0;
    const size_t len = utf8_decode(text, pos, &cp);
    if (len == 0) {
      out->push_back(text[pos++]);
      continue;
    }
    const int byte = decode(cp);
    if (byte >= 0) {
      out->push_back(static_cast<char>(byte));
    } else {
      out->append(text.substr(pos, len));
    }
    pos += len;
  }
}

}  // namespace strata::tokenizer
