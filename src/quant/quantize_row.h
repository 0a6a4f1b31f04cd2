// Scalar round-to-nearest weight quantizers for the 32-element formats, as the GGUF/ggml
// reference quantizers define them; quantize_model's path for these formats without an
// importance matrix, and the builder of small quantized test models.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace strata::quant {

// True for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
bool can_quantize(DType type);

// Writes row_bytes(type, n) bytes to dst; n must be a multiple of the block size and the type
// quantizable (both asserted).
void quantize_row(DType type, const float* src, void* dst, size_t n);

}  // namespace strata::quant
