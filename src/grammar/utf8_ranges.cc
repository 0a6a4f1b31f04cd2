#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace strata::grammar {
namespace {

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [first, last] with one encoded length n: split until every continuation position spans whole
// 6-bit blocks, then each byte position is an independent range.
void split_same_length(uint32_t first, uint32_t last, std::vector<ByteRangeSequence>* out) {
  const int n = encoded_length(first);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((first & ~m) != (last & ~m)) {
      if ((first & m) != 0) {
        split_same_length(first, first | m, out);
        split_same_length((first | m) + 1, last, out);
        return;
      }
      if ((last & m) != m) {
        split_same_length(first, (last & ~m) - 1, out);
        split_same_length(last & ~m, last, out);
        return;
      }
    }
  }
  const std::string a = utf8_encode(first), b = utf8_encode(last);
  ByteRangeSequence seq;
  for (size_t k = 0; k < a.size(); ++k) {
    seq.push_back({static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])});
  }
  out->push_back(std::move(seq));
}

}  // namespace

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

void utf8_sequences(uint32_t first, uint32_t last, std::vector<ByteRangeSequence>* out) {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  uint32_t start = 0;
  for (uint32_t end : kLengthEnds) {
    const uint32_t lo = std::max(first, start), hi = std::min(last, end);
    if (lo <= hi) split_same_length(lo, hi, out);
    start = end + 1;
  }
}

std::vector<uint32_t> utf8_decode(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<uint8_t>(text[i]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 7);
    for (int k = 1; k < n && i + k < text.size(); ++k) {
      c = (c << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3F);
    }
    out.push_back(c);
    i += n;
  }
  return out;
}

}  // namespace strata::grammar
