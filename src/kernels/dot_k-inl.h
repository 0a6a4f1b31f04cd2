// Per-target dot products of the K formats (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) with BlockQ8_K
// activations, for up to kMaxTileTokens activation rows per weight row.
//
// The integer algorithm (the scalar twin is reference::dot_quantized_ref): per super-block,
// isum = sum over sub-blocks of scale * sum(u * a), with unsigned quants u = q + offset and the
// offset removed through bsums; imin = sum of min * the sub-block's activation sum. Both are exact
// int32, so every path gives the same isum/imin; then d_a * (d * isum - dmin * imin) in f32.

#if defined(STRATA_KERNELS_DOT_K_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_DOT_K_INL_H_
#undef STRATA_KERNELS_DOT_K_INL_H_
#else
#define STRATA_KERNELS_DOT_K_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/dot_common-inl.h"
#include "kernels/k_scales.h"
#include "kernels/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

// ---------------------------------------------------------------------------------------------
// Portable path: unpack the super-block's 256 unsigned quants, then DotI8 per sub-block.

// Q2_K / Q3_K low bits: byte l of 32-byte half h holds elements 128h + 32p + l in bits 2p..2p+1.
HWY_INLINE void Unpack2BitPlanes(const uint8_t* qs, uint8_t* u) {
  for (int h = 0; h < 2; ++h) {
    for (int p = 0; p < 4; ++p) {
      for (int l = 0; l < 32; ++l) u[128 * h + 32 * p + l] = (qs[32 * h + l] >> (2 * p)) & 3;
    }
  }
}

// Q4_K / Q5_K: 32-byte chunk c holds elements 64c + l (low nibble) and 64c + 32 + l (high).
HWY_INLINE void UnpackNibbleChunks(const uint8_t* qs, uint8_t* u) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      u[64 * c + l] = qs[32 * c + l] & 0xF;
      u[64 * c + 32 + l] = qs[32 * c + l] >> 4;
    }
  }
}

// Adds `value` to element 32k + l wherever bit k of bits[l] is set (Q3_K hmask, Q5_K qh).
HWY_INLINE void AddBitPlanes(const uint8_t* bits, uint8_t value, uint8_t* u) {
  for (int k = 0; k < 8; ++k) {
    for (int l = 0; l < 32; ++l) u[32 * k + l] |= ((bits[l] >> k) & 1) ? value : 0;
  }
}

// Q6_K: per half h, ql[64h + l] holds elements 128h + l (low) and 128h + 64 + l (high nibble),
// ql[64h + 32 + l] elements 128h + 32 + l and 128h + 96 + l; qh[32h + l] bits 2p..2p+1 are the
// high bits of element 128h + 32p + l.
HWY_INLINE void UnpackQ6(const BlockQ6_K& b, uint8_t* u) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    uint8_t* y = u + 128 * h;
    for (int l = 0; l < 32; ++l) {
      y[l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
      y[32 + l] = (ql[32 + l] & 0xF) | (((qh[l] >> 2) & 3) << 4);
      y[64 + l] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      y[96 + l] = (ql[32 + l] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
}

HWY_INLINE float CombineK(const BlockQ8_K& x, float d, float dmin, int32_t isum, int32_t imin) {
  return x.d * (d * static_cast<float>(isum) - dmin * static_cast<float>(imin));
}

template <DType kType, size_t kT>
HWY_INLINE void DotKPortable(const void* row, const BlockQ8_K* const* a, size_t blocks,
                             float* out) {
  float acc[kT] = {};
  HWY_ALIGN uint8_t u[kQK_K];
  const int8_t* q = reinterpret_cast<const int8_t*>(u);
  for (size_t b = 0; b < blocks; ++b) {
    if constexpr (kType == DType::kQ2_K) {
      const BlockQ2_K& w = static_cast<const BlockQ2_K*>(row)[b];
      Unpack2BitPlanes(w.qs, u);
      const float d = HalfToFloat(w.d), dmin = HalfToFloat(w.dmin);
      for (size_t t = 0; t < kT; ++t) {
        const BlockQ8_K& x = a[t][b];
        int32_t isum = 0, imin = 0;
        for (int g = 0; g < 16; ++g) {
          isum += (w.scales[g] & 0xF) * DotI8(q + 16 * g, x.qs + 16 * g, 16);
          imin += (w.scales[g] >> 4) * x.bsums[g];
        }
        acc[t] += CombineK(x, d, dmin, isum, imin);
      }
    } else if constexpr (kType == DType::kQ3_K) {
      const BlockQ3_K& w = static_cast<const BlockQ3_K*>(row)[b];
      Unpack2BitPlanes(w.qs, u);
      AddBitPlanes(w.hmask, 4, u);
      int8_t scale[16];
      unpack_q3k_scales(w.scales, scale);
      const float d = HalfToFloat(w.d);
      for (size_t t = 0; t < kT; ++t) {
        const BlockQ8_K& x = a[t][b];
        int32_t isum = 0;
        for (int g = 0; g < 16; ++g) {
          isum += scale[g] * (DotI8(q + 16 * g, x.qs + 16 * g, 16) - 4 * x.bsums[g]);
        }
        acc[t] += x.d * d * static_cast<float>(isum);
      }
    } else if constexpr (kType == DType::kQ4_K || kType == DType::kQ5_K) {
      using Block = std::conditional_t<kType == DType::kQ4_K, BlockQ4_K, BlockQ5_K>;
      const Block& w = static_cast<const Block*>(row)[b];
      UnpackNibbleChunks(w.qs, u);
      if constexpr (kType == DType::kQ5_K) AddBitPlanes(w.qh, 16, u);
      uint8_t sc[8], mn[8];
      unpack_q4k_scales(w.scales, sc, mn);
      const float d = HalfToFloat(w.d), dmin = HalfToFloat(w.dmin);
      for (size_t t = 0; t < kT; ++t) {
        const BlockQ8_K& x = a[t][b];
        int32_t isum = 0, imin = 0;
        for (int s = 0; s < 8; ++s) {
          isum += sc[s] * DotI8(q + 32 * s, x.qs + 32 * s, 32);
          imin += mn[s] * (x.bsums[2 * s] + x.bsums[2 * s + 1]);
        }
        acc[t] += CombineK(x, d, dmin, isum, imin);
      }
    } else {
      static_assert(kType == DType::kQ6_K);
      const BlockQ6_K& w = static_cast<const BlockQ6_K*>(row)[b];
      UnpackQ6(w, u);
      const float d = HalfToFloat(w.d);
      for (size_t t = 0; t < kT; ++t) {
        const BlockQ8_K& x = a[t][b];
        int32_t isum = 0;
        for (int g = 0; g < 16; ++g) {
          isum += w.scales[g] * (DotI8(q + 16 * g, x.qs + 16 * g, 16) - 32 * x.bsums[g]);
        }
        acc[t] += x.d * d * static_cast<float>(isum);
      }
    }
  }
  for (size_t t = 0; t < kT; ++t) out[t] = acc[t];
}

#if STRATA_X86_INT8_DOT
// ---------------------------------------------------------------------------------------------
// x86 path: quants unpacked 32 at a time in registers; maddubs gives int16 pair sums, and
// madd with the sub-block scales (two 16-element sub-blocks per register) accumulates int32.

// sum_g scales16[g] * bsums[g] over the 16 groups, as 8 int32 lanes.
HWY_INLINE __m256i ScaledBsums(const BlockQ8_K& x, __m256i scales16) {
  return _mm256_madd_epi16(Load256(x.bsums), scales16);
}

// Q2_K / Q3_K / Q6_K share the 16-element sub-block layout: `quants(p, h)` returns the 32
// unsigned quants of elements 128h + 32p ..+31 and `scale(g)` the int scale of group g.
template <size_t kT, class Quants>
HWY_INLINE void AccumulateGroups16(const Quants& quants, const int16_t* scale,
                                   const BlockQ8_K* const* a, size_t b, __m256i* isum) {
  // Fully unrolled, so that the bit-plane shifts are immediates.
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i u = quants(p, h);
      const int g = 8 * h + 2 * p;
      const __m256i s = TwoScales16(scale[g], scale[g + 1]);
      for (size_t t = 0; t < kT; ++t) {
        const __m256i va = Load256(a[t][b].qs + 128 * h + 32 * p);
        isum[t] = _mm256_add_epi32(isum[t], ScaledDotU8I8(u, va, s));
      }
    }
  }
}

// Sums the 8 int32 lanes of `a` and the 4 of `b` together: {sum(a), sum(b)}.
HWY_INLINE void HorizontalSums(__m256i a, __m128i b, int32_t* sum_a, int32_t* sum_b) {
  const __m128i a4 = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  const __m128i pairs = _mm_hadd_epi32(a4, b);  // a0+a1, a2+a3, b0+b1, b2+b3
  const __m128i sums = _mm_hadd_epi32(pairs, pairs);
  *sum_a = _mm_cvtsi128_si32(sums);
  *sum_b = _mm_extract_epi32(sums, 1);
}

HWY_INLINE __m128i Load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

template <DType kType, size_t kT>
HWY_INLINE void DotKX86(const void* row, const BlockQ8_K* const* a, size_t blocks, float* out) {
  float acc[kT] = {};
  const __m256i low2 = _mm256_set1_epi8(3), low4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1), bits45 = _mm256_set1_epi8(0x30);
  HWY_ALIGN int16_t scale[16];  // per 16-element group (Q2_K, Q3_K, Q6_K)
  for (size_t b = 0; b < blocks; ++b) {
    __m256i isum[kT];
    for (size_t t = 0; t < kT; ++t) isum[t] = _mm256_setzero_si256();
    if constexpr (kType == DType::kQ2_K) {
      const BlockQ2_K& w = static_cast<const BlockQ2_K*>(row)[b];
      const __m128i packed = Load128(w.scales);
      _mm256_store_si256(reinterpret_cast<__m256i*>(scale),
                         _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0F))));
      const __m256i q[2] = {Load256(w.qs), Load256(w.qs + 32)};
      AccumulateGroups16<kT>(
          [&](int p, int h) { return _mm256_and_si256(_mm256_srli_epi16(q[h], 2 * p), low2); },
          scale, a, b, isum);
      const __m256i mins16 =
          _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
      const float d = HalfToFloat(w.d), dmin = HalfToFloat(w.dmin);
      for (size_t t = 0; t < kT; ++t) {
        const __m256i m = ScaledBsums(a[t][b], mins16);
        const __m128i m4 = _mm_add_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
        int32_t total, imin;
        HorizontalSums(isum[t], m4, &total, &imin);
        acc[t] += CombineK(a[t][b], d, dmin, total, imin);
      }
    } else if constexpr (kType == DType::kQ3_K) {
      const BlockQ3_K& w = static_cast<const BlockQ3_K*>(row)[b];
      uint32_t biased[4];
      unpack_q3k_scales_words(w.scales, biased);
      // Built from registers: four 32-bit stores reloaded as one vector would stall store
      // forwarding.
      const __m128i biased8 =
          _mm_set_epi32(static_cast<int32_t>(biased[3]), static_cast<int32_t>(biased[2]),
                        static_cast<int32_t>(biased[1]), static_cast<int32_t>(biased[0]));
      const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(biased8, _mm_set1_epi8(32)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(scale), scales16);
      const __m256i q[2] = {Load256(w.qs), Load256(w.qs + 32)};
      const __m256i hm = Load256(w.hmask);
      AccumulateGroups16<kT>(
          [&](int p, int h) {
            const __m256i lowbits = _mm256_and_si256(_mm256_srli_epi16(q[h], 2 * p), low2);
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + p), one);
            return _mm256_or_si256(lowbits, _mm256_slli_epi16(high, 2));
          },
          scale, a, b, isum);
      const float d = HalfToFloat(w.d);
      for (size_t t = 0; t < kT; ++t) {
        // The -4 offset: isum -= 4 * sum_g scale[g] * bsums[g].
        const __m256i offset = _mm256_slli_epi32(ScaledBsums(a[t][b], scales16), 2);
        const int32_t total = HorizontalSum(_mm256_sub_epi32(isum[t], offset));
        acc[t] += a[t][b].d * d * static_cast<float>(total);
      }
    } else if constexpr (kType == DType::kQ4_K || kType == DType::kQ5_K) {
      using Block = std::conditional_t<kType == DType::kQ4_K, BlockQ4_K, BlockQ5_K>;
      const Block& w = static_cast<const Block*>(row)[b];
      const Q4kScalesMins sm = unpack_q4k_scales_words(w.scales);
      [[maybe_unused]] __m256i qh;
      if constexpr (kType == DType::kQ5_K) qh = Load256(w.qh);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m256i packed = Load256(w.qs + 32 * c);
        __m256i lo = _mm256_and_si256(packed, low4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
        if constexpr (kType == DType::kQ5_K) {
          const __m256i b_lo = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
          const __m256i b_hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(b_lo, 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(b_hi, 4));
        }
        const __m256i s_lo =
            _mm256_set1_epi16(static_cast<int16_t>((sm.scales >> (16 * c)) & 0xFF));
        const __m256i s_hi =
            _mm256_set1_epi16(static_cast<int16_t>((sm.scales >> (16 * c + 8)) & 0xFF));
        for (size_t t = 0; t < kT; ++t) {
          const int8_t* xq = a[t][b].qs + 64 * c;
          isum[t] = _mm256_add_epi32(isum[t], ScaledDotU8I8(lo, Load256(xq), s_lo));
          isum[t] = _mm256_add_epi32(isum[t], ScaledDotU8I8(hi, Load256(xq + 32), s_hi));
        }
      }
      // Each min covers two bsums groups: add the pairs, then multiply by the 8 mins.
      const __m128i mins8 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.mins)));
      const float d = HalfToFloat(w.d), dmin = HalfToFloat(w.dmin);
      for (size_t t = 0; t < kT; ++t) {
        const __m128i pair_sums =
            _mm_hadd_epi16(Load128(a[t][b].bsums), Load128(a[t][b].bsums + 8));
        int32_t total, imin;
        HorizontalSums(isum[t], _mm_madd_epi16(pair_sums, mins8), &total, &imin);
        acc[t] += CombineK(a[t][b], d, dmin, total, imin);
      }
    } else {
      static_assert(kType == DType::kQ6_K);
      const BlockQ6_K& w = static_cast<const BlockQ6_K*>(row)[b];
      const __m256i scales16 = _mm256_cvtepi8_epi16(Load128(w.scales));
      _mm256_store_si256(reinterpret_cast<__m256i*>(scale), scales16);
      const __m256i ql[4] = {Load256(w.ql), Load256(w.ql + 32), Load256(w.ql + 64),
                             Load256(w.ql + 96)};
      const __m256i qh[2] = {Load256(w.qh), Load256(w.qh + 32)};
      AccumulateGroups16<kT>(
          [&](int p, int h) {
            const __m256i l = ql[2 * h + (p & 1)];
            const __m256i low =
                p < 2 ? _mm256_and_si256(l, low4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), low4);
            // Bits 2p..2p+1 of qh moved to bits 4..5.
            __m256i high;
            switch (p) {
              case 0:
                high = _mm256_slli_epi16(qh[h], 4);
                break;
              case 1:
                high = _mm256_slli_epi16(qh[h], 2);
                break;
              case 2:
                high = qh[h];
                break;
              default:
                high = _mm256_srli_epi16(qh[h], 2);
                break;
            }
            return _mm256_or_si256(low, _mm256_and_si256(high, bits45));
          },
          scale, a, b, isum);
      const float d = HalfToFloat(w.d);
      for (size_t t = 0; t < kT; ++t) {
        // The -32 offset: isum -= 32 * sum_g scale[g] * bsums[g].
        const __m256i offset = _mm256_slli_epi32(ScaledBsums(a[t][b], scales16), 5);
        const int32_t total = HorizontalSum(_mm256_sub_epi32(isum[t], offset));
        acc[t] += a[t][b].d * d * static_cast<float>(total);
      }
    }
  }
  for (size_t t = 0; t < kT; ++t) out[t] = acc[t];
}

#endif  // STRATA_X86_INT8_DOT

template <DType kType, size_t kT>
HWY_INLINE void DotK(const void* row, const BlockQ8_K* const* a, size_t blocks, float* out) {
#if STRATA_X86_INT8_DOT
  DotKX86<kType, kT>(row, a, blocks, out);
#else
  DotKPortable<kType, kT>(row, a, blocks, out);
#endif
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
