// Per-target dot products of F16 / BF16 weight rows with up to kMaxTileTokens f32
// activation rows at once, several weight rows at a time (each weight vector is loaded and
// converted once per tile, each activation vector once per group of rows).

#if defined(STRATA_KERNELS_DOT_FLOAT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_DOT_FLOAT_INL_H_
#undef STRATA_KERNELS_DOT_FLOAT_INL_H_
#else
#define STRATA_KERNELS_DOT_FLOAT_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "base/fp16.h"
#include "hwy/highway.h"
#include "kernels/dot_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

// Weight loaders: Vec(df, i) converts lanes [i, i + Lanes) to f32; Scalar(i) converts one.
struct F16Weights {
  const hwy::float16_t* w;
  template <class DF>
  HWY_INLINE hn::Vec<DF> Vec(DF df, size_t i) const {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, w + i));
  }
  HWY_INLINE float Scalar(size_t i) const {
    uint16_t bits;
    __builtin_memcpy(&bits, w + i, 2);
    return fp16_to_fp32(bits);
  }
};

// bfloat16 is the upper half of an f32: widen to 32 bits and shift into place.
struct BF16Weights {
  const uint16_t* w;
  template <class DF>
  HWY_INLINE hn::Vec<DF> Vec(DF df, size_t i) const {
    const hn::Rebind<uint16_t, DF> d16;
    const hn::RebindToUnsigned<DF> d32;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(d32, hn::LoadU(d16, w + i))));
  }
  HWY_INLINE float Scalar(size_t i) const { return bf16_to_fp32(w[i]); }
};

// out[t] = sum_i W[i] * x[t * x_stride + i] for t < kT. Two accumulators per token hide the FMA
// latency; the last partial vector is done in scalar code.
template <size_t kT, class Weights>
HWY_INLINE void DotFloatTile(const Weights& weights, const float* HWY_RESTRICT x, size_t x_stride,
                             size_t n, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const size_t lanes = hn::Lanes(df);
  V acc0[kT], acc1[kT];
  for (size_t t = 0; t < kT; ++t) acc0[t] = acc1[t] = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const V w0 = weights.Vec(df, i);
    const V w1 = weights.Vec(df, i + lanes);
    for (size_t t = 0; t < kT; ++t) {
      acc0[t] = hn::MulAdd(w0, hn::LoadU(df, x + t * x_stride + i), acc0[t]);
      acc1[t] = hn::MulAdd(w1, hn::LoadU(df, x + t * x_stride + i + lanes), acc1[t]);
    }
  }
  for (; i + lanes <= n; i += lanes) {
    const V w0 = weights.Vec(df, i);
    for (size_t t = 0; t < kT; ++t) {
      acc0[t] = hn::MulAdd(w0, hn::LoadU(df, x + t * x_stride + i), acc0[t]);
    }
  }
  for (size_t t = 0; t < kT; ++t) {
    float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0[t], acc1[t])));
    for (size_t j = i; j < n; ++j) sum += weights.Scalar(j) * x[t * x_stride + j];
    out[t] = sum;
  }
}

// out[t * kR + r] = sum_i W_r[i] * x[t * x_stride + i] for kR weight rows (row r at
// weights[r]) and kT tokens: a register tile of kR * kT accumulators, so each converted weight
// vector feeds kT FMAs and each activation vector kR (DotFloatTile's one row is bound by its
// loads, two per FMA, once a tile has 4 tokens). The last partial vector is done in scalar code.
template <size_t kR, size_t kT, class Weights>
HWY_INLINE void DotFloatRowsTile(const Weights* weights, const float* HWY_RESTRICT x,
                                 size_t x_stride, size_t n, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const size_t lanes = hn::Lanes(df);
  V acc[kR][kT];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::Zero(df);
  }
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    V xv[kT];
    for (size_t t = 0; t < kT; ++t) xv[t] = hn::LoadU(df, x + t * x_stride + i);
    for (size_t r = 0; r < kR; ++r) {
      const V w = weights[r].Vec(df, i);
      for (size_t t = 0; t < kT; ++t) acc[r][t] = hn::MulAdd(w, xv[t], acc[r][t]);
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[r][t]));
      for (size_t j = i; j < n; ++j) sum += weights[r].Scalar(j) * x[t * x_stride + j];
      out[t * kR + r] = sum;
    }
  }
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
