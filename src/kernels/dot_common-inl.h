// Per-target building blocks shared by the dot-product kernels (included once per Highway target
// through foreach_target.h; see matmul.cc).
//
// Highway 1.0.3 has no 8-bit dot-product op, so on x86 targets with AVX2 the integer kernels use
// the x86 byte multiply-add intrinsics directly (STRATA_X86_INT8_DOT); every other target runs the
// portable Highway path. Both compute the same integer sums (tests check every target).

#if defined(STRATA_KERNELS_DOT_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_DOT_COMMON_INL_H_
#undef STRATA_KERNELS_DOT_COMMON_INL_H_
#else
#define STRATA_KERNELS_DOT_COMMON_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "base/fp16.h"
#include "hwy/highway.h"

#undef STRATA_X86_INT8_DOT
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define STRATA_X86_INT8_DOT 1
#include <immintrin.h>
#else
#define STRATA_X86_INT8_DOT 0
#endif

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Most tokens one weight block is multiplied with while it sits unpacked in registers.
inline constexpr size_t kMaxTileTokens = 4;

// Y[t][r] for r in [row_begin, row_end) and t < n_tokens, kMaxTileTokens tokens at a time:
// dot.template operator()<kT>(r, t0, out) writes row r's products with tokens t0 .. t0 + kT.
template <class Dot>
HWY_INLINE void ForEachRowTokenTile(size_t row_begin, size_t row_end, size_t n_tokens, float* y,
                                    size_t y_stride, const Dot& dot) {
  float out[kMaxTileTokens];
  for (size_t t0 = 0; t0 < n_tokens; t0 += kMaxTileTokens) {
    const size_t tile = std::min(kMaxTileTokens, n_tokens - t0);
    for (size_t r = row_begin; r < row_end; ++r) {
      switch (tile) {
        case 1:
          dot.template operator()<1>(r, t0, out);
          break;
        case 2:
          dot.template operator()<2>(r, t0, out);
          break;
        case 3:
          dot.template operator()<3>(r, t0, out);
          break;
        default:
          dot.template operator()<kMaxTileTokens>(r, t0, out);
          break;
      }
      for (size_t t = 0; t < tile; ++t) y[(t0 + t) * y_stride + r] = out[t];
    }
  }
}

// sum_j q[j] * a[j] for n (a multiple of 16) int8 pairs, exact in int32: widen to int16, then
// pairwise multiply-add into int32 lanes.
// (HWY_SCALAR, the fallback for CPUs without SSSE3 and for compilers whose EMU128 is broken, has
// one-lane vectors only: plain loop.)
HWY_INLINE int32_t DotI8(const int8_t* HWY_RESTRICT q, const int8_t* HWY_RESTRICT a, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  int32_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += q[i] * a[i];
  return sum;
#else
  const hn::FixedTag<int8_t, 16> d8;
  const hn::FixedTag<int8_t, 8> d8h;
  const hn::FixedTag<int16_t, 8> d16;
  const hn::FixedTag<int32_t, 4> d32;
  auto sum0 = hn::Zero(d32);
  auto sum1 = hn::Zero(d32);
  for (size_t i = 0; i < n; i += 16) {
    const auto vq = hn::LoadU(d8, q + i);
    const auto va = hn::LoadU(d8, a + i);
    sum0 = hn::ReorderWidenMulAccumulate(d32, hn::PromoteTo(d16, hn::LowerHalf(d8h, vq)),
                                         hn::PromoteTo(d16, hn::LowerHalf(d8h, va)), sum0, sum1);
    sum0 = hn::ReorderWidenMulAccumulate(d32, hn::PromoteTo(d16, hn::UpperHalf(d8h, vq)),
                                         hn::PromoteTo(d16, hn::UpperHalf(d8h, va)), sum0, sum1);
  }
  return hn::GetLane(hn::SumOfLanes(d32, hn::Add(sum0, sum1)));
#endif
}

#if STRATA_X86_INT8_DOT

HWY_INLINE float HalfToFloat(uint16_t h) { return _cvtsh_ss(h); }

// 16 packed bytes -> 32 bytes: the low nibbles (elements 0-15) then the high nibbles (16-31).
HWY_INLINE __m256i UnpackNibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Bit j of the little-endian 32-bit word at qh -> 0x10 in byte j, else 0 (the Q5 fifth bit).
HWY_INLINE __m256i FifthBits32(const uint8_t* qh) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  // Byte j takes source byte j / 8 (the shuffle is per 128-bit lane, and every lane holds all
  // four bytes after the broadcast), then tests its own bit j % 8.
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                          _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                            0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Eight int32 partial sums of u[j] * a[j] over 32 pairs; u unsigned and u * a pair sums within
// int16 (|u| <= 128 for |a| <= 127).
HWY_INLINE __m256i DotU8I8(__m256i u, __m256i a) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), _mm256_set1_epi16(1));
}

// As DotU8I8, with the 16 int16 pair sums weighted by `scales16` (lanes 0-7 weight elements
// 0-15, lanes 8-15 elements 16-31).
HWY_INLINE __m256i ScaledDotU8I8(__m256i u, __m256i a, __m256i scales16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), scales16);
}

// int16 lanes 0-7 = s0, lanes 8-15 = s1.
HWY_INLINE __m256i TwoScales16(int s0, int s1) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<int16_t>(s0))),
                                 _mm_set1_epi16(static_cast<int16_t>(s1)), 1);
}

HWY_INLINE __m256i Load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

HWY_INLINE float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HWY_INLINE int32_t HorizontalSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

#else

HWY_INLINE float HalfToFloat(uint16_t h) { return fp16_to_fp32(h); }

#endif  // STRATA_X86_INT8_DOT

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
