// Code point ranges as UTF-8 byte-range sequences: [U+0080, U+07FF] becomes [C2-DF][80-BF], and
// any range splits into a few such sequences whose byte-wise products are exactly the UTF-8
// encodings of the code points in it (the construction regex engines use for byte automata).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::grammar {

struct ByteRange {
  uint8_t first;
  uint8_t last;  // inclusive
};

using ByteRangeSequence = std::vector<ByteRange>;

// Appends the sequences for [first, last]; surrogates (U+D800..U+DFFF) must not be inside.
void utf8_sequences(uint32_t first, uint32_t last, std::vector<ByteRangeSequence>* out);

// The UTF-8 encoding of one code point (surrogates encoded as their 3-byte pattern).
std::string utf8_encode(uint32_t cp);

// The code points of UTF-8 text that is already valid (callers validated it).
std::vector<uint32_t> utf8_decode(std::string_view text);

}  // namespace strata::grammar
