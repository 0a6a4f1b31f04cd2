#include "base/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace strata {
namespace {

// Independent oracle: decode binary16 from its fields, as the IEEE 754 definition states.
double decode_half(uint16_t h) {
  int sign = (h >> 15) & 1;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -v : v;
}

TEST(Fp16Test, DecodesEveryHalfExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    double expected = decode_half(static_cast<uint16_t>(h));
    float got = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), expected) << h;
    }
  }
}

TEST(Fp16Test, EncodeRoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(fp32_to_fp16(f), h) << h;
  }
}

TEST(Fp16Test, EncodeRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to the even mantissa.
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(fp32_to_fp16(1e6f), 0x7c00);  // overflow saturates to +inf
}

TEST(Bf16Test, RoundTripAndRounding) {
  EXPECT_EQ(bf16_to_fp32(fp32_to_bf16(1.5f)), 1.5f);
  EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace strata
