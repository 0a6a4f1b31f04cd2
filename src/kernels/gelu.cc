// GELU by table: f16 input bits index gelu_tanh's f16-rounded value, held as f32 (256 KiB, in
// L2 while a row is mapped). A table rather than tanh per element: Gemma 3 1B maps 6912 gates
// per token and layer, BERT-base 3072. Highway compiles this file once per SIMD target: the
// f32 -> f16 rounding is a few integer operations per vector, the lookup one gather.

#include "kernels/gelu.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/fp16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gelu.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"

#ifndef STRATA_KERNELS_GELU_TABLE_ONCE
#define STRATA_KERNELS_GELU_TABLE_ONCE
namespace strata::kernels {
namespace {

// gelu_tanh of every f16 value, rounded to f16 and widened back: a constant of the function,
// built on first use (thread-safe static initialisation).
const float* gelu_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < t.size(); ++h) {
      t[h] = fp16_to_fp32(fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(h)))));
    }
    return t;
  }();
  return table.data();
}

// gelu(g): 0 at or below -10, the identity at or above 10, else the table's value.
inline float gelu_scalar(const float* table, float g) {
  if (g <= -10.0f) return 0.0f;
  if (g >= 10.0f) return g;
  return table[fp32_to_fp16(g)];
}

}  // namespace
}  // namespace strata::kernels
#endif

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The f16 bits of each lane, rounded to nearest even exactly as base/fp16.h's fp32_to_fp16
// (the same float-arithmetic method, lane-wise): the emulated DemoteTo of targets without F16C
// rounds differently.
template <class DF, class VF = hn::Vec<DF>>
HWY_INLINE hn::Vec<hn::RebindToSigned<DF>> Fp16Bits(DF df, VF f) {
  const hn::RebindToUnsigned<DF> du;
  const auto w = hn::BitCast(du, f);
  const auto shl1_w = hn::Add(w, w);
  const auto sign = hn::And(w, hn::Set(du, 0x80000000u));
  auto base = hn::Mul(hn::Mul(hn::Abs(f), hn::BitCast(df, hn::Set(du, 0x77800000u))),
                      hn::BitCast(df, hn::Set(du, 0x08800000u)));
  const auto bias = hn::Max(hn::And(shl1_w, hn::Set(du, 0xFF000000u)), hn::Set(du, 0x71000000u));
  base = hn::Add(hn::BitCast(df, hn::Add(hn::ShiftRight<1>(bias), hn::Set(du, 0x07800000u))), base);
  const auto bits = hn::BitCast(du, base);
  const auto nonsign = hn::Add(hn::And(hn::ShiftRight<13>(bits), hn::Set(du, 0x00007C00u)),
                               hn::And(bits, hn::Set(du, 0x00000FFFu)));
  const auto nan = hn::Gt(shl1_w, hn::Set(du, 0xFF000000u));
  const auto magnitude = hn::IfThenElse(nan, hn::Set(du, 0x7E00u), nonsign);
  return hn::BitCast(hn::RebindToSigned<DF>(), hn::Or(hn::ShiftRight<16>(sign), magnitude));
}

// x[i] = gelu(x[i]) * up[i] (up null: times 1), as gelu_scalar rounds it.
void GeluMul(const float* table, float* HWY_RESTRICT x, const float* HWY_RESTRICT up, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  const auto low = hn::Set(df, -10.0f), high = hn::Set(df, 10.0f);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto g = hn::LoadU(df, x + i);
    auto y = hn::GatherIndex(df, table, Fp16Bits(df, g));
    y = hn::IfThenElse(hn::Le(g, low), hn::Zero(df), y);
    y = hn::IfThenElse(hn::Ge(g, high), g, y);
    if (up != nullptr) y = hn::Mul(y, hn::LoadU(df, up + i));
    hn::StoreU(y, df, x + i);
  }
  for (; i < n; ++i) x[i] = gelu_scalar(table, x[i]) * (up != nullptr ? up[i] : 1.0f);
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(GeluMul);

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

void geglu(float* gate, const float* up, size_t n) {
  HWY_DYNAMIC_DISPATCH(GeluMul)(gelu_table(), gate, up, n);
}

void gelu(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(GeluMul)(gelu_table(), x, nullptr, n); }

}  // namespace strata::kernels
#endif  // HWY_ONCE
