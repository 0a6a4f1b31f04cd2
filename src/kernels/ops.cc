// f32 transformer ops with Highway runtime dispatch. Partial vectors at the end of an array are
// copied through a full-vector buffer, so every element goes through the same SIMD math.

#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/dot_f32_ordered-inl.h"
#include "kernels/exp_poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

// Applies out = fn(a, b) over [0, n); b may be null for unary use. The tail runs on a
// zero-padded copy.
template <class Fn>
HWY_INLINE void Map2(const float* a, const float* b, float* out, size_t n, const Fn& fn) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const VF vb = b != nullptr ? hn::LoadU(df, b + i) : hn::Zero(df);
    hn::StoreU(fn(hn::LoadU(df, a + i), vb), df, out + i);
  }
  if (i < n) {
    HWY_ALIGN float ta[kMaxLanes] = {}, tb[kMaxLanes] = {}, to[kMaxLanes];
    for (size_t j = i; j < n; ++j) {
      ta[j - i] = a[j];
      if (b != nullptr) tb[j - i] = b[j];
    }
    hn::Store(fn(hn::Load(df, ta), hn::Load(df, tb)), df, to);
    for (size_t j = i; j < n; ++j) out[j] = to[j - i];
  }
}

// sum_i a[i] * b[i] with two accumulators; the tail is zero-padded.
float DotImpl(const float* a, const float* b, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  VF acc0 = hn::Zero(df), acc1 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(df, a + i + lanes), hn::LoadU(df, b + i + lanes), acc1);
  }
  for (; i + lanes <= n; i += lanes) {
    acc0 = hn::MulAdd(hn::LoadU(df, a + i), hn::LoadU(df, b + i), acc0);
  }
  if (i < n) {
    HWY_ALIGN float ta[kMaxLanes] = {}, tb[kMaxLanes] = {};
    for (size_t j = i; j < n; ++j) {
      ta[j - i] = a[j];
      tb[j - i] = b[j];
    }
    acc1 = hn::MulAdd(hn::Load(df, ta), hn::Load(df, tb), acc1);
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1)));
}

// y = x / sqrt(mean(x^2) + eps) * weight. The squares are f32 products summed in double (exact
// enough that the order does not matter), and x is scaled before the weight multiplies it: the
// reference engine's rounding, which F32 models need to agree with it bit for bit.
void RmsNorm(const float* x, const float* weight, float* out, size_t n, float eps) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df_half;  // as many floats as dd has doubles
  const size_t lanes = hn::Lanes(dd);
  auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto v0 = hn::LoadU(df_half, x + i), v1 = hn::LoadU(df_half, x + i + lanes);
    acc0 = hn::Add(acc0, hn::PromoteTo(dd, hn::Mul(v0, v0)));
    acc1 = hn::Add(acc1, hn::PromoteTo(dd, hn::Mul(v1, v1)));
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean_sq = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean_sq + eps);
  const DF df;
  const VF vscale = hn::Set(df, scale);
  Map2(x, weight, out, n, [&](VF v, VF w) { return hn::Mul(hn::Mul(v, vscale), w); });
}

void Softmax(float* x, size_t n) {
  if (n == 0) return;
  const DF df;
  float max = x[0];
  for (size_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  const VF vmax = hn::Set(df, max);
  // exp(x - max) <= 1, so the padded tail (exp(0 - max)) never overflows; it is not summed.
  Map2(x, nullptr, x, n, [&](VF v, VF) { return hn::Exp(df, hn::Sub(v, vmax)); });
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  const VF inv = hn::Set(df, 1.0f / sum);
  Map2(x, nullptr, x, n, [&](VF v, VF) { return hn::Mul(v, inv); });
}

// gate = silu(gate) * up, silu(g) = g / (1 + exp(-g)). Whole groups of 16 use ExpPoly (the
// reference engine's vector exp); the last n % 16 elements use the C library's expf, as it does.
void Swiglu(float* gate, const float* up, size_t n) {
  const DGroup d;
  const size_t lanes = hn::Lanes(d);
  const VGroup one = hn::Set(d, 1.0f);
  const size_t n16 = n & ~size_t{15};
  size_t i = 0;
  for (; i < n16; i += lanes) {
    const VGroup g = hn::LoadU(d, gate + i);
    const VGroup silu = hn::Div(g, hn::Add(one, ExpPoly(d, hn::Neg(g))));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, up + i)), d, gate + i);
  }
  for (; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void Add(float* y, const float* x, size_t n) {
  Map2(y, x, y, n, [](VF a, VF b) { return hn::Add(a, b); });
}

void Axpy(float* y, float alpha, const float* x, size_t n) {
  const DF df;
  const VF valpha = hn::Set(df, alpha);
  Map2(y, x, y, n, [&](VF a, VF b) { return hn::MulAdd(valpha, b, a); });
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(RmsNorm);
HWY_EXPORT(Softmax);
HWY_EXPORT(Swiglu);
HWY_EXPORT(Add);
HWY_EXPORT(DotImpl);
HWY_EXPORT(Axpy);

void rms_norm(const float* x, const float* weight, float* out, size_t n, float eps) {
  HWY_DYNAMIC_DISPATCH(RmsNorm)(x, weight, out, n, eps);
}
// Scalar: encoders normalize a few rows per block, next to matmuls that cost n times more.
void layer_norm(const float* x, const float* weight, const float* bias, float* out, size_t n,
                float eps) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  const auto mean = static_cast<float>(sum / static_cast<double>(n));
  double sum_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    const float centred = x[i] - mean;
    out[i] = centred;
    sum_sq += double{centred} * centred;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(n)) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = out[i] * scale * weight[i] + bias[i];
}

void softmax(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Softmax)(x, n); }
void swiglu(float* gate, const float* up, size_t n) { HWY_DYNAMIC_DISPATCH(Swiglu)(gate, up, n); }
void add(float* y, const float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Add)(y, x, n); }
float dot_f32(const float* a, const float* b, size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotImpl)(a, b, n);
}
void axpy(float* y, float alpha, const float* x, size_t n) {
  HWY_DYNAMIC_DISPATCH(Axpy)(y, alpha, x, n);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
