#include "kernels/reference/ops_ref.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/fp16.h"

namespace strata::kernels::reference {
namespace {

// The 16-lane pairwise tree: lanes i + 8, i + 4, i + 2, i + 1.
float reduce_group(float v[16]) {
  for (size_t stride = 8; stride >= 1; stride /= 2) {
    for (size_t i = 0; i < stride; ++i) v[i] = v[i + stride] + v[i];
  }
  return v[0];
}

float pow2(int k) {
  const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

float dot_f32_blocked16_ref(const float* w, const float* x, size_t n) {
  float acc[16] = {};
  for (size_t i = 0; i < n; i += 16) {
    for (size_t l = 0; l < 16; ++l) acc[l] = std::fma(w[i + l], x[i + l], acc[l]);
  }
  return reduce_group(acc);
}

float dot_f32_quad16_ref(const float* w, const float* x, size_t n) {
  const size_t n64 = n & ~size_t{63}, n_rounded = n & ~size_t{7};
  float acc[4][16] = {};
  for (size_t i = 0; i < n64; i += 64) {
    for (size_t q = 0; q < 4; ++q) {
      for (size_t l = 0; l < 16; ++l) {
        acc[q][l] = std::fma(w[i + q * 16 + l], x[i + q * 16 + l], acc[q][l]);
      }
    }
  }
  float group[16];
  for (size_t l = 0; l < 16; ++l) group[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  float sum = reduce_group(group);
  size_t i = n64;
  for (; i < n_rounded; ++i) sum += w[i] * x[i];
  for (; i < n; ++i) sum = std::fma(w[i], x[i], sum);
  return sum;
}

float exp_poly_ref(float x) {
  if (std::isnan(x)) return x;
  const float shift = 0x1.8p23f;
  const float n = std::fma(x, 0x1.715476p+0f, shift) - shift;
  if (std::abs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float p45 = std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f);
  const float p23 = std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f);
  const float p01 = std::fma(0x1.ffffecp-1f, b, 1.0f);
  const float j = std::fma(std::fma(p45, u, p23), u, p01);
  const int k = static_cast<int>(n);
  const int k1 = k >> 1;  // floor(k / 2), as an arithmetic shift
  return j * pow2(k1) * pow2(k - k1);
}

void swiglu_ref(float* gate, const float* up, size_t n) {
  const size_t n16 = n & ~size_t{15};
  for (size_t i = 0; i < n; ++i) {
    const float e = i < n16 ? exp_poly_ref(-gate[i]) : std::exp(-gate[i]);
    gate[i] = gate[i] / (1.0f + e) * up[i];
  }
}

void geglu_ref(float* gate, const float* up, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    const float x = fp16_to_fp32(fp32_to_fp16(g));
    const float tanh_gelu =
        0.5f * x * (1.0f + std::tanh(0.7978845608f * x * (1.0f + 0.044715f * x * x)));
    const float gelu = g <= -10.0f ? 0.0f : g >= 10.0f ? g : fp16_to_fp32(fp32_to_fp16(tanh_gelu));
    gate[i] = gelu * up[i];
  }
}

}  // namespace strata::kernels::reference
