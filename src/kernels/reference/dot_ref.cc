#include "kernels/reference/dot_ref.h"

#include <cassert>
#include <cstdint>
#include <vector>

#include "base/fp16.h"
#include "kernels/dequantize_scalar.h"
#include "kernels/k_scales.h"
#include "kernels/quant_blocks.h"

namespace strata::kernels::reference {
namespace {

float h2f(uint16_t h) { return fp16_to_fp32(h); }

uint32_t load_qh(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

// sum_j q[j] * a[j] over the 32 unsigned 4-bit quants of a Q4 block (element j < 16 in the low
// nibble of qs[j], element j + 16 in its high nibble), optionally with bit 4 from qh.
int32_t dot_nibbles(const uint8_t qs[16], uint32_t qh, const int8_t* a) {
  int32_t sum = 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0xF) | static_cast<int>((qh >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
    sum += lo * a[j] + hi * a[j + 16];
  }
  return sum;
}

// 32-element formats: per block an exact int32 sum of quant products, then one f32 multiply by
// d_w * d_a (and for Q4_1/Q5_1 the min term m * d_a * sum(a)).
float dot_q32(DType type, const void* row, const ActBlockQ8* a, size_t blocks) {
  float acc = 0.0f, min_acc = 0.0f;
  for (size_t i = 0; i < blocks; ++i) {
    switch (type) {
      case DType::kQ4_0: {
        const BlockQ4_0& b = static_cast<const BlockQ4_0*>(row)[i];
        acc += h2f(b.d) * a[i].d * static_cast<float>(dot_nibbles(b.qs, 0, a[i].qs) - 8 * a[i].sum);
        break;
      }
      case DType::kQ4_1: {
        const BlockQ4_1& b = static_cast<const BlockQ4_1*>(row)[i];
        acc += h2f(b.d) * a[i].d * static_cast<float>(dot_nibbles(b.qs, 0, a[i].qs));
        min_acc += h2f(b.m) * a[i].d * static_cast<float>(a[i].sum);
        break;
      }
      case DType::kQ5_0: {
        const BlockQ5_0& b = static_cast<const BlockQ5_0*>(row)[i];
        const int32_t s = dot_nibbles(b.qs, load_qh(b.qh), a[i].qs) - 16 * a[i].sum;
        acc += h2f(b.d) * a[i].d * static_cast<float>(s);
        break;
      }
      case DType::kQ5_1: {
        const BlockQ5_1& b = static_cast<const BlockQ5_1*>(row)[i];
        acc += h2f(b.d) * a[i].d * static_cast<float>(dot_nibbles(b.qs, load_qh(b.qh), a[i].qs));
        min_acc += h2f(b.m) * a[i].d * static_cast<float>(a[i].sum);
        break;
      }
      case DType::kQ8_0: {
        const BlockQ8_0& b = static_cast<const BlockQ8_0*>(row)[i];
        int32_t s = 0;
        for (int j = 0; j < 32; ++j) s += b.qs[j] * a[i].qs[j];
        acc += h2f(b.d) * a[i].d * static_cast<float>(s);
        break;
      }
      default:
        assert(false);
    }
  }
  return acc + min_acc;
}

// K formats: per super-block, isum = sum over sub-blocks of scale * (sum of quant products) and
// imin = sum of min * (sum of the sub-block's activation quants, from bsums), both exact int32;
// then d_a * (d * isum - dmin * imin) in f32.
float dot_q2_k(const BlockQ2_K& b, const BlockQ8_K& a) {
  int32_t isum = 0, imin = 0;
  for (int g = 0; g < 16; ++g) {
    int32_t s = 0;
    for (int k = 0; k < 16; ++k) {
      const int e = 16 * g + k, half = e / 128, plane = (e % 128) / 32, l = e % 32;
      s += ((b.qs[32 * half + l] >> (2 * plane)) & 3) * a.qs[e];
    }
    isum += (b.scales[g] & 0xF) * s;
    imin += (b.scales[g] >> 4) * a.bsums[g];
  }
  return a.d * (h2f(b.d) * static_cast<float>(isum) - h2f(b.dmin) * static_cast<float>(imin));
}

// Q3_K quants are u - 4 with u = low | high << 2 in [0, 7]: sum (u - 4) a = sum u a - 4 bsum.
float dot_q3_k(const BlockQ3_K& b, const BlockQ8_K& a) {
  int8_t scale[16];
  unpack_q3k_scales(b.scales, scale);
  int32_t isum = 0;
  for (int g = 0; g < 16; ++g) {
    int32_t s = 0;
    for (int k = 0; k < 16; ++k) {
      const int e = 16 * g + k, half = e / 128, plane = (e % 128) / 32, l = e % 32;
      const int low = (b.qs[32 * half + l] >> (2 * plane)) & 3;
      const int high = (b.hmask[l] >> (e / 32)) & 1;
      s += (low | high << 2) * a.qs[e];
    }
    isum += scale[g] * (s - 4 * a.bsums[g]);
  }
  return a.d * h2f(b.d) * static_cast<float>(isum);
}

template <typename Block>
float dot_q45_k(const Block& b, const BlockQ8_K& a, const uint8_t* qh) {
  uint8_t sc[8], mn[8];
  unpack_q4k_scales(b.scales, sc, mn);
  int32_t isum = 0, imin = 0;
  for (int sub = 0; sub < 8; ++sub) {
    int32_t s = 0;
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = b.qs[32 * (sub / 2) + l];
      int q = sub % 2 == 0 ? byte & 0xF : byte >> 4;
      if (qh != nullptr) q |= ((qh[l] >> sub) & 1) << 4;
      s += q * a.qs[32 * sub + l];
    }
    isum += sc[sub] * s;
    imin += mn[sub] * (a.bsums[2 * sub] + a.bsums[2 * sub + 1]);
  }
  return a.d * (h2f(b.d) * static_cast<float>(isum) - h2f(b.dmin) * static_cast<float>(imin));
}

// Q6_K quants are u - 32 with u in [0, 63]: sum (u - 32) a = sum u a - 32 bsum.
float dot_q6_k(const BlockQ6_K& b, const BlockQ8_K& a) {
  int32_t isum = 0;
  for (int g = 0; g < 16; ++g) {
    int32_t s = 0;
    for (int k = 0; k < 16; ++k) {
      const int e = 16 * g + k, h = e / 128, p = (e % 128) / 32, l = e % 32;
      const uint8_t lbyte = b.ql[64 * h + l + 32 * (p % 2)];
      const int low = p < 2 ? lbyte & 0xF : lbyte >> 4;
      const int high = (b.qh[32 * h + l] >> (2 * p)) & 3;
      s += (low | high << 4) * a.qs[e];
    }
    isum += b.scales[g] * (s - 32 * a.bsums[g]);
  }
  return a.d * h2f(b.d) * static_cast<float>(isum);
}

float dot_k(DType type, const void* row, const BlockQ8_K* a, size_t blocks) {
  float acc = 0.0f;
  for (size_t i = 0; i < blocks; ++i) {
    switch (type) {
      case DType::kQ2_K:
        acc += dot_q2_k(static_cast<const BlockQ2_K*>(row)[i], a[i]);
        break;
      case DType::kQ3_K:
        acc += dot_q3_k(static_cast<const BlockQ3_K*>(row)[i], a[i]);
        break;
      case DType::kQ4_K:
        acc += dot_q45_k(static_cast<const BlockQ4_K*>(row)[i], a[i], nullptr);
        break;
      case DType::kQ5_K: {
        const BlockQ5_K& b = static_cast<const BlockQ5_K*>(row)[i];
        acc += dot_q45_k(b, a[i], b.qh);
        break;
      }
      case DType::kQ6_K:
        acc += dot_q6_k(static_cast<const BlockQ6_K*>(row)[i], a[i]);
        break;
      default:
        assert(false);
    }
  }
  return acc;
}

}  // namespace

double dot_dequantized_ref(DType type, const void* row, const float* x, size_t n) {
  std::vector<float> w(n);
  dequantize_row_scalar(type, row, w.data(), n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(w[i]) * x[i];
  return sum;
}

float dot_quantized_ref(DType type, const void* row, const void* x_act, size_t n) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: {
      std::vector<float> w(n);
      dequantize_row_scalar(type, row, w.data(), n);
      const float* x = static_cast<const float*>(x_act);
      float sum = 0.0f;
      for (size_t i = 0; i < n; ++i) sum += w[i] * x[i];
      return sum;
    }
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
      return dot_q32(type, row, static_cast<const ActBlockQ8*>(x_act), n / kQK32);
    default:
      return dot_k(type, row, static_cast<const BlockQ8_K*>(x_act), n / kQK_K);
  }
}

}  // namespace strata::kernels::reference
