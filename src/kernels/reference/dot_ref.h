// Scalar reference dot products of one weight row with activations.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace strata::kernels::reference {

// sum_i W[i] * x[i] in double over the dequantized weights: the exact product the quantized
// weights stand for, with f32 activations.
double dot_dequantized_ref(DType type, const void* row, const float* x, size_t n);

// The scalar twin of the SIMD kernels: the same integer algorithm on activations quantized by
// quantize_act.h (ActBlockQ8 for the 32-element formats, BlockQ8_K for the K formats, plain f32
// for F32/F16/BF16, accumulated in f32). `x_act` points at the quantized row.
float dot_quantized_ref(DType type, const void* row, const void* x_act, size_t n);

}  // namespace strata::kernels::reference
