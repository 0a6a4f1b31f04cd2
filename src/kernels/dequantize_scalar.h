// Scalar dequantizers, written straight from the block format definitions: what dequantize_row
// (matmul.h) runs, e.g. for embedding rows, and the oracle every faster path is tested against.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace strata::kernels {

// True for the types dequantize_row_scalar understands: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool can_dequantize_scalar(DType type);

// dst[0..n) = the first n values of a row stored as `type`; n must be a multiple of the block
// size and the type supported (both asserted).
void dequantize_row_scalar(DType type, const void* src, float* dst, size_t n);

}  // namespace strata::kernels
