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

// sum_i W[i] * x[i]: one row and one token (decode), streaming the row once. Two accumulators
// hide the FMA latency; the last partial vector is done in scalar code.
template <class Weights>
HWY_INLINE float DotFloatRow(const Weights& weights, const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const size_t lanes = hn::Lanes(df);
  V acc0 = hn::Zero(df), acc1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(weights.Vec(df, i), hn::LoadU(df, x + i), acc0);
    acc1 = hn::MulAdd(weights.Vec(df, i + lanes), hn::LoadU(df, x + i + lanes), acc1);
  }
  for (; i + lanes <= n; i += lanes)
    acc0 = hn::MulAdd(weights.Vec(df, i), hn::LoadU(df, x + i), acc0);
  float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1)));
  for (; i < n; ++i) sum += weights.Scalar(i) * x[i];
  return sum;
}

#undef STRATA_HAVE_SUM_OF_LANES4
#if HWY_TARGET != HWY_SCALAR
#define STRATA_HAVE_SUM_OF_LANES4 1
// The four lanes of a 128-bit vector added across a vector's 128-bit blocks (v itself when it
// has one).
template <class D>
HWY_INLINE hn::Vec<hn::Full128<float>> AddBlocks(D d, hn::Vec<D> v) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    return AddBlocks(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  } else {
    return v;
  }
}

// [sum of a's lanes, of b's, of c's, of d's]: a 4 x 4 transpose within each 128-bit block by
// interleaving 32-bit then 64-bit lanes, adding as it goes, then the blocks added together.
// About a third of the shuffles and adds of four separate reductions, which matters where a row
// is a few vectors long (a small model's rows of 256 f16 are 16 AVX-512 FMAs, and a lone
// reduction costs about as much again).
template <class DF, class V>
HWY_INLINE hn::Vec<hn::Full128<float>> SumOfLanes4(DF df, V a, V b, V c, V d) {
  const hn::Repartition<uint64_t, DF> d64;
  // Per block: [a0+a2, b0+b2, a1+a3, b1+b3] and the same of c and d.
  const V ab = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
  const V cd = hn::Add(hn::InterleaveLower(df, c, d), hn::InterleaveUpper(df, c, d));
  // Per block: [a, b, c, d] of the block's lanes.
  const auto ab64 = hn::BitCast(d64, ab), cd64 = hn::BitCast(d64, cd);
  const V abcd = hn::Add(hn::BitCast(df, hn::InterleaveLower(d64, ab64, cd64)),
                         hn::BitCast(df, hn::InterleaveUpper(d64, ab64, cd64)));
  return AddBlocks(df, abcd);
}
#else
#define STRATA_HAVE_SUM_OF_LANES4 0
#endif

// out[t * kR + r] = sum_i W_r[i] * x[t * x_stride + i] for kR weight rows (row r at
// weights[r]) and kT tokens: a register tile of kR * kT accumulators, so each converted weight
// vector feeds kT FMAs and each activation vector kR (one row at a time, several tokens are
// bound by the loads, two per FMA). Four rows end in one transposing reduction (SumOfLanes4).
// The last partial vector is done in scalar code.
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
#if STRATA_HAVE_SUM_OF_LANES4
  if constexpr (kR == 4) {
    const hn::Full128<float> d4;
    for (size_t t = 0; t < kT; ++t) {
      hn::StoreU(SumOfLanes4(df, acc[0][t], acc[1][t], acc[2][t], acc[3][t]), d4, out + t * kR);
    }
  } else  // NOLINT(readability/braces)
#endif
  {
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) out[t * kR + r] = hn::GetLane(hn::SumOfLanes(df, acc[r][t]));
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) {
      for (size_t j = i; j < n; ++j) out[t * kR + r] += weights[r].Scalar(j) * x[t * x_stride + j];
    }
  }
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
