// Attention's online-softmax loop with Highway runtime dispatch. The x86 targets with hardware
// f16 conversion (AVX2, AVX-512) run it on vectors; the others call the scalar twin, because
// Highway's emulated f32 -> f16 demotion truncates instead of rounding to nearest even.
//
// Per position the vector path computes what the scalar twin computes: the f32 products q[d]*k[d]
// summed in double, and the accumulator update as separate multiply and add (no fusion; the
// kernels build with -ffp-contract=off), rounded to f16 with the same rounding.

#include "kernels/attention.h"

#include <cmath>
#include <type_traits>

#include "kernels/attention_scalar.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

template <class Element>
HWY_INLINE VF LoadRow(const Element* p) {
  const DF df;
  if constexpr (std::is_same_v<Element, uint16_t>) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  } else {
    return hn::LoadU(df, p);
  }
}

HWY_INLINE VF RoundToF16(VF v) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::DemoteTo(dh, v));
}

template <class Element>
HWY_INLINE void AttendRowsVector(const Element* keys, const Element* values, size_t n,
                                 size_t head_dim, const float* q, size_t group, float scale,
                                 OnlineSoftmax* states, float* accs) {
  constexpr bool kF16 = std::is_same_v<Element, uint16_t>;
  const DF df;
  const hn::Half<DF> dh;
  const hn::Repartition<double, DF> dd;
  const size_t lanes = hn::Lanes(df);
  const VF limit = hn::Set(df, kF16AccumulatorLimit);
  HWY_ALIGN float v_lanes[HWY_MAX_BYTES / sizeof(float)];
  for (size_t t = 0; t < n; ++t) {
    const Element* k = keys + t * head_dim;
    const Element* v = values + t * head_dim;
    // The heads' chains of accumulator updates are independent: one position of all of them
    // at a time lets the core overlap them, where one head alone waits on each update.
    for (size_t g = 0; g < group; ++g) {
      const float* qg = q + g * head_dim;
      float* acc = accs + g * head_dim;
      OnlineSoftmax& st = states[g];
      auto dot_lo = hn::Zero(dd), dot_hi = hn::Zero(dd);
      for (size_t d = 0; d < head_dim; d += lanes) {
        const VF prod = hn::Mul(hn::LoadU(df, qg + d), LoadRow(k + d));
        dot_lo = hn::Add(dot_lo, hn::PromoteTo(dd, hn::LowerHalf(dh, prod)));
        dot_hi = hn::Add(dot_hi, hn::PromoteTo(dd, hn::UpperHalf(dh, prod)));
      }
      const double dot = hn::GetLane(hn::SumOfLanes(dd, hn::Add(dot_lo, dot_hi)));
      const float s = static_cast<float>(dot) * scale;

      const auto [rescale, weight] = online_softmax_step(st, s);
      const VF vrescale = hn::Set(df, rescale), vweight = hn::Set(df, weight);
      bool round = kF16 && st.f16_accumulator;
      for (size_t d = 0; d < head_dim; d += lanes) {
        const VF vv = LoadRow(v + d);
        VF a = hn::LoadU(df, acc + d);
        if (rescale != 1.0f) {
          a = hn::Mul(a, vrescale);
          if (round) a = RoundToF16(a);
        }
        a = hn::Add(a, hn::Mul(vv, vweight));
        if (round) {
          if (!hn::AllFalse(df, hn::Gt(hn::Abs(a), limit))) {
            // Rounding stops at the first element past the limit: redo these lanes one by one.
            hn::Store(vv, df, v_lanes);
            round = update_accumulator_scalar(acc + d, v_lanes, lanes, rescale, weight, true);
            continue;
          }
          a = RoundToF16(a);
        }
        hn::StoreU(a, df, acc + d);
      }
      if (kF16) st.f16_accumulator = round;
    }
  }
}

void AttendRowsF16(const uint16_t* keys, const uint16_t* values, size_t n, size_t head_dim,
                   const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc) {
  if (head_dim % hn::Lanes(DF()) != 0) {
    for (size_t g = 0; g < group; ++g) {
      attend_rows_f16_scalar(keys, values, n, head_dim, q + g * head_dim, scale, st[g],
                             acc + g * head_dim);
    }
    return;
  }
  AttendRowsVector(keys, values, n, head_dim, q, group, scale, st, acc);
}

void AttendRowsF32(const float* keys, const float* values, size_t n, size_t head_dim,
                   const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc) {
  if (head_dim % hn::Lanes(DF()) != 0) {
    for (size_t g = 0; g < group; ++g) {
      attend_rows_f32_scalar(keys, values, n, head_dim, q + g * head_dim, scale, st[g],
                             acc + g * head_dim);
    }
    return;
  }
  AttendRowsVector(keys, values, n, head_dim, q, group, scale, st, acc);
}

#else

void AttendRowsF16(const uint16_t* keys, const uint16_t* values, size_t n, size_t head_dim,
                   const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc) {
  for (size_t g = 0; g < group; ++g) {
    attend_rows_f16_scalar(keys, values, n, head_dim, q + g * head_dim, scale, st[g],
                           acc + g * head_dim);
  }
}

void AttendRowsF32(const float* keys, const float* values, size_t n, size_t head_dim,
                   const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc) {
  for (size_t g = 0; g < group; ++g) {
    attend_rows_f32_scalar(keys, values, n, head_dim, q + g * head_dim, scale, st[g],
                           acc + g * head_dim);
  }
}

#endif

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(AttendRowsF16);
HWY_EXPORT(AttendRowsF32);

void attend_rows_f16(const uint16_t* keys, const uint16_t* values, size_t n, size_t head_dim,
                     const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc) {
  HWY_DYNAMIC_DISPATCH(AttendRowsF16)(keys, values, n, head_dim, q, group, scale, st, acc);
}

void attend_rows_f32(const float* keys, const float* values, size_t n, size_t head_dim,
                     const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc) {
  HWY_DYNAMIC_DISPATCH(AttendRowsF32)(keys, values, n, head_dim, q, group, scale, st, acc);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
