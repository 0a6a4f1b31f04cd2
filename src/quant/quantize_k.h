// Scalar weight quantizers with a scale search: the K formats (Q2_K ... Q6_K, super-blocks of 256
// values) and, for importance-weighted quantization, the 32-element formats Q4_0 ... Q5_1.
//
// The search is the one the GGUF community's quantizer (ggml's k-quants) uses, so that strata's
// files carry the same error: each sub-block's scale (and min) is fitted by trying a range of
// candidate scales, rounding the values at each, and solving the weighted least-squares problem
// for the resulting integer assignment; the sub-block scales are then themselves quantized (4, 6
// or 8 bits against a per-super-block f16 scale) and the quants recomputed against the stored
// scales, so rounding of the scales is not paid twice.
//
// Importance weights (an importance matrix: the mean squared activation each weight column
// meets) turn the error measured into sum_i importance[i] * (x[i] - dequantized[i])^2, which is
// what the layer's output error depends on.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace strata::quant {

// True for Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool is_k_quant(DType type);

// Writes row_bytes(type, n) bytes of `type` blocks to dst. n must be a multiple of 256 and the
// type a K format (both asserted). `importance` is null or n non-negative weights, one per
// element of the row.
void quantize_row_k(DType type, const float* src, void* dst, size_t n,
                    const float* importance = nullptr);

// True for Q4_0, Q4_1, Q5_0, Q5_1: the formats quantize_row_weighted accepts.
bool can_quantize_weighted(DType type);

// The 32-element formats with the importance-weighted search (the plain round-to-nearest
// versions are quantize_row). n must be a multiple of 32; `importance` holds n weights.
void quantize_row_weighted(DType type, const float* src, void* dst, size_t n,
                           const float* importance);

// Q8_0 rounded against the scale as stored (f16), not the exact amax / 127 that
// quantize_row's community-compatible version rounds against: the quants then match the
// scale the dequantizer uses, which lowers the error slightly. n must be a multiple of 32.
void quantize_row_q8_0_stored_scale(const float* src, void* dst, size_t n);

}  // namespace strata::quant
