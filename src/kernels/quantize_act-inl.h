// Per-target activation quantization, bit-identical to the scalar quantize_act_q8 /
// quantize_act_q8_k (same d = max|x| / 127, same products, round half to even, same clamp).

#if defined(STRATA_KERNELS_QUANTIZE_ACT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_QUANTIZE_ACT_INL_H_
#undef STRATA_KERNELS_QUANTIZE_ACT_INL_H_
#else
#define STRATA_KERNELS_QUANTIZE_ACT_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Quantizes n values (a multiple of the vector length and of `group`) with one scale; writes
// the sum of each `group` consecutive quants to group_sums. Returns d.
template <class SumT>
HWY_INLINE float QuantizeBlockSymmetric(const float* HWY_RESTRICT x, int8_t* HWY_RESTRICT q,
                                        size_t n, size_t group, SumT* group_sums) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t lanes = hn::Lanes(df);
  auto vmax = hn::Zero(df);
  for (size_t i = 0; i < n; i += lanes) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, x + i)));
  const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
  const float d = amax / 127.0f;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  const auto vinv = hn::Set(df, inv);
  const auto lo = hn::Set(df, -127.0f), hi = hn::Set(df, 127.0f);
  for (size_t g = 0; g < n / group; ++g) group_sums[g] = 0;
  for (size_t i = 0; i < n; i += lanes) {
    const auto v = hn::Min(hi, hn::Max(lo, hn::Round(hn::Mul(hn::LoadU(df, x + i), vinv))));
    const auto qi = hn::ConvertTo(di32, v);
    hn::StoreU(hn::DemoteTo(di8, qi), di8, q + i);
    // A vector never straddles two groups: lanes divides 16.
    group_sums[i / group] += static_cast<SumT>(hn::GetLane(hn::SumOfLanes(di32, qi)));
  }
  return d;
}

void QuantizeActivations(bool k_blocks, const float* x, uint8_t* dst, size_t n) {
  if (k_blocks) {
    BlockQ8_K* blocks = reinterpret_cast<BlockQ8_K*>(dst);
    for (size_t b = 0; b < n / kQK_K; ++b) {
      blocks[b].d = QuantizeBlockSymmetric(x + b * kQK_K, blocks[b].qs, kQK_K, 16, blocks[b].bsums);
    }
  } else {
    ActBlockQ8* blocks = reinterpret_cast<ActBlockQ8*>(dst);
    for (size_t b = 0; b < n / kQK32; ++b) {
      blocks[b].d =
          QuantizeBlockSymmetric(x + b * kQK32, blocks[b].qs, kQK32, kQK32, &blocks[b].sum);
    }
  }
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
