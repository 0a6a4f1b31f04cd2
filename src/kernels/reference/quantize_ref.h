// Scalar round-to-nearest weight quantizers for the 32-element formats, as the GGUF/ggml
// reference quantizers define them; used to build small quantized test models.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace strata::kernels::reference {

// True for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
bool can_quantize(DType type);

// Writes row_bytes(type, n) bytes to dst; n must be a multiple of the block size and the type
// quantizable (both asserted).
void quantize_row_ref(DType type, const float* src, void* dst, size_t n);

}  // namespace strata::kernels::reference
