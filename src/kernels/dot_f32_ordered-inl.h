// Per-target f32 x f32 dot products with a fixed summation order, so an F32 model's logits are
// the same bit for bit on every target with FMA, and the same as the reference CPU engine's on a
// 16-lane (AVX-512) machine. Rounding order matters more than it seems: the KV cache rounds keys
// and values to f16, and one ulp of difference in a projection flips an f16 rounding now and
// then; a few flips per layer grow to 1e-3 in the logits after a couple of hundred tokens.
//
// Both orders work on 16-lane groups (CappedTag<float, 16>, one or more vectors per group) and
// reduce a group as a pairwise tree: lanes i + 8, then i + 4, i + 2, i + 1.
//   Blocked16: one group accumulator, acc += w[16j..] * x[16j..] fused, for rows that are a
//     multiple of 16 long (the reference's batched matrix-matrix kernel).
//   Quad16: four group accumulators over blocks of 64, combined (0 + 2, 1 + 3, then 0 + 1) and
//     reduced; the columns past the last block of 64 are added one by one to that f32 sum, as
//     rounded products except the last n % 8, which are fused (the reference's matrix-vector
//     dot as its compiler vectorizes the tail).

#if defined(STRATA_KERNELS_DOT_F32_ORDERED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_DOT_F32_ORDERED_INL_H_
#undef STRATA_KERNELS_DOT_F32_ORDERED_INL_H_
#else
#define STRATA_KERNELS_DOT_F32_ORDERED_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "hwy/highway.h"
#include "kernels/dot_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DGroup = hn::CappedTag<float, 16>;
using VGroup = hn::Vec<DGroup>;
// Vectors per 16-lane group: 1 on AVX-512, 2 on AVX2, 4 on SSE4/NEON.
inline size_t GroupVectors() { return 16 / hn::Lanes(DGroup()); }
inline constexpr size_t kMaxGroupVectors = 16;

// The pairwise tree over one group held in g[0 .. GroupVectors()).
HWY_INLINE float ReduceGroup(const VGroup* g) {
  const DGroup d;
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN float v[16];
  for (size_t j = 0; j < GroupVectors(); ++j) hn::Store(g[j], d, v + j * lanes);
  for (size_t stride = 8; stride >= 1; stride /= 2) {
    for (size_t i = 0; i < stride; ++i) v[i] = v[i + stride] + v[i];
  }
  return v[0];
}

// out[t] = sum_i w[i] * x[t * x_stride + i], Blocked16 order; n % 16 == 0.
template <size_t kT>
HWY_INLINE void DotF32Blocked16(const float* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                                size_t x_stride, size_t n, float* HWY_RESTRICT out) {
  const DGroup d;
  const size_t lanes = hn::Lanes(d), nv = GroupVectors();
  VGroup acc[kT][kMaxGroupVectors];
  for (size_t t = 0; t < kT; ++t) {
    for (size_t j = 0; j < nv; ++j) acc[t][j] = hn::Zero(d);
  }
  for (size_t i = 0; i < n; i += 16) {
    for (size_t j = 0; j < nv; ++j) {
      const VGroup wv = hn::LoadU(d, w + i + j * lanes);
      for (size_t t = 0; t < kT; ++t) {
        acc[t][j] = hn::MulAdd(wv, hn::LoadU(d, x + t * x_stride + i + j * lanes), acc[t][j]);
      }
    }
  }
  for (size_t t = 0; t < kT; ++t) out[t] = ReduceGroup(acc[t]);
}

// out[t] = sum_i w[i] * x[t * x_stride + i], Quad16 order; any n.
template <size_t kT>
HWY_INLINE void DotF32Quad16(const float* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                             size_t x_stride, size_t n, float* HWY_RESTRICT out) {
  const DGroup d;
  const size_t lanes = hn::Lanes(d), nv = GroupVectors();
  const size_t n64 = n & ~size_t{63};
  const size_t n_rounded = n & ~size_t{7};
  for (size_t t = 0; t < kT; ++t) {
    const float* xt = x + t * x_stride;
    VGroup acc[4][kMaxGroupVectors];
    for (size_t q = 0; q < 4; ++q) {
      for (size_t j = 0; j < nv; ++j) acc[q][j] = hn::Zero(d);
    }
    for (size_t i = 0; i < n64; i += 64) {
      for (size_t q = 0; q < 4; ++q) {
        for (size_t j = 0; j < nv; ++j) {
          const size_t k = i + q * 16 + j * lanes;
          acc[q][j] = hn::MulAdd(hn::LoadU(d, w + k), hn::LoadU(d, xt + k), acc[q][j]);
        }
      }
    }
    for (size_t j = 0; j < nv; ++j) {
      acc[0][j] = hn::Add(hn::Add(acc[0][j], acc[2][j]), hn::Add(acc[1][j], acc[3][j]));
    }
    float sum = ReduceGroup(acc[0]);
    size_t i = n64;
    for (; i < n_rounded; ++i) sum += w[i] * xt[i];
    for (; i < n; ++i) sum = std::fma(w[i], xt[i], sum);
    out[t] = sum;
  }
}

// Rows [row_begin, row_end) of Y[t][r] = W[r] · x[t] for F32 weights W: [rows][cols]. Blocked16
// where the reference engine's batched kernel takes the product (two or more tokens,
// rows % 4 == 0 and cols % 16 == 0), Quad16 otherwise.
HWY_INLINE void MatmulRowsF32(const float* w, size_t row_begin, size_t row_end, size_t cols,
                              const float* x, size_t n_tokens, float* y, size_t rows) {
  const bool blocked = n_tokens >= 2 && rows % 4 == 0 && cols % 16 == 0;
  ForEachRowTokenTile(row_begin, row_end, n_tokens, y, rows,
                      [&]<size_t kT>(size_t r, size_t t0, float* out) {
                        const float* row = w + r * cols;
                        const float* xt = x + t0 * cols;
                        if (blocked) return DotF32Blocked16<kT>(row, xt, cols, cols, out);
                        DotF32Quad16<kT>(row, xt, cols, cols, out);
                      });
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
