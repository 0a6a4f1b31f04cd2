#include "kernels/dequantize_scalar.h"

#include <cassert>
#include <cstdint>
#include <cstring>

#include "base/fp16.h"
#include "kernels/k_scales.h"
#include "kernels/quant_blocks.h"

namespace strata::kernels {
namespace {

float h2f(uint16_t h) { return fp16_to_fp32(h); }

uint32_t load_qh(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

void dequant_q4_0(const BlockQ4_0& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * ((b.qs[j] & 0xF) - 8);
    y[j + 16] = d * ((b.qs[j] >> 4) - 8);
  }
}

void dequant_q4_1(const BlockQ4_1& b, float* y) {
  const float d = h2f(b.d), m = h2f(b.m);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (b.qs[j] & 0xF) + m;
    y[j + 16] = d * (b.qs[j] >> 4) + m;
  }
}

// The 5-bit quant j of a Q5 block: low nibble from qs, bit 4 from bit j of qh.
int q5_value(const uint8_t qs[16], uint32_t qh, int j) {
  const int low = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
  return low | static_cast<int>((qh >> j) & 1) << 4;
}

void dequant_q5_0(const BlockQ5_0& b, float* y) {
  const float d = h2f(b.d);
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < 32; ++j) y[j] = d * (q5_value(b.qs, qh, j) - 16);
}

void dequant_q5_1(const BlockQ5_1& b, float* y) {
  const float d = h2f(b.d), m = h2f(b.m);
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < 32; ++j) y[j] = d * q5_value(b.qs, qh, j) + m;
}

void dequant_q8_0(const BlockQ8_0& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < 32; ++j) y[j] = d * b.qs[j];
}

// Q2_K: each 32-byte half of qs holds 128 quants as 4 bit-planes of 2 bits; plane p of byte l
// is element 32 * p + l of that half. Sub-block i (16 elements) uses scales[i].
void dequant_q2_k(const BlockQ2_K& b, float* y) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, plane = (e % 128) / 32, l = e % 32;
    const int q = (b.qs[32 * half + l] >> (2 * plane)) & 3;
    const uint8_t sc = b.scales[e / 16];
    y[e] = d * (sc & 0xF) * q - dmin * (sc >> 4);
  }
}

// Q3_K: low 2 bits laid out as Q2_K; the high bit of element e is bit e / 32 of hmask[e % 32],
// and a clear high bit means the quant is offset by -4.
void dequant_q3_k(const BlockQ3_K& b, float* y) {
  const float d = h2f(b.d);
  int8_t scale[16];
  unpack_q3k_scales(b.scales, scale);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, plane = (e % 128) / 32, l = e % 32;
    const int low = (b.qs[32 * half + l] >> (2 * plane)) & 3;
    const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
    y[e] = d * scale[e / 16] * (low - (high ? 0 : 4));
  }
}

// Q4_K / Q5_K: each 32-byte chunk c of qs holds sub-block 2c in its low nibbles and 2c + 1 in
// its high nibbles. Q5_K's fifth bit of element e is bit e / 32 of qh[e % 32].
void dequant_q4_k(const BlockQ4_K& b, float* y) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  uint8_t sc[8], mn[8];
  unpack_q4k_scales(b.scales, sc, mn);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32, l = e % 32;
    const uint8_t byte = b.qs[32 * (sub / 2) + l];
    const int q = sub % 2 == 0 ? byte & 0xF : byte >> 4;
    y[e] = d * sc[sub] * q - dmin * mn[sub];
  }
}

void dequant_q5_k(const BlockQ5_K& b, float* y) {
  const float d = h2f(b.d), dmin = h2f(b.dmin);
  uint8_t sc[8], mn[8];
  unpack_q4k_scales(b.scales, sc, mn);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32, l = e % 32;
    const uint8_t byte = b.qs[32 * (sub / 2) + l];
    const int low = sub % 2 == 0 ? byte & 0xF : byte >> 4;
    const int high = (b.qh[l] >> sub) & 1;
    y[e] = d * sc[sub] * (low | high << 4) - dmin * mn[sub];
  }
}

// Q6_K: per 128-element half h, element 32 * p + l (p = 0..3) has its low nibble in
// ql[64h + l + 32 * (p % 2)] (low nibble for p < 2, high for p >= 2) and its high 2 bits in
// bits 2p of qh[32h + l]; quants are offset by -32.
void dequant_q6_k(const BlockQ6_K& b, float* y) {
  const float d = h2f(b.d);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, p = (e % 128) / 32, l = e % 32;
    const uint8_t lbyte = b.ql[64 * h + l + 32 * (p % 2)];
    const int low = p < 2 ? lbyte & 0xF : lbyte >> 4;
    const int high = (b.qh[32 * h + l] >> (2 * p)) & 3;
    y[e] = d * b.scales[e / 16] * ((low | high << 4) - 32);
  }
}

template <typename Block, void (*Dequant)(const Block&, float*)>
void dequant_blocks(const void* src, float* dst, size_t n, size_t block_size) {
  const Block* blocks = static_cast<const Block*>(src);
  for (size_t i = 0; i < n / block_size; ++i) Dequant(blocks[i], dst + i * block_size);
}

}  // namespace

bool can_dequantize_scalar(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void dequantize_row_scalar(DType type, const void* src, float* dst, size_t n) {
  assert(can_dequantize_scalar(type) && n % traits(type).block_size == 0);
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::kF16:
    case DType::kBF16: {
      const uint8_t* bytes = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = type == DType::kF16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
      }
      return;
    }
    case DType::kQ4_0:
      return dequant_blocks<BlockQ4_0, dequant_q4_0>(src, dst, n, kQK32);
    case DType::kQ4_1:
      return dequant_blocks<BlockQ4_1, dequant_q4_1>(src, dst, n, kQK32);
    case DType::kQ5_0:
      return dequant_blocks<BlockQ5_0, dequant_q5_0>(src, dst, n, kQK32);
    case DType::kQ5_1:
      return dequant_blocks<BlockQ5_1, dequant_q5_1>(src, dst, n, kQK32);
    case DType::kQ8_0:
      return dequant_blocks<BlockQ8_0, dequant_q8_0>(src, dst, n, kQK32);
    case DType::kQ2_K:
      return dequant_blocks<BlockQ2_K, dequant_q2_k>(src, dst, n, kQK_K);
    case DType::kQ3_K:
      return dequant_blocks<BlockQ3_K, dequant_q3_k>(src, dst, n, kQK_K);
    case DType::kQ4_K:
      return dequant_blocks<BlockQ4_K, dequant_q4_k>(src, dst, n, kQK_K);
    case DType::kQ5_K:
      return dequant_blocks<BlockQ5_K, dequant_q5_k>(src, dst, n, kQK_K);
    case DType::kQ6_K:
      return dequant_blocks<BlockQ6_K, dequant_q6_k>(src, dst, n, kQK_K);
    default:
      return;
  }
}

}  // namespace strata::kernels
