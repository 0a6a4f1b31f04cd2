// Scalar twin of kernels/attention.h: the same position-by-position online softmax, one element
// at a time. The SIMD kernels fall back to it on targets without hardware f16 conversion.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"

namespace strata::kernels {

void attend_rows_f16_scalar(const uint16_t* keys, const uint16_t* values, size_t n, size_t head_dim,
                            const float* q, float scale, OnlineSoftmax& st, float* acc);
void attend_rows_f32_scalar(const float* keys, const float* values, size_t n, size_t head_dim,
                            const float* q, float scale, OnlineSoftmax& st, float* acc);

// The accumulator update of n elements for one position: acc = acc * rescale (rounded to f16
// while `round`), plus v * weight, rounded to f16 while `round`; `round` turns false at the first
// element beyond kF16AccumulatorLimit. Returns the final `round`.
bool update_accumulator_scalar(float* acc, const float* v, size_t n, float rescale, float weight,
                               bool round);

}  // namespace strata::kernels
