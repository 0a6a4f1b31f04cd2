// The reference dequantizers against blocks built by hand from the format definitions: known
// scales and quants give known floats, and single-quant probes check where each packed bit lands.
#include "kernels/dequantize_scalar.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/quant_blocks.h"
#include "quant/quantize_row.h"

namespace strata::kernels {
namespace {

template <typename Block>
std::vector<float> dequant(DType type, const Block& b) {
  std::vector<float> out(traits(type).block_size);
  dequantize_row_scalar(type, &b, out.data(), out.size());
  return out;
}

uint16_t h(float f) { return fp32_to_fp16(f); }

TEST(DequantizeRefTest, Q4_0) {
  BlockQ4_0 b{};
  b.d = h(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> y = dequant(DType::kQ4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * (7 - j));
  }
}

TEST(DequantizeRefTest, Q4_1) {
  BlockQ4_1 b{};
  b.d = h(0.25f);
  b.m = h(-1.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> y = dequant(DType::kQ4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * j - 1.0f);
    EXPECT_EQ(y[j + 16], 0.25f * (15 - j) - 1.0f);
  }
}

TEST(DequantizeRefTest, Q5_0HighBitsComeFromQhBitJ) {
  BlockQ5_0 b{};
  b.d = h(2.0f);
  std::memset(b.qs, 0x33, sizeof(b.qs));  // every low nibble is 3
  // qh little-endian 32 bits: set bits 0, 9 and 31 -> elements 0, 9 and 31 get +16.
  const uint32_t qh = 1u | 1u << 9 | 1u << 31;
  std::memcpy(b.qh, &qh, 4);
  std::vector<float> y = dequant(DType::kQ5_0, b);
  for (int j = 0; j < 32; ++j) {
    const bool high = j == 0 || j == 9 || j == 31;
    EXPECT_EQ(y[j], 2.0f * ((high ? 19 : 3) - 16)) << j;
  }
}

TEST(DequantizeRefTest, Q5_1) {
  BlockQ5_1 b{};
  b.d = h(0.5f);
  b.m = h(3.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | 1 << 4);
  const uint32_t qh = 0xFFFF0000u;  // elements 16..31 get bit 4
  std::memcpy(b.qh, &qh, 4);
  std::vector<float> y = dequant(DType::kQ5_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * j + 3.0f);
    EXPECT_EQ(y[j + 16], 0.5f * 17 + 3.0f);
  }
}

TEST(DequantizeRefTest, Q8_0) {
  BlockQ8_0 b{};
  b.d = h(0.125f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(4 * j - 128);
  std::vector<float> y = dequant(DType::kQ8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.125f * (4 * j - 128));
}

TEST(DequantizeRefTest, Q2_K) {
  BlockQ2_K b{};
  b.d = h(1.0f);
  b.dmin = h(0.5f);
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<uint8_t>((g + 1) % 16 | (15 - g) << 4);
  // Bit-planes 0..3 of every byte hold quants 0, 1, 2, 3: each 32-element group of a 128-element
  // half takes its plane number as its quant.
  std::memset(b.qs, 0b11100100, sizeof(b.qs));
  std::vector<float> y = dequant(DType::kQ2_K, b);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 16, q = (e % 128) / 32;
    EXPECT_EQ(y[e], 1.0f * ((g + 1) % 16) * q - 0.5f * (15 - g)) << e;
  }
  // Probe: plane 1 of qs[33] (second half, byte 1) is element 128 + 32 + 1.
  std::memset(b.qs, 0, sizeof(b.qs));
  std::memset(b.scales, 1, sizeof(b.scales));  // scale 1, min 0
  b.qs[33] = 0b00001100;
  y = dequant(DType::kQ2_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], e == 161 ? 3.0f : 0.0f) << e;
}

// Packs sixteen biased 6-bit Q3_K scales as the format lays them out.
void pack_q3k_scales(const int biased[16], uint8_t packed[12]) {
  std::memset(packed, 0, 12);
  for (int i = 0; i < 16; ++i) {
    if (i < 8) {
      packed[i] |= biased[i] & 0xF;
    } else {
      packed[i - 8] |= (biased[i] & 0xF) << 4;
    }
    packed[8 + i % 4] |= (biased[i] >> 4) << (2 * (i / 4));
  }
}

TEST(DequantizeRefTest, Q3_K) {
  BlockQ3_K b{};
  b.d = h(0.25f);
  const int biased[16] = {0, 1, 31, 32, 33, 63, 17, 48, 5, 60, 40, 20, 10, 50, 30, 45};
  pack_q3k_scales(biased, b.scales);
  std::memset(b.qs, 0x55, sizeof(b.qs));        // low bits 1 everywhere
  std::memset(b.hmask, 0xFF, sizeof(b.hmask));  // high bit set: no -4 offset -> q = 1
  std::vector<float> y = dequant(DType::kQ3_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.25f * (biased[e / 16] - 32)) << e;
  // Probe: clearing bit 5 of hmask[7] gives element 5 * 32 + 7 the -4 offset: q = 1 - 4.
  b.hmask[7] = 0xFF & ~(1 << 5);
  y = dequant(DType::kQ3_K, b);
  EXPECT_EQ(y[167], 0.25f * (biased[167 / 16] - 32) * -3);
  EXPECT_EQ(y[166], 0.25f * (biased[166 / 16] - 32));
}

// Packs eight 6-bit scales and mins as Q4_K/Q5_K lay them out.
void pack_q4k_scales(const int sc[8], const int mn[8], uint8_t packed[12]) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
    packed[j + 4] = static_cast<uint8_t>((mn[j] & 63) | (mn[j + 4] >> 4) << 6);
    packed[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
  }
}

const int kSc[8] = {10, 20, 30, 40, 50, 60, 33, 17};
const int kMn[8] = {1, 63, 5, 7, 48, 9, 11, 36};

TEST(DequantizeRefTest, Q4_K) {
  BlockQ4_K b{};
  b.d = h(0.5f);
  b.dmin = h(0.25f);
  pack_q4k_scales(kSc, kMn, b.scales);
  // Chunk c of 32 bytes: low nibbles are sub-block 2c (quant 2), high nibbles 2c + 1 (quant 9).
  std::memset(b.qs, 0x92, sizeof(b.qs));
  std::vector<float> y = dequant(DType::kQ4_K, b);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32, q = sub % 2 == 0 ? 2 : 9;
    EXPECT_EQ(y[e], 0.5f * kSc[sub] * q - 0.25f * kMn[sub]) << e;
  }
}

TEST(DequantizeRefTest, Q5_K) {
  BlockQ5_K b{};
  b.d = h(1.0f);
  b.dmin = h(1.0f);
  pack_q4k_scales(kSc, kMn, b.scales);
  std::memset(b.qs, 0x31, sizeof(b.qs));  // low nibbles 1, high nibbles 3
  // Bit s of qh[l] is bit 4 of element 32 * s + l: set it for sub-block 5, element l = 4.
  b.qh[4] = 1 << 5;
  std::vector<float> y = dequant(DType::kQ5_K, b);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32;
    const int q = (sub % 2 == 0 ? 1 : 3) + (e == 164 ? 16 : 0);
    EXPECT_EQ(y[e], 1.0f * kSc[sub] * q - kMn[sub]) << e;
  }
}

TEST(DequantizeRefTest, Q6_K) {
  BlockQ6_K b{};
  b.d = h(0.5f);
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(g * 9 - 70);
  std::vector<float> y = dequant(DType::kQ6_K, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.5f * b.scales[e / 16] * -32) << e;
  // Probes: ql[70] high nibble is element 128 + 64 + 6; qh[40] bits 6-7 are element 128 + 96 + 8.
  b.ql[70] = 0xF0;
  b.qh[40] = 0b11000000;
  y = dequant(DType::kQ6_K, b);
  for (int e = 0; e < 256; ++e) {
    const int u = e == 198 ? 15 : e == 232 ? 48 : 0;
    EXPECT_EQ(y[e], 0.5f * b.scales[e / 16] * (u - 32)) << e;
  }
}

TEST(DequantizeRefTest, MultipleBlocksAreConsecutive) {
  BlockQ8_0 b[2]{};
  b[0].d = h(1.0f);
  b[1].d = h(2.0f);
  b[0].qs[31] = 5;
  b[1].qs[0] = 7;
  std::vector<float> y(64);
  dequantize_row_scalar(DType::kQ8_0, b, y.data(), 64);
  EXPECT_EQ(y[31], 5.0f);
  EXPECT_EQ(y[32], 14.0f);
}

// Round-to-nearest quantizers: values on the quantization grid come back exactly, and random
// values come back within half a step.
TEST(QuantizeRefTest, GridValuesRoundTripExactly) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 0.5f * ((i * 7) % 16 - 8);  // multiples of 0.5 in [-4, 3.5]
  x[3] = -4.0f;                                                   // the signed max maps to quant 0
  for (DType type : {DType::kQ4_0, DType::kQ5_0, DType::kQ8_0}) {
    // Q8_0's d is max|x| / 127: use multiples of 0.5 in [-63.5, 63.5] so that d = 0.5.
    if (type == DType::kQ8_0) {
      for (int i = 0; i < 64; ++i) x[i] = 0.5f * ((i * 37) % 255 - 127);
    }
    std::vector<uint8_t> bytes(row_bytes(type, 64));
    quant::quantize_row(type, x.data(), bytes.data(), 64);
    std::vector<float> y(64);
    dequantize_row_scalar(type, bytes.data(), y.data(), 64);
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[i], x[i], 1e-6) << dtype_name(type) << " " << i;
  }
}

TEST(QuantizeRefTest, RandomValuesWithinHalfAStep) {
  std::vector<float> x(256);
  uint32_t s = 12345;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / 16777216.0f * 6.0f - 2.0f;
  }
  const std::pair<DType, int> cases[] = {{DType::kQ4_0, 16},
                                         {DType::kQ4_1, 15},
                                         {DType::kQ5_0, 32},
                                         {DType::kQ5_1, 31},
                                         {DType::kQ8_0, 254}};
  for (auto [type, steps] : cases) {
    std::vector<uint8_t> bytes(row_bytes(type, 256));
    quant::quantize_row(type, x.data(), bytes.data(), 256);
    std::vector<float> y(256);
    dequantize_row_scalar(type, bytes.data(), y.data(), 256);
    for (int b = 0; b < 8; ++b) {
      float lo = x[32 * b], hi = x[32 * b], amax = 0;
      for (int j = 0; j < 32; ++j) {
        lo = std::min(lo, x[32 * b + j]);
        hi = std::max(hi, x[32 * b + j]);
        amax = std::max(amax, std::abs(x[32 * b + j]));
      }
      const bool affine = type == DType::kQ4_1 || type == DType::kQ5_1;
      // Step = range / steps; f16 rounding of d and m adds a little on top of half a step.
      const float step = affine ? (hi - lo) / steps : 2 * amax / steps;
      for (int j = 0; j < 32; ++j) {
        EXPECT_NEAR(y[32 * b + j], x[32 * b + j], 0.5f * step * 1.01f + 4e-3f)
            << dtype_name(type) << " block " << b << " element " << j;
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
