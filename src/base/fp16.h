// IEEE half (binary16) and bfloat16 conversions, bit-exact and branch-light. Used by scalar
// reference kernels and file readers; SIMD kernels use Highway's own conversions.
#pragma once

#include <bit>
#include <cstdint>

namespace strata {

inline float fp16_to_fp32(uint16_t h) {
  // Rebias the exponent by multiplying through a float with the magic exponent; handles
  // subnormals, infinities and NaN exactly (the method of Maratyszcza's FP16 library).
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = std::bit_cast<float>(0x7800000u);
  const float normalized = std::bit_cast<float>((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result =
      sign | (two_w < denormalized_cutoff ? std::bit_cast<uint32_t>(denormalized)
                                          : std::bit_cast<uint32_t>(normalized));
  return std::bit_cast<float>(result);
}

inline uint16_t fp32_to_fp16(float f) {
  // Round-to-nearest-even via float arithmetic (same method), NaN stays NaN.
  const float scale_to_inf = std::bit_cast<float>(0x77800000u);
  const float scale_to_zero = std::bit_cast<float>(0x08800000u);
  float base = (f < 0 ? -f : f) * scale_to_inf * scale_to_zero;
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

inline float bf16_to_fp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

inline uint16_t fp32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace strata
