// Scalar twin of kernels/attention_block.h: the block decoded by the format's scalar decoder
// (kernels/kv_format.h), scores summed in double, std::exp. The oracle of the SIMD kernel.
#pragma once

#include <cstddef>

#include "kernels/attention.h"
#include "kernels/kv_format.h"

namespace strata::kernels::reference {

void attend_block_ref(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                      size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                      float* acc);

}  // namespace strata::kernels::reference
