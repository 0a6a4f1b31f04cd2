#include "kernels/quantize_act.h"

#include <cmath>

namespace strata::kernels {
namespace {

// Quantizes n values with one scale; returns d (0 for an all-zero block, whose quants are 0).
float quantize_symmetric(const float* x, int8_t* q, size_t n) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
  }
  const float d = amax / 127.0f;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  // Round half to even by adding and subtracting 1.5 * 2^23: for |v| < 2^22 the sum has no
  // fraction bits left, so the FPU's default rounding does the work (std::nearbyint would be a
  // libm call per element on baseline x86-64, which dominated small matvecs).
  constexpr float kRoundMagic = 12582912.0f;
  for (size_t i = 0; i < n; ++i) {
    const float v = (x[i] * inv + kRoundMagic) - kRoundMagic;
    // |x * inv| <= 127 up to rounding; the clamp guards the int8 range.
    q[i] = static_cast<int8_t>(v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v));
  }
  return d;
}

}  // namespace

ActivationFormat activation_format(DType weight_type) {
  switch (weight_type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return ActivationFormat::kF32;
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
      return ActivationFormat::kQ8_32;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return ActivationFormat::kQ8_K;
    default:
      return ActivationFormat::kNone;
  }
}

size_t activation_row_bytes(ActivationFormat format, size_t n) {
  switch (format) {
    case ActivationFormat::kF32:
      return n * sizeof(float);
    case ActivationFormat::kQ8_32:
      return n / kQK32 * sizeof(ActBlockQ8);
    case ActivationFormat::kQ8_K:
      return n / kQK_K * sizeof(BlockQ8_K);
    case ActivationFormat::kNone:
      break;
  }
  return 0;
}

void quantize_act_q8(const float* x, ActBlockQ8* dst, size_t n) {
  for (size_t b = 0; b < n / kQK32; ++b) {
    ActBlockQ8& blk = dst[b];
    blk.d = quantize_symmetric(x + b * kQK32, blk.qs, kQK32);
    int32_t sum = 0;
    for (int8_t q : blk.qs) sum += q;
    blk.sum = sum;
  }
}

void quantize_act_q8_k(const float* x, BlockQ8_K* dst, size_t n) {
  for (size_t b = 0; b < n / kQK_K; ++b) {
    BlockQ8_K& blk = dst[b];
    blk.d = quantize_symmetric(x + b * kQK_K, blk.qs, kQK_K);
    for (size_t g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (size_t i = 0; i < 16; ++i) sum += blk.qs[g * 16 + i];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace strata::kernels
