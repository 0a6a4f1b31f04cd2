// UTF-8 helpers and the GPT-2 byte-level alphabet shared by the tokenizers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::tokenizer {

// Length of the UTF-8 sequence announced by lead byte `lead` (1 for continuation or invalid
// bytes, so that a walk over arbitrary bytes always advances).
inline size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Length of the character at text[pos]: its UTF-8 sequence length when well formed, else 1 (an
// invalid byte stands alone, so it cannot swallow the start of the next character).
size_t utf8_char_length(std::string_view text, size_t pos);

// Decodes one well-formed UTF-8 character at text[pos] (RFC 3629: no overlongs, no surrogates,
// at most U+10FFFF). Returns its length, or 0 when the bytes there are not a valid character.
size_t utf8_decode(std::string_view text, size_t pos, uint32_t* codepoint);

// Length of the longest prefix of `text` that is valid UTF-8.
size_t utf8_valid_prefix(std::string_view text);

void utf8_append(uint32_t codepoint, std::string* out);

// Number of bytes at the end of `text` that start a UTF-8 character which is still incomplete
// (0..3): those bytes could become valid once more bytes arrive.
size_t utf8_incomplete_tail(std::string_view text);

// GPT-2's reversible byte <-> unicode map (bytes_to_unicode in openai/gpt-2 encoder.py): the
// printable bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF map to themselves, the other 68 bytes
// to U+0100, U+0101, ... in byte order. BPE vocabularies store every token in this alphabet.
class ByteAlphabet {
 public:
  ByteAlphabet();
  // UTF-8 text of the character standing for `byte`.
  const std::string& encode(uint8_t byte) const { return byte_to_text_[byte]; }
  // The byte a code point stands for, or -1 when it is outside the alphabet.
  int decode(uint32_t codepoint) const {
    return codepoint < codepoint_to_byte_.size() ? codepoint_to_byte_[codepoint] : -1;
  }
  // Appends the bytes a byte-level token text stands for; characters outside the alphabet are
  // copied through unchanged.
  void decode_text(std::string_view text, std::string* out) const;

 private:
  std::array<std::string, 256> byte_to_text_;
  std::array<int16_t, 324> codepoint_to_byte_;  // the map's image is U+0021..U+0143
};

}  // namespace strata::tokenizer
