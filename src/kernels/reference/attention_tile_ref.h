// Scalar twin of kernels/attention_tile.h: the same blocks, the same fused multiply-add chains
// and the same exp polynomial, one element at a time. On targets with FMA the SIMD kernel equals
// it bit for bit (up to the sign of a zero).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention_tile.h"

namespace strata::kernels::reference {

void attend_tile_f16_ref(AttentionTile& tile, const uint16_t* keys, const uint16_t* values,
                         size_t n, size_t first_pos, float scale);
void attend_tile_f32_ref(AttentionTile& tile, const float* keys, const float* values, size_t n,
                         size_t first_pos, float scale);

}  // namespace strata::kernels::reference
