// Scalar twins of the f32 kernels whose rounding is pinned down (dot_f32_ordered-inl.h,
// exp_poly-inl.h): the same operations one element at a time, fused where the SIMD code fuses.
// On targets with FMA the SIMD kernels equal these bit for bit.
#pragma once

#include <cstddef>

namespace strata::kernels::reference {

// sum_i w[i] * x[i] in the Blocked16 order (n % 16 == 0).
float dot_f32_blocked16_ref(const float* w, const float* x, size_t n);

// sum_i w[i] * x[i] in the Quad16 order (any n).
float dot_f32_quad16_ref(const float* w, const float* x, size_t n);

// exp(x) by the polynomial of exp_poly-inl.h.
float exp_poly_ref(float x);

// gate[i] = silu(gate[i]) * up[i] for one row of n, as kernels::swiglu rounds it.
void swiglu_ref(float* gate, const float* up, size_t n);

// gate[i] = gelu(gate[i]) * up[i], as kernels::geglu rounds it, computing GELU per element.
void geglu_ref(float* gate, const float* up, size_t n);

}  // namespace strata::kernels::reference
