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

}  // namespace strata::kernels
