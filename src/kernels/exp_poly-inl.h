// exp(x) in f32 lanes as the reference CPU engine's vector code computes it (the Arm Optimized
// Routines algorithm): x = n ln2 + b with n = round(x / ln2) by the 1.5 * 2^23 shift trick and ln2
// split in two parts, exp(b) by a degree-5 polynomial in Estrin form, then scaled by 2^n.
// Maximum error about 1.5 ulp; |n| > 192 saturates to 0 or +inf. Every step is an explicit
// (fused where named) operation so the result is the same on every target with FMA.

#if defined(STRATA_KERNELS_EXP_POLY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_EXP_POLY_INL_H_
#undef STRATA_KERNELS_EXP_POLY_INL_H_
#else
#define STRATA_KERNELS_EXP_POLY_INL_H_
#endif

#include <cmath>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 2^k for integer lanes k in [-126, 127], built from the exponent bits.
template <class D>
HWY_INLINE hn::Vec<D> Pow2(D d, hn::Vec<hn::RebindToSigned<D>> k) {
  const hn::RebindToSigned<D> di;
  return hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(k, hn::Set(di, 127))));
}

template <class D>
HWY_INLINE hn::Vec<D> ExpPoly(D d, hn::Vec<D> x) {
  using V = hn::Vec<D>;
  const hn::RebindToSigned<D> di;
  const V shift = hn::Set(d, 0x1.8p23f);
  const V z = hn::MulAdd(x, hn::Set(d, 0x1.715476p+0f), shift);  // x / ln2 + 1.5 * 2^23
  const V n = hn::Sub(z, shift);                                 // round(x / ln2)
  // b = x - n ln2, with ln2 = 0x1.62e4p-1 + 0x1.7f7d1cp-20.
  const V b =
      hn::NegMulAdd(n, hn::Set(d, 0x1.7f7d1cp-20f), hn::NegMulAdd(n, hn::Set(d, 0x1.62e4p-1f), x));
  const V u = hn::Mul(b, b);
  const V p45 = hn::MulAdd(hn::Set(d, 0x1.0e4020p-7f), b, hn::Set(d, 0x1.573e2ep-5f));
  const V p23 = hn::MulAdd(hn::Set(d, 0x1.555e66p-3f), b, hn::Set(d, 0x1.fffdb6p-2f));
  const V p01 = hn::MulAdd(hn::Set(d, 0x1.ffffecp-1f), b, hn::Set(d, 1.0f));
  const V j = hn::MulAdd(hn::MulAdd(p45, u, p23), u, p01);
  // j * 2^n as two exact power-of-two factors (each within the normal range), so the only
  // rounding is the last multiply's, as a single scale by 2^n would round.
  const auto k = hn::ConvertTo(di, n);
  const auto k1 = hn::ShiftRight<1>(k);
  const V res = hn::Mul(hn::Mul(j, Pow2(d, k1)), Pow2(d, hn::Sub(k, k1)));
  const auto out_of_range = hn::Gt(hn::Abs(n), hn::Set(d, 192.0f));
  if (HWY_LIKELY(hn::AllFalse(d, out_of_range))) return res;
  const V saturated = hn::IfThenElse(hn::Le(n, hn::Zero(d)), hn::Zero(d), hn::Set(d, INFINITY));
  return hn::IfThenElse(out_of_range, saturated, res);
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
