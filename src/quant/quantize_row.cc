#include "quant/quantize_row.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/fp16.h"
#include "kernels/quant_blocks.h"

namespace strata::quant {

using kernels::BlockQ4_0;
using kernels::BlockQ4_1;
using kernels::BlockQ5_0;
using kernels::BlockQ5_1;
using kernels::BlockQ8_0;
using kernels::kQK32;
namespace {

// The element of largest magnitude, with its sign: the symmetric formats map it to the most
// negative quant (-8 or -16) so that the full range is used.
float signed_absmax(const float* x) {
  float max = 0.0f;
  for (size_t j = 0; j < kQK32; ++j) {
    if (std::fabs(x[j]) > std::fabs(max)) max = x[j];
  }
  return max;
}

// Symmetric 2^bits-level quantization: d = max / -2^(bits-1), q = x / d + 2^(bits-1), rounded
// and clamped to [0, 2^bits - 1]. Returns d.
float quantize_symmetric(const float* x, int bits, uint8_t* q) {
  const float half_range = static_cast<float>(1 << (bits - 1));
  const float d = signed_absmax(x) / -half_range;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  const int max_q = (1 << bits) - 1;
  for (size_t j = 0; j < kQK32; ++j) {
    q[j] = static_cast<uint8_t>(
        std::min(max_q, static_cast<int>(std::floor(x[j] * inv + half_range + 0.5f))));
  }
  return d;
}

// Asymmetric quantization: x ~= d * q + min with q in [0, 2^bits - 1]. Returns {d, min}.
std::pair<float, float> quantize_affine(const float* x, int bits, uint8_t* q) {
  const auto [lo, hi] = std::minmax_element(x, x + kQK32);
  const int max_q = (1 << bits) - 1;
  const float d = (*hi - *lo) / static_cast<float>(max_q);
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (size_t j = 0; j < kQK32; ++j) {
    q[j] = static_cast<uint8_t>(
        std::min(max_q, static_cast<int>(std::floor((x[j] - *lo) * inv + 0.5f))));
  }
  return {d, *lo};
}

// Packs 32 4-bit quants: element j in the low nibble of byte j, element j + 16 in the high one.
void pack_nibbles(const uint8_t* q, uint8_t qs[16]) {
  for (int j = 0; j < 16; ++j) qs[j] = (q[j] & 0xF) | static_cast<uint8_t>((q[j + 16] & 0xF) << 4);
}

// Bit 4 of quant j goes to bit j of the little-endian 32-bit qh.
void pack_high_bits(const uint8_t* q, uint8_t qh[4]) {
  uint32_t bits = 0;
  for (int j = 0; j < 32; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  for (int i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(bits >> (8 * i));
}

void quantize_q4_0(const float* x, BlockQ4_0& b) {
  uint8_t q[32];
  b.d = fp32_to_fp16(quantize_symmetric(x, 4, q));
  pack_nibbles(q, b.qs);
}

void quantize_q4_1(const float* x, BlockQ4_1& b) {
  uint8_t q[32];
  const auto [d, min] = quantize_affine(x, 4, q);
  b.d = fp32_to_fp16(d);
  b.m = fp32_to_fp16(min);
  pack_nibbles(q, b.qs);
}

void quantize_q5_0(const float* x, BlockQ5_0& b) {
  uint8_t q[32];
  b.d = fp32_to_fp16(quantize_symmetric(x, 5, q));
  pack_nibbles(q, b.qs);
  pack_high_bits(q, b.qh);
}

void quantize_q5_1(const float* x, BlockQ5_1& b) {
  uint8_t q[32];
  const auto [d, min] = quantize_affine(x, 5, q);
  b.d = fp32_to_fp16(d);
  b.m = fp32_to_fp16(min);
  pack_nibbles(q, b.qs);
  pack_high_bits(q, b.qh);
}

void quantize_q8_0(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (size_t j = 0; j < kQK32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (size_t j = 0; j < kQK32; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * inv));
  b.d = fp32_to_fp16(d);
}

template <typename Block, void (*Quantize)(const float*, Block&)>
void quantize_blocks(const float* src, void* dst, size_t n) {
  Block* blocks = static_cast<Block*>(dst);
  for (size_t i = 0; i < n / kQK32; ++i) Quantize(src + i * kQK32, blocks[i]);
}

}  // namespace

bool can_quantize(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
      return true;
    default:
      return false;
  }
}

void quantize_row(DType type, const float* src, void* dst, size_t n) {
  assert(can_quantize(type) && n % traits(type).block_size == 0);
  uint8_t* bytes = static_cast<uint8_t*>(dst);
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = type == DType::kF16 ? fp32_to_fp16(src[i]) : fp32_to_bf16(src[i]);
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      return;
    case DType::kQ4_0:
      return quantize_blocks<BlockQ4_0, quantize_q4_0>(src, dst, n);
    case DType::kQ4_1:
      return quantize_blocks<BlockQ4_1, quantize_q4_1>(src, dst, n);
    case DType::kQ5_0:
      return quantize_blocks<BlockQ5_0, quantize_q5_0>(src, dst, n);
    case DType::kQ5_1:
      return quantize_blocks<BlockQ5_1, quantize_q5_1>(src, dst, n);
    case DType::kQ8_0:
      return quantize_blocks<BlockQ8_0, quantize_q8_0>(src, dst, n);
    default:
      return;
  }
}

}  // namespace strata::quant
