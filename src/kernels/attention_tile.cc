// The tile attention of kernels/attention_tile.h with Highway runtime dispatch. Register blocks:
// scores two row vectors by four keys, P·V two rows by four vectors of dimensions; every
// multiply-add is fused (Highway's MulAdd), so targets with FMA equal the scalar twin.

#include "kernels/attention_tile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "base/fp16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_tile.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "kernels/exp_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Row [0, n) of f16 or f32 elements into f32 (f16 -> f32 is exact, however it is done).
template <class Element>
HWY_INLINE void ToF32(const Element* src, size_t n, float* dst) {
  if constexpr (std::is_same_v<Element, uint16_t>) {
    const DF df;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const size_t lanes = hn::Lanes(df);
    size_t d = 0;
    for (; d + lanes <= n; d += lanes) {
      hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(src + d))),
                 df, dst + d);
    }
    for (; d < n; ++d) dst[d] = fp16_to_fp32(src[d]);
  } else {
    std::copy_n(src, n, dst);
  }
}

// Scores of row vectors [r0, r0 + R lanes) against keys [t0, t0 + T): s[t][r] = scale *
// (fma chain over d of k[t][d] * q[d][r]), -inf where key position first_pos + t > last[r].
template <size_t R, size_t T>
HWY_INLINE void Scores(const AttentionTile& tile, size_t r0, size_t t0, float first_pos,
                       float scale) {
  const DF df;
  const size_t lanes = hn::Lanes(df), rs = tile.row_stride, hd = tile.head_dim;
  VF a[R][T];
  for (size_t i = 0; i < R; ++i) {
    for (size_t t = 0; t < T; ++t) a[i][t] = hn::Zero(df);
  }
  const float* k = tile.k + t0 * hd;
  for (size_t d = 0; d < hd; ++d) {
    VF q[R];
    for (size_t i = 0; i < R; ++i) q[i] = hn::LoadU(df, tile.qt + d * rs + r0 + i * lanes);
    for (size_t t = 0; t < T; ++t) {
      const VF kv = hn::Set(df, k[t * hd + d]);
      for (size_t i = 0; i < R; ++i) a[i][t] = hn::MulAdd(q[i], kv, a[i][t]);
    }
  }
  const VF vscale = hn::Set(df, scale), neg_inf = hn::Set(df, -HUGE_VALF);
  for (size_t i = 0; i < R; ++i) {
    const VF last = hn::LoadU(df, tile.last + r0 + i * lanes);
    for (size_t t = 0; t < T; ++t) {
      const auto masked = hn::Gt(hn::Set(df, first_pos + static_cast<float>(t0 + t)), last);
      const VF s = hn::IfThenElse(masked, neg_inf, hn::Mul(a[i][t], vscale));
      hn::StoreU(s, df, tile.s + (t0 + t) * rs + r0 + i * lanes);
    }
  }
}

template <size_t R>
HWY_INLINE void ScoreRows(const AttentionTile& tile, size_t r0, size_t n, float first_pos,
                          float scale) {
  size_t t = 0;
  for (; t + 4 <= n; t += 4) Scores<R, 4>(tile, r0, t, first_pos, scale);
  for (; t < n; ++t) Scores<R, 1>(tile, r0, t, first_pos, scale);
}

// The online-softmax update of every row for a block of n keys, column by column (rows in
// lanes): m, l, alpha, and s turned into the weights exp(s - m).
HWY_INLINE void SoftmaxColumns(AttentionTile& tile, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df), rs = tile.row_stride;
  const VF neg_inf = hn::Set(df, -HUGE_VALF);
  for (size_t r = 0; r < rs; r += lanes) {
    const VF m_old = hn::LoadU(df, tile.m + r);
    VF m_new = m_old;
    for (size_t t = 0; t < n; ++t) m_new = hn::Max(m_new, hn::LoadU(df, tile.s + t * rs + r));
    // A row that has seen no key yet subtracts 0: its weights are exp(-inf) = 0.
    const VF m_sub = hn::IfThenZeroElse(hn::Eq(m_new, neg_inf), m_new);
    const VF alpha = ExpPoly(df, hn::Sub(m_old, m_sub));
    VF sum = hn::Zero(df);
    for (size_t t = 0; t < n; ++t) {
      float* s = tile.s + t * rs + r;
      const VF p = ExpPoly(df, hn::Sub(hn::LoadU(df, s), m_sub));
      hn::StoreU(p, df, s);
      sum = hn::Add(sum, p);
    }
    hn::StoreU(hn::Add(hn::Mul(hn::LoadU(df, tile.l + r), alpha), sum), df, tile.l + r);
    hn::StoreU(m_new, df, tile.m + r);
    hn::StoreU(alpha, df, tile.alpha + r);
  }
}

// acc[r] = acc[r] * alpha[r] + sum_{t < n} p[t][r] * v[t] for R rows from r0, C vectors of
// dimensions from d0.
template <size_t R, size_t C>
HWY_INLINE void AccumulateRows(AttentionTile& tile, size_t r0, size_t d0, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df), rs = tile.row_stride, ds = tile.dim_stride;
  VF a[R][C];
  for (size_t i = 0; i < R; ++i) {
    const VF alpha = hn::Set(df, tile.alpha[r0 + i]);
    for (size_t c = 0; c < C; ++c) {
      a[i][c] = hn::Mul(hn::LoadU(df, tile.acc + (r0 + i) * ds + d0 + c * lanes), alpha);
    }
  }
  for (size_t t = 0; t < n; ++t) {
    VF v[C];
    for (size_t c = 0; c < C; ++c) v[c] = hn::LoadU(df, tile.v + t * ds + d0 + c * lanes);
    for (size_t i = 0; i < R; ++i) {
      const VF p = hn::Set(df, tile.s[t * rs + r0 + i]);
      for (size_t c = 0; c < C; ++c) a[i][c] = hn::MulAdd(p, v[c], a[i][c]);
    }
  }
  for (size_t i = 0; i < R; ++i) {
    for (size_t c = 0; c < C; ++c) {
      hn::StoreU(a[i][c], df, tile.acc + (r0 + i) * ds + d0 + c * lanes);
    }
  }
}

template <size_t R>
HWY_INLINE void AccumulateDims(AttentionTile& tile, size_t r0, size_t n) {
  const size_t lanes = hn::Lanes(DF()), vectors = tile.dim_stride / lanes;
  size_t c = 0;
  for (; c + 4 <= vectors; c += 4) AccumulateRows<R, 4>(tile, r0, c * lanes, n);
  switch (vectors - c) {
    case 3:
      AccumulateRows<R, 3>(tile, r0, c * lanes, n);
      break;
    case 2:
      AccumulateRows<R, 2>(tile, r0, c * lanes, n);
      break;
    case 1:
      AccumulateRows<R, 1>(tile, r0, c * lanes, n);
      break;
    default:
      break;
  }
}

// Keys a row sees of the block at first_pos: a prefix, since positions ascend. Weights past it
// are 0, and acc + 0 * v = acc, so a pair of rows may run to the longer prefix of the two.
HWY_INLINE size_t Visible(const AttentionTile& tile, size_t r, size_t first_pos, size_t n) {
  const float seen = tile.last[r] + 1.0f - static_cast<float>(first_pos);
  return seen <= 0.0f ? 0 : std::min(n, static_cast<size_t>(seen));
}

template <class Element>
void AttendTile(AttentionTile& tile, const Element* keys, const Element* values, size_t n,
                size_t first_pos, float scale) {
  const size_t lanes = hn::Lanes(DF()), hd = tile.head_dim;
  for (size_t b = 0; b < n; b += kTileKeyBlock) {
    const size_t nb = std::min(kTileKeyBlock, n - b), pos = first_pos + b;
    for (size_t t = 0; t < nb; ++t) {
      ToF32(keys + (b + t) * hd, hd, tile.k + t * hd);
      ToF32(values + (b + t) * hd, hd, tile.v + t * tile.dim_stride);
    }
    size_t r = 0;
    for (; r + 2 * lanes <= tile.row_stride; r += 2 * lanes) {
      ScoreRows<2>(tile, r, nb, static_cast<float>(pos), scale);
    }
    if (r < tile.row_stride) ScoreRows<1>(tile, r, nb, static_cast<float>(pos), scale);
    SoftmaxColumns(tile, nb);
    for (r = 0; r + 2 <= tile.rows; r += 2) {
      AccumulateDims<2>(tile, r,
                        std::max(Visible(tile, r, pos, nb), Visible(tile, r + 1, pos, nb)));
    }
    if (r < tile.rows) AccumulateDims<1>(tile, r, Visible(tile, r, pos, nb));
  }
}

void AttendTileF16(AttentionTile& tile, const uint16_t* keys, const uint16_t* values, size_t n,
                   size_t first_pos, float scale) {
  AttendTile(tile, keys, values, n, first_pos, scale);
}

void AttendTileF32(AttentionTile& tile, const float* keys, const float* values, size_t n,
                   size_t first_pos, float scale) {
  AttendTile(tile, keys, values, n, first_pos, scale);
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {
namespace {

size_t round_up(size_t n) { return (n + kTileAlign - 1) / kTileAlign * kTileAlign; }

}  // namespace

HWY_EXPORT(AttendTileF16);
HWY_EXPORT(AttendTileF32);

size_t attention_tile_floats(size_t rows, size_t head_dim) {
  const size_t rs = round_up(rows), ds = round_up(head_dim);
  return head_dim * rs + 4 * rs + rows * ds + kTileKeyBlock * (rs + head_dim + ds);
}

AttentionTile begin_attention_tile(float* buffer, const float* q, size_t queries, size_t group,
                                   size_t query_stride, size_t head_dim, const uint32_t* last_pos) {
  AttentionTile t;
  t.rows = queries * group;
  t.group = group;
  t.head_dim = head_dim;
  t.row_stride = round_up(t.rows);
  t.dim_stride = round_up(head_dim);
  const size_t rs = t.row_stride;
  float* p = buffer;
  auto take = [&p](size_t n) { return std::exchange(p, p + n); };
  t.qt = take(head_dim * rs);
  t.last = take(rs);
  t.m = take(rs);
  t.l = take(rs);
  t.alpha = take(rs);
  t.acc = take(t.rows * t.dim_stride);
  t.s = take(kTileKeyBlock * rs);
  t.k = take(kTileKeyBlock * head_dim);
  t.v = take(kTileKeyBlock * t.dim_stride);
  std::fill(buffer, p, 0.0f);  // padding rows and dimensions stay zero
  for (size_t r = 0; r < t.rows; ++r) {
    const float* qr = q + r / group * query_stride + r % group * head_dim;
    for (size_t d = 0; d < head_dim; ++d) t.qt[d * rs + r] = qr[d];
  }
  std::fill_n(t.last, rs, -1.0f);
  for (size_t r = 0; r < t.rows; ++r) t.last[r] = static_cast<float>(last_pos[r / group]);
  std::fill_n(t.m, rs, -std::numeric_limits<float>::infinity());
  return t;
}

void attend_tile_f16(AttentionTile& tile, const uint16_t* keys, const uint16_t* values, size_t n,
                     size_t first_pos, float scale) {
  HWY_DYNAMIC_DISPATCH(AttendTileF16)(tile, keys, values, n, first_pos, scale);
}

void attend_tile_f32(AttentionTile& tile, const float* keys, const float* values, size_t n,
                     size_t first_pos, float scale) {
  HWY_DYNAMIC_DISPATCH(AttendTileF32)(tile, keys, values, n, first_pos, scale);
}

void finish_attention_tile(const AttentionTile& tile, float* out, size_t query_stride) {
  for (size_t r = 0; r < tile.rows; ++r) {
    float* o = out + r / tile.group * query_stride + r % tile.group * tile.head_dim;
    const float inv = 1.0f / tile.l[r];
    for (size_t d = 0; d < tile.head_dim; ++d) o[d] = tile.acc[r * tile.dim_stride + d] * inv;
  }
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
