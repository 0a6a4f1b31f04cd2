// kernels/attention_block.h one element at a time, for heads whose size is not a multiple of the
// SIMD kernel's lanes (the tiny heads of toy models): the block decoded by the format's scalar
// decoder, scores summed in double, std::exp.
#pragma once

#include <cstddef>

#include "kernels/attention.h"
#include "kernels/kv_format.h"

namespace strata::kernels {

void attend_block_scalar(KvFormat format, const void* keys, const void* values, size_t n,
                         size_t rows, size_t head_dim, const float* q, size_t group, float scale,
                         OnlineSoftmax* st, float* acc);

}  // namespace strata::kernels
