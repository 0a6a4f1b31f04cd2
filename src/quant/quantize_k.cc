#include "quant/quantize_k.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/fp16.h"
#include "kernels/quant_blocks.h"
#include "quant/scale_search.h"

namespace strata::quant {

using kernels::BlockQ2_K;
using kernels::BlockQ3_K;
using kernels::BlockQ4_0;
using kernels::BlockQ4_1;
using kernels::BlockQ4_K;
using kernels::BlockQ5_0;
using kernels::BlockQ5_1;
using kernels::BlockQ5_K;
using kernels::BlockQ6_K;
using kernels::BlockQ8_0;
using kernels::kQK32;
using kernels::kQK_K;
namespace {

// ---- Bit packing (layouts in kernels/quant_blocks.h and dequantize_scalar.cc) ----

// 256 2-bit values: byte l of each 32-byte half holds elements l, l + 32, l + 64, l + 96.
void pack_2bit_planes(const uint8_t* L, uint8_t qs[64]) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = L + 128 * half;
    for (int l = 0; l < 32; ++l) {
      qs[32 * half + l] =
          static_cast<uint8_t>(q[l] | (q[l + 32] << 2) | (q[l + 64] << 4) | (q[l + 96] << 6));
    }
  }
}

// Eight 6-bit scales and mins into the 12 packed bytes that unpack_q4k_scales reads.
void pack_q4k_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t packed[12]) {
  std::memset(packed, 0, 12);
  for (int j = 0; j < 4; ++j) {
    packed[j] = sc[j] & 63;
    packed[j + 4] = mn[j] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    packed[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((mn[j] & 0xF) << 4));
    packed[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
    packed[j] |= static_cast<uint8_t>((mn[j] >> 4) << 6);
  }
}

// Sixteen biased (0..63) 6-bit scales into the 12 bytes unpack_q3k_scales reads.
void pack_q3k_scales(const uint8_t biased[16], uint8_t packed[12]) {
  std::memset(packed, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const uint8_t low = biased[j] & 0xF, high = (biased[j] >> 4) & 3;
    packed[j < 8 ? j : j - 8] |= static_cast<uint8_t>(j < 8 ? low : low << 4);
    packed[8 + j % 4] |= static_cast<uint8_t>(high << (2 * (j / 4)));
  }
}

// ---- Q2_K: 16 sub-blocks of 16, 2-bit quants, 4-bit scales and mins ----

void quantize_q2_k(const float* x, const float* importance, BlockQ2_K& b) {
  uint8_t L[256], ls[16], lm[16];
  float scales[16], mins[16], w[16], sw[16];
  const float sigma2 = importance ? sum_of_squares(x, 256) / 256 : 0;
  for (int j = 0; j < 16; ++j) {
    const float* xs = x + 16 * j;
    if (importance) {
      importance_weights(xs, importance + 16 * j, sigma2, 16, w);
      scales[j] = fit_affine(16, 3, xs, w, L + 16 * j, &mins[j], {-0.9f, 0.05f, 36, false});
    } else {
      for (int l = 0; l < 16; ++l) w[l] = std::fabs(xs[l]);
      scales[j] = fit_affine(16, 3, xs, w, L + 16 * j, &mins[j], {-0.5f, 0.1f, 15, true});
    }
    sw[j] = 0;
    for (int l = 0; l < 16; ++l) sw[j] += w[l];
  }
  float d, dmin;
  if (importance) {
    d = fit_positive(16, 15, scales, sw, ls);
    dmin = fit_positive(16, 15, mins, sw, lm);
  } else {
    const float max_scale = *std::max_element(scales, scales + 16);
    const float max_min = *std::max_element(mins, mins + 16);
    for (int j = 0; j < 16; ++j) {
      const float iscale = max_scale > 0 ? 15 / max_scale : 0,
                  imin = max_min > 0 ? 15 / max_min : 0;
      ls[j] = static_cast<uint8_t>(std::clamp(round_nearest(iscale * scales[j]), 0, 15));
      lm[j] = static_cast<uint8_t>(std::clamp(round_nearest(imin * mins[j]), 0, 15));
    }
    d = max_scale > 0 ? max_scale / 15 : 0;
    dmin = max_min > 0 ? max_min / 15 : 0;
  }
  b.d = fp32_to_fp16(d);
  b.dmin = fp32_to_fp16(dmin);
  d = fp16_to_fp32(b.d);
  dmin = fp16_to_fp32(b.dmin);
  for (int j = 0; j < 16; ++j) {
    b.scales[j] = static_cast<uint8_t>(ls[j] | (lm[j] << 4));
    const float dj = d * ls[j];
    if (dj == 0) continue;
    const float mj = dmin * lm[j];
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] =
          static_cast<uint8_t>(std::clamp(round_nearest((x[16 * j + l] + mj) / dj), 0, 3));
    }
  }
  pack_2bit_planes(L, b.qs);
}

// ---- Q3_K: 16 sub-blocks of 16, 3-bit signed quants, 6-bit signed scales ----

void quantize_q3_k(const float* x, const float* importance, BlockQ3_K& b) {
  int8_t L[256];
  float scales[16];
  uint8_t biased[16];
  float d;
  if (importance) {
    const float sigma2 = 2 * sum_of_squares(x, 256) / 256;
    float w[16], sw[16];
    for (int j = 0; j < 16; ++j) {
      importance_weights(x + 16 * j, importance + 16 * j, sigma2, 16, w);
      sw[j] = 0;
      for (int l = 0; l < 16; ++l) sw[j] += w[l];
      scales[j] = fit_symmetric(16, 4, x + 16 * j, w, L + 16 * j);
    }
    int8_t lsc[16];
    d = fit_symmetric(16, 32, scales, sw, lsc);
    for (int j = 0; j < 16; ++j) biased[j] = static_cast<uint8_t>(lsc[j]);
  } else {
    float max_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_refined(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
    }
    const float iscale = max_scale != 0 ? -32 / max_scale : 0;
    for (int j = 0; j < 16; ++j) {
      biased[j] = static_cast<uint8_t>(std::clamp(round_nearest(iscale * scales[j]), -32, 31) + 32);
    }
    d = max_scale != 0 ? 1 / iscale : 0;
  }
  pack_q3k_scales(biased, b.scales);
  b.d = fp32_to_fp16(d);
  d = fp16_to_fp32(b.d);
  for (int j = 0; j < 16; ++j) {
    const float dj = d * (biased[j] - 32);
    if (dj == 0) continue;
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = static_cast<int8_t>(std::clamp(round_nearest(x[16 * j + l] / dj), -4, 3) + 4);
    }
  }
  // Quants 0..7: the high bit (set for 4..7) of element e goes to bit e / 32 of hmask[e % 32].
  uint8_t low[256];
  std::memset(b.hmask, 0, sizeof(b.hmask));
  for (int e = 0; e < 256; ++e) {
    const int q = L[e];
    if (q > 3) b.hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    low[e] = static_cast<uint8_t>(q & 3);
  }
  pack_2bit_planes(low, b.qs);
}

// ---- Q4_K and Q5_K: 8 sub-blocks of 32, 4- or 5-bit quants, 6-bit scales and mins ----

// The sub-block fits and the scale quantization shared by Q4_K (nmax 15) and Q5_K (nmax 31);
// writes d, dmin and the packed scales, and the final quants to L.
template <typename Block>
void quantize_q45_k(const float* x, const float* importance, int nmax, Block& b, uint8_t L[256]) {
  float scales[8], mins[8], w[32], sw[8];
  uint8_t ls[8], lm[8];
  float d, dmin;
  if (importance) {
    const float sigma2 = 2 * sum_of_squares(x, 256) / 256;
    for (int j = 0; j < 8; ++j) {
      importance_weights(x + 32 * j, importance + 32 * j, sigma2, 32, w);
      sw[j] = 0;
      for (int l = 0; l < 32; ++l) sw[j] += w[l];
      scales[j] =
          fit_affine(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], {-0.9f, 0.05f, 36, false});
    }
    d = fit_positive(8, 63, scales, sw, ls);
    dmin = fit_positive(8, 63, mins, sw, lm);
  } else {
    // Weights |x| plus the sub-block's RMS: larger values count more, none counts for nothing.
    const AffineSearch search =
        nmax == 15 ? AffineSearch{-1.0f, 0.1f, 20, false} : AffineSearch{-0.5f, 0.1f, 15, false};
    for (int j = 0; j < 8; ++j) {
      const float* xs = x + 32 * j;
      const float rms = std::sqrt(sum_of_squares(xs, 32) / 32);
      for (int l = 0; l < 32; ++l) w[l] = rms + std::fabs(xs[l]);
      scales[j] = fit_affine(32, nmax, xs, w, L + 32 * j, &mins[j], search);
    }
    const float max_scale = *std::max_element(scales, scales + 8);
    const float max_min = *std::max_element(mins, mins + 8);
    const float inv_scale = max_scale > 0 ? 63 / max_scale : 0;
    const float inv_min = max_min > 0 ? 63 / max_min : 0;
    for (int j = 0; j < 8; ++j) {
      ls[j] = static_cast<uint8_t>(std::clamp(round_nearest(inv_scale * scales[j]), 0, 63));
      lm[j] = static_cast<uint8_t>(std::clamp(round_nearest(inv_min * mins[j]), 0, 63));
    }
    d = max_scale / 63;
    dmin = max_min / 63;
  }
  pack_q4k_scales(ls, lm, b.scales);
  b.d = fp32_to_fp16(d);
  b.dmin = fp32_to_fp16(dmin);
  d = fp16_to_fp32(b.d);
  dmin = fp16_to_fp32(b.dmin);
  for (int j = 0; j < 8; ++j) {
    const float dj = d * ls[j];
    if (dj == 0) continue;
    const float mj = dmin * lm[j];
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] =
          static_cast<uint8_t>(std::clamp(round_nearest((x[32 * j + l] + mj) / dj), 0, nmax));
    }
  }
}

// Sub-blocks 2c and 2c + 1 share the 32 bytes of chunk c: low and high nibbles.
void pack_nibble_pairs(const uint8_t* L, uint8_t qs[128]) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * c + l] =
          static_cast<uint8_t>((L[64 * c + l] & 0xF) | ((L[64 * c + 32 + l] & 0xF) << 4));
    }
  }
}

void quantize_q4_k(const float* x, const float* importance, BlockQ4_K& b) {
  uint8_t L[256];
  quantize_q45_k(x, importance, 15, b, L);
  pack_nibble_pairs(L, b.qs);
}

void quantize_q5_k(const float* x, const float* importance, BlockQ5_K& b) {
  uint8_t L[256];
  quantize_q45_k(x, importance, 31, b, L);
  pack_nibble_pairs(L, b.qs);
  // The fifth bit of element e is bit e / 32 of qh[e % 32].
  std::memset(b.qh, 0, sizeof(b.qh));
  for (int e = 0; e < 256; ++e) {
    if (L[e] > 15) b.qh[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
  }
}

// ---- Q6_K: 16 sub-blocks of 16, 6-bit signed quants, int8 scales ----

void quantize_q6_k(const float* x, const float* importance, BlockQ6_K& b) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0;
  for (int j = 0; j < 16; ++j) {
    // The importance is the weight itself here, as in the community's quantizer.
    scales[j] =
        fit_symmetric(16, 32, x + 16 * j, importance ? importance + 16 * j : nullptr, L + 16 * j);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }
  if (std::fabs(max_scale) < kGroupMaxEps) {
    std::memset(&b, 0, sizeof(b));
    return;
  }
  const float iscale = -128 / max_scale;
  b.d = fp32_to_fp16(1 / iscale);
  const float d = fp16_to_fp32(b.d);
  for (int j = 0; j < 16; ++j) {
    b.scales[j] = static_cast<int8_t>(std::min(127, round_nearest(iscale * scales[j])));
    const float dj = d * b.scales[j];
    if (dj == 0) continue;
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] =
          static_cast<int8_t>(std::clamp(round_nearest(x[16 * j + l] / dj), -32, 31) + 32);
    }
  }
  // Per 128-element half h, element 32p + l: low nibble in ql[64h + l + 32 (p % 2)] (high nibble
  // for p >= 2), high 2 bits at bits 2p of qh[32h + l].
  for (int h = 0; h < 2; ++h) {
    const int8_t* q = L + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b.ql[64 * h + l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
      b.ql[64 * h + l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
      b.qh[32 * h + l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                              ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
    }
  }
}

template <typename Block, void (*Quantize)(const float*, const float*, Block&)>
void quantize_super_blocks(const float* src, const float* importance, void* dst, size_t n) {
  Block* blocks = static_cast<Block*>(dst);
  for (size_t i = 0; i < n / kQK_K; ++i) {
    Quantize(src + i * kQK_K, importance ? importance + i * kQK_K : nullptr, blocks[i]);
  }
}

// ---- Importance-weighted 32-element formats ----

void pack_low_nibbles(const uint8_t* L, uint8_t qs[16]) {
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<uint8_t>((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4));
}

void pack_fifth_bits(const uint8_t* L, uint8_t qh[4]) {
  uint32_t bits = 0;
  for (int j = 0; j < 32; ++j) bits |= static_cast<uint32_t>((L[j] >> 4) & 1) << j;
  for (int i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(bits >> (8 * i));
}

// Q4_0 / Q5_0: symmetric with offset 2^(bits-1); Q4_1 / Q5_1: affine. sigma2 is the row's mean
// square.
template <typename Block>
void quantize_weighted_32(const float* x, const float* importance, float sigma2, int bits,
                          bool affine, Block& b) {
  float w[32];
  uint8_t L[32];
  importance_weights(x, importance, sigma2, 32, w);
  const int nmax = affine ? (1 << bits) - 1 : 1 << (bits - 1);
  if (affine) {
    float neg_min;
    const float scale = fit_affine(32, nmax, x, w, L, &neg_min, {-0.9f, 0.05f, 36, false});
    b.d = fp32_to_fp16(scale);
    if constexpr (requires { b.m; }) b.m = fp32_to_fp16(-neg_min);
  } else {
    int8_t q[32];
    b.d = fp32_to_fp16(fit_symmetric(32, nmax, x, w, q));
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(q[j]);
  }
  pack_low_nibbles(L, b.qs);
  if constexpr (requires { b.qh; }) pack_fifth_bits(L, b.qh);
}

template <typename Block>
void quantize_weighted_row(const float* src, const float* importance, void* dst, size_t n, int bits,
                           bool affine) {
  const float sigma2 = sum_of_squares(src, static_cast<int>(n)) / static_cast<float>(n);
  Block* blocks = static_cast<Block*>(dst);
  for (size_t i = 0; i < n / kQK32; ++i) {
    quantize_weighted_32(src + i * kQK32, importance + i * kQK32, sigma2, bits, affine, blocks[i]);
  }
}

}  // namespace

bool is_k_quant(DType type) {
  switch (type) {
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

void quantize_row_k(DType type, const float* src, void* dst, size_t n, const float* importance) {
  assert(is_k_quant(type) && n % kQK_K == 0);
  switch (type) {
    case DType::kQ2_K:
      return quantize_super_blocks<BlockQ2_K, quantize_q2_k>(src, importance, dst, n);
    case DType::kQ3_K:
      return quantize_super_blocks<BlockQ3_K, quantize_q3_k>(src, importance, dst, n);
    case DType::kQ4_K:
      return quantize_super_blocks<BlockQ4_K, quantize_q4_k>(src, importance, dst, n);
    case DType::kQ5_K:
      return quantize_super_blocks<BlockQ5_K, quantize_q5_k>(src, importance, dst, n);
    case DType::kQ6_K:
      return quantize_super_blocks<BlockQ6_K, quantize_q6_k>(src, importance, dst, n);
    default:
      return;
  }
}

bool can_quantize_weighted(DType type) {
  return type == DType::kQ4_0 || type == DType::kQ4_1 || type == DType::kQ5_0 ||
         type == DType::kQ5_1;
}

void quantize_row_weighted(DType type, const float* src, void* dst, size_t n,
                           const float* importance) {
  assert(can_quantize_weighted(type) && n % kQK32 == 0 && importance != nullptr);
  switch (type) {
    case DType::kQ4_0:
      return quantize_weighted_row<BlockQ4_0>(src, importance, dst, n, 4, false);
    case DType::kQ4_1:
      return quantize_weighted_row<BlockQ4_1>(src, importance, dst, n, 4, true);
    case DType::kQ5_0:
      return quantize_weighted_row<BlockQ5_0>(src, importance, dst, n, 5, false);
    case DType::kQ5_1:
      return quantize_weighted_row<BlockQ5_1>(src, importance, dst, n, 5, true);
    default:
      return;
  }
}

void quantize_row_q8_0_stored_scale(const float* src, void* dst, size_t n) {
  assert(n % kQK32 == 0);
  BlockQ8_0* blocks = static_cast<BlockQ8_0*>(dst);
  for (size_t b = 0; b < n / kQK32; ++b) {
    const float* x = src + b * kQK32;
    float amax = 0;
    for (size_t j = 0; j < kQK32; ++j) amax = std::max(amax, std::fabs(x[j]));
    blocks[b].d = fp32_to_fp16(amax / 127);
    const float d = fp16_to_fp32(blocks[b].d);
    const float inv = d != 0 ? 1 / d : 0;
    for (size_t j = 0; j < kQK32; ++j) {
      blocks[b].qs[j] = static_cast<int8_t>(std::clamp(round_nearest(x[j] * inv), -128, 127));
    }
  }
}

}  // namespace strata::quant
