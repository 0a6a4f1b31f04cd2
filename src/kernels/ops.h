// Element-wise and per-vector f32 operations of a transformer forward pass.
#pragma once

#include <cstddef>

namespace strata::kernels {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]   (RMSNorm; out may alias x)
void rms_norm(const float* x, const float* weight, float* out, size_t n, float eps);

// out[i] = (x[i] - mean(x)) / sqrt(var(x) + eps) * weight[i] + bias[i]   (LayerNorm; out may
// alias x). Mean and variance are summed in double, as the reference engine's ggml_norm does.
void layer_norm(const float* x, const float* weight, const float* bias, float* out, size_t n,
                float eps);

// x[i] = exp(x[i] - max) / sum_j exp(x[j] - max)   (in place)
void softmax(float* x, size_t n);

// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g))   (SwiGLU, in place in gate)
void swiglu(float* gate, const float* up, size_t n);

// y[i] += x[i]
void add(float* y, const float* x, size_t n);

// sum_i a[i] * b[i]
float dot_f32(const float* a, const float* b, size_t n);

// y[i] += alpha * x[i]
void axpy(float* y, float alpha, const float* x, size_t n);

}  // namespace strata::kernels
