// Unpacking of the 12-byte packed sub-block scales of the K formats (GGUF/ggml `scales` field).
#pragma once

#include <cstdint>

namespace strata::kernels {

// Q4_K / Q5_K: eight 6-bit scales and eight 6-bit mins in 12 bytes. Sub-blocks 0-3 keep scale
// and min in the low 6 bits of bytes j and j + 4; sub-blocks 4-7 keep their low 4 bits in the
// nibbles of byte j + 4 and their high 2 bits in the top bits of bytes j - 4 and j.
inline void unpack_q4k_scales(const uint8_t packed[12], uint8_t scale[8], uint8_t min[8]) {
  for (int j = 0; j < 4; ++j) {
    scale[j] = packed[j] & 63;
    min[j] = packed[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    scale[j] = (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
    min[j] = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// Q3_K: sixteen 6-bit scales stored with a +32 bias. Low 4 bits: the low nibbles of bytes 0-7 for
// scales 0-7, their high nibbles for scales 8-15; high 2 bits: bits 2*(i/4) of byte 8 + i%4.
inline void unpack_q3k_scales(const uint8_t packed[12], int8_t scale[16]) {
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? packed[i] & 0xF : packed[i - 8] >> 4;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scale[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// The same unpacking on 32-bit words, four sub-blocks per operation (for the SIMD kernels; tested
// against the byte-wise versions above). Byte k of the results is sub-block k's value.
struct Q4kScalesMins {
  uint64_t scales;  // 8 bytes: scale of sub-block 0..7
  uint64_t mins;    // 8 bytes: min of sub-block 0..7
};

inline uint32_t load_u32_le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

inline Q4kScalesMins unpack_q4k_scales_words(const uint8_t packed[12]) {
  const uint32_t w0 = load_u32_le(packed), w1 = load_u32_le(packed + 4);
  const uint32_t w2 = load_u32_le(packed + 8);
  // (byte >> 6) << 4 for every byte of a word is (word >> 2) & 0x30303030.
  const uint32_t sc_lo = w0 & 0x3F3F3F3Fu, mn_lo = w1 & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w2 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 2) & 0x30303030u);
  return {sc_lo | static_cast<uint64_t>(sc_hi) << 32, mn_lo | static_cast<uint64_t>(mn_hi) << 32};
}

// Q3_K: writes the 16 biased (0..63) scales as bytes; subtract 32 for the signed value.
inline void unpack_q3k_scales_words(const uint8_t packed[12], uint32_t biased[4]) {
  const uint32_t w0 = load_u32_le(packed), w1 = load_u32_le(packed + 4);
  const uint32_t w2 = load_u32_le(packed + 8);
  biased[0] = (w0 & 0x0F0F0F0Fu) | ((w2 & 0x03030303u) << 4);
  biased[1] = (w1 & 0x0F0F0F0Fu) | (((w2 >> 2) & 0x03030303u) << 4);
  biased[2] = ((w0 >> 4) & 0x0F0F0F0Fu) | (((w2 >> 4) & 0x03030303u) << 4);
  biased[3] = ((w1 >> 4) & 0x0F0F0F0Fu) | (((w2 >> 6) & 0x03030303u) << 4);
}

}  // namespace strata::kernels
