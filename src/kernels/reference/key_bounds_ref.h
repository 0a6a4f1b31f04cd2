// Scalar twin of kernels/key_bounds.h: the same bound summed in double. The oracle of the SIMD
// kernel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::kernels::reference {

void key_score_bounds_ref(const float* q, size_t group, size_t head_dim, const uint16_t* summaries,
                          size_t stride, const uint32_t* index, size_t n, float* out);

}  // namespace strata::kernels::reference
