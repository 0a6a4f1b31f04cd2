#include "kernels/reference/quantize_k_ref.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/fp16.h"
#include "kernels/quant_blocks.h"

namespace strata::kernels::reference {
namespace {

// Below this magnitude a group counts as all zeros (its scale would be denormal noise).
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves the integer in the
// low mantissa bits. The same result as lrintf in the default rounding mode, without a libm call.
inline int round_nearest(float x) {
  const float shifted = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

// ---- Scale searches (weighted least squares over integer assignments) ----

// The element of largest magnitude, with its sign (the first one on ties).
float signed_max_abs(int n, const float* x) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

// Symmetric quants: x ~= scale * l with l in [-nmax, nmax - 1], stored as L = l + nmax. Tries
// the inverse scales -(nmax + k / 10) / max for k = -9..9 (max: the element of largest magnitude,
// with its sign); for each rounding, the best scale is sum(w x l) / sum(w l^2) and it removes
// (sum w x l)^2 / sum(w l^2) of the weighted energy, which is what is maximized. w defaults to x^2
// (large values matter most). Returns the scale.
float fit_symmetric(int n, int nmax, const float* x, const float* w, int8_t* L) {
  const float max = signed_max_abs(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0;
  }
  auto weight = [&](int i) { return w ? w[i] : x[i] * x[i]; };
  auto quant = [&](float iscale, int i) {
    return std::clamp(round_nearest(iscale * x[i]), -nmax, nmax - 1);
  };
  // The plain max-abs scale (k = 0) is the incumbent; another candidate must do strictly better.
  float best_scale = 0, best = 0;
  int best_k = 0;
  for (int step = 0; step < 19; ++step) {
    const int k = step == 0 ? 0 : (step <= 9 ? step - 10 : step - 9);
    const float iscale = -(static_cast<float>(nmax) + 0.1f * k) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = quant(iscale, i);
      const float wi = weight(i);
      sumlx += wi * x[i] * l;
      suml2 += wi * l * l;
    }
    if (step == 0) {
      best_scale = suml2 > 0 ? sumlx / suml2 : 0;
      best = best_scale * sumlx;
    } else if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      best_scale = sumlx / suml2;
      best = best_scale * sumlx;
      best_k = k;
    }
  }
  const float iscale = -(static_cast<float>(nmax) + 0.1f * best_k) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(quant(iscale, i) + nmax);
  return best_scale;
}

// Symmetric quants refined coordinate by coordinate: starting from max-abs rounding, each l is
// moved to the value that is optimal for it given the others' least-squares sums, and the move
// kept when it raises (sum w x l)^2 / sum(w l^2); up to 5 sweeps, w = x^2. Returns the scale;
// L = l + nmax.
float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_max_abs(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(round_nearest(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx <= 0) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      const int l = std::clamp(round_nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      slx += w * x[i] * l;
      sl2 += w * l * l;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0 ? sumlx / suml2 : 0;
}

// Parameters of the affine search: candidate inverse scales (nmax + rmin + rdelta * k) / range
// for k = 0..steps.
struct AffineSearch {
  float rmin;
  float rdelta;
  int steps;
  bool absolute_error;  // minimize sum w |err| instead of sum w err^2 (Q2_K's unweighted search)
};

// Affine quants: x ~= scale * L + min with L in [0, nmax] and min <= 0. For each candidate
// rounding, scale and min solve the 2x2 weighted least-squares system (min clamped to 0 when
// positive); the candidate with the least weighted error wins, starting from the plain
// (max - min) / nmax scaling. Returns the scale and writes -min (>= 0) to *neg_min.
float fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                 const AffineSearch& search) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  min = std::min(min, 0.0f);
  if (max <= min) {
    std::fill(L, L + n, 0);
    *neg_min = -min;
    return 0;
  }
  auto error_of = [&](float d) { return search.absolute_error ? std::fabs(d) : d * d; };
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(round_nearest(iscale * (x[i] - min)), 0, nmax));
    best_error += w[i] * error_of(scale * L[i] + min - x[i]);
  }
  uint8_t candidate[32];
  assert(n <= 32);
  for (int k = 0; k <= search.steps; ++k) {
    iscale = (search.rmin + search.rdelta * k + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_nearest(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i)
      error += w[i] * error_of(this_scale * candidate[i] + this_min - x[i]);
    if (error < best_error) {
      std::copy(candidate, candidate + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

// Non-negative values (sub-block scales or mins) as x ~= scale * L, L in [0, nmax], minimizing
// sum w (x - scale L)^2: the best of 9 inverse scales around nmax / max, then up to 5 sweeps of
// coordinate moves as in fit_symmetric_refined. Returns the scale.
float fit_positive(int n, int nmax, const float* x, const float* w, uint8_t* L) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0;
  }
  float iscale = nmax / max;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const float d = x[i] - (1 / iscale) * round_nearest(iscale * x[i]);
    best_error += w[i] * d * d;
  }
  for (int k = -4; k <= 4; ++k) {
    if (k == 0) continue;
    const float iscale_k = (0.1f * k + nmax) / max;
    const float scale_k = 1 / iscale_k;
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, round_nearest(iscale_k * x[i]));
      const float d = x[i] - scale_k * l;
      error += w[i] * d * d;
    }
    if (error < best_error) {
      best_error = error;
      iscale = iscale_k;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, round_nearest(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    sumlx += w[i] * x[i] * l;
    suml2 += w[i] * l * l;
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      float slx = sumlx - w[i] * x[i] * L[i];
      float sl2 = suml2 - w[i] * L[i] * L[i];
      if (slx <= 0 || sl2 <= 0) continue;
      const int l = std::min(nmax, round_nearest(x[i] * sl2 / slx));
      if (l == L[i]) continue;
      slx += w[i] * x[i] * l;
      sl2 += w[i] * l * l;
      if (slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<uint8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  return suml2 > 0 ? sumlx / suml2 : 0;
}

// Per-element weights of the importance-weighted searches: importance times the typical size of
// a value near x, sqrt(sigma2 + x^2), so that small values are not ignored.
void importance_weights(const float* x, const float* importance, float sigma2, int n, float* w) {
  for (int i = 0; i < n; ++i) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

float sum_of_squares(const float* x, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

// ---- Bit packing (layouts in kernels/quant_blocks.h and dequantize_ref.cc) ----

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

void quantize_row_k_ref(DType type, const float* src, void* dst, size_t n,
                        const float* importance) {
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

void quantize_row_weighted_ref(DType type, const float* src, void* dst, size_t n,
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

}  // namespace strata::kernels::reference
