// kernels/key_bounds.h with Highway runtime dispatch, on 8 f32 lanes (head sizes are multiples
// of 8; a page's bound is 2 * head_dim multiply-max-adds per head, too few to gain from wider
// vectors' extra reduction).

#include "kernels/key_bounds.h"

#include <algorithm>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/key_bounds.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DC = hn::CappedTag<float, 8>;
using VC = hn::Vec<DC>;

// bfloat16 is the high half of an f32.
HWY_INLINE VC LoadBf16(const uint16_t* p) {
  const DC df;
  const hn::Rebind<uint16_t, DC> d16;
  const hn::RebindToUnsigned<DC> d32;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(d32, hn::LoadU(d16, p))));
}

void KeyScoreBounds(const float* q, size_t group, size_t head_dim, const uint16_t* summaries,
                    size_t stride, const uint32_t* index, size_t n, float* out) {
  const DC df;
  const size_t lanes = hn::Lanes(df);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t* lo = summaries + size_t{index[i]} * stride;
    const uint16_t* hi = lo + head_dim;
    float best = -std::numeric_limits<float>::infinity();
    for (size_t g = 0; g < group; ++g) {
      const float* qg = q + g * head_dim;
      VC acc = hn::Zero(df);
      for (size_t d = 0; d < head_dim; d += lanes) {
        const VC qv = hn::LoadU(df, qg + d);
        acc = hn::Add(acc, hn::Max(hn::Mul(qv, LoadBf16(lo + d)), hn::Mul(qv, LoadBf16(hi + d))));
      }
      best = std::max(best, hn::GetLane(hn::SumOfLanes(df, acc)));
    }
    out[i] = best;
  }
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(KeyScoreBounds);

void key_score_bounds(const float* q, size_t group, size_t head_dim, const uint16_t* summaries,
                      size_t stride, const uint32_t* index, size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(KeyScoreBounds)(q, group, head_dim, summaries, stride, index, n, out);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
