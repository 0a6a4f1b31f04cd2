// The word-parallel K-format scale unpackers used by the SIMD kernels against the byte-wise ones
// written from the format definition, on random packed bytes.
#include "kernels/k_scales.h"

#include <gtest/gtest.h>

#include <random>

namespace strata::kernels {
namespace {

TEST(KScalesTest, Q4kWordsMatchBytewise) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t packed[12];
    for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
    uint8_t sc[8], mn[8];
    unpack_q4k_scales(packed, sc, mn);
    const Q4kScalesMins words = unpack_q4k_scales_words(packed);
    for (int j = 0; j < 8; ++j) {
      ASSERT_EQ((words.scales >> (8 * j)) & 0xFF, sc[j]) << "sub-block " << j;
      ASSERT_EQ((words.mins >> (8 * j)) & 0xFF, mn[j]) << "sub-block " << j;
    }
  }
}

TEST(KScalesTest, Q3kWordsMatchBytewise) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t packed[12];
    for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
    int8_t scale[16];
    unpack_q3k_scales(packed, scale);
    uint32_t biased[4];
    unpack_q3k_scales_words(packed, biased);
    for (int i = 0; i < 16; ++i) {
      ASSERT_EQ(static_cast<int>((biased[i / 4] >> (8 * (i % 4))) & 0xFF) - 32, scale[i]) << i;
    }
  }
}

// Scale/min values chosen by hand land where the format says (sub-block 5: scale 60, min 9).
TEST(KScalesTest, Q4kHandPacked) {
  // Sub-blocks 4-7 keep their low 4 bits in bytes 8-11 and their top 2 bits in bits 6-7 of
  // bytes 0-3 (scales) and 4-7 (mins).
  uint8_t packed[12] = {};
  packed[1] = 3 << 6;                // scale 5 high bits = 0b11 -> 48
  packed[5] = 0;                     // min 5 high bits = 0
  packed[9] = (9 << 4) | (60 - 48);  // min 5 low = 9, scale 5 low = 12
  uint8_t sc[8], mn[8];
  unpack_q4k_scales(packed, sc, mn);
  EXPECT_EQ(sc[5], 60);
  EXPECT_EQ(mn[5], 9);
  EXPECT_EQ(sc[1], 0);  // the low 6 bits of byte 1 are zero
}

}  // namespace
}  // namespace strata::kernels
