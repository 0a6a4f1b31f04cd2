#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

namespace strata::kernels {

void rms_norm(const float* x, const float* weight, float* out, size_t n, float eps) {
  double sum_sq = 0.0;
  for (size_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void softmax(float* x, size_t n) {
  if (n == 0) return;
  const float max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(float* gate, const float* up, size_t n) {
  for (size_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

float dot_f32(const float* a, const float* b, size_t n) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy(float* y, float alpha, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace strata::kernels
