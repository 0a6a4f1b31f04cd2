#include "kernels/reference/attention_tile_ref.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/fp16.h"
#include "kernels/reference/ops_ref.h"

namespace strata::kernels::reference {
namespace {

template <class Element>
float to_f32(Element e) {
  if constexpr (std::is_same_v<Element, uint16_t>) {
    return fp16_to_fp32(e);
  } else {
    return e;
  }
}

// One block of n keys at first_pos: scores, the online-softmax update, then P·V.
void attend_block(AttentionTile& tile, size_t n, size_t first_pos, float scale) {
  const size_t rs = tile.row_stride, hd = tile.head_dim, ds = tile.dim_stride;
  for (size_t r = 0; r < rs; ++r) {
    for (size_t t = 0; t < n; ++t) {
      float dot = 0.0f;
      for (size_t d = 0; d < hd; ++d) dot = std::fma(tile.qt[d * rs + r], tile.k[t * hd + d], dot);
      const bool masked = static_cast<float>(first_pos + t) > tile.last[r];
      tile.s[t * rs + r] = masked ? -HUGE_VALF : dot * scale;
    }
    float m_new = tile.m[r];
    for (size_t t = 0; t < n; ++t) m_new = std::max(m_new, tile.s[t * rs + r]);
    const float m_sub = m_new == -HUGE_VALF ? 0.0f : m_new;
    const float alpha = exp_poly_ref(tile.m[r] - m_sub);
    float sum = 0.0f;
    for (size_t t = 0; t < n; ++t) {
      float& s = tile.s[t * rs + r];
      s = exp_poly_ref(s - m_sub);
      sum += s;
    }
    tile.l[r] = tile.l[r] * alpha + sum;
    tile.m[r] = m_new;
    tile.alpha[r] = alpha;
  }
  for (size_t r = 0; r < tile.rows; ++r) {
    float* acc = tile.acc + r * ds;
    for (size_t d = 0; d < ds; ++d) acc[d] *= tile.alpha[r];
    for (size_t t = 0; t < n; ++t) {
      const float p = tile.s[t * rs + r];
      for (size_t d = 0; d < ds; ++d) acc[d] = std::fma(p, tile.v[t * ds + d], acc[d]);
    }
  }
}

template <class Element>
void attend_tile(AttentionTile& tile, const Element* keys, const Element* values, size_t n,
                 size_t first_pos, float scale) {
  const size_t hd = tile.head_dim;
  for (size_t b = 0; b < n; b += kTileKeyBlock) {
    const size_t nb = std::min(kTileKeyBlock, n - b);
    for (size_t t = 0; t < nb; ++t) {
      for (size_t d = 0; d < hd; ++d) {
        tile.k[t * hd + d] = to_f32(keys[(b + t) * hd + d]);
        tile.v[t * tile.dim_stride + d] = to_f32(values[(b + t) * hd + d]);
      }
    }
    attend_block(tile, nb, first_pos + b, scale);
  }
}

}  // namespace

void attend_tile_f16_ref(AttentionTile& tile, const uint16_t* keys, const uint16_t* values,
                         size_t n, size_t first_pos, float scale) {
  attend_tile(tile, keys, values, n, first_pos, scale);
}

void attend_tile_f32_ref(AttentionTile& tile, const float* keys, const float* values, size_t n,
                         size_t first_pos, float scale) {
  attend_tile(tile, keys, values, n, first_pos, scale);
}

}  // namespace strata::kernels::reference
