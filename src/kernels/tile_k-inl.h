// Register-tiled AVX-512 kernels for the K formats Q4_K, Q5_K and Q6_K: kR weight rows times kT
// tokens per pass over the super-blocks, so each unpacked weight register serves kT tokens and
// each activation load serves kR rows. matvec (kT = 1) and matmul both run them, so a row's
// result does not depend on how many tokens share the call.
//
// Per super-block and (row, token): the 256 unsigned quants u sit in four 64-byte registers;
// maddubs gives int16 pair sums u * a (at most 2 * 63 * 127, no saturation), and a multiply-add
// of those with the sub-block scales (vpdpwssd on AVX3_DL, madd + add on AVX3) accumulates exact
// int32 lanes. Then in f32: d_w * d_a * isum, minus the min term sum_s (dmin * min_s) *
// (d_a * bsum_s) for Q4_K/Q5_K; Q6_K's -32 offset is the int32 term -32 * sum_g scale_g * bsum_g.
// The scalar twin (reference::dot_quantized_ref) has the same integer sums; only the order of
// the f32 additions differs.

#if defined(STRATA_KERNELS_TILE_K_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_TILE_K_INL_H_
#undef STRATA_KERNELS_TILE_K_INL_H_
#else
#define STRATA_KERNELS_TILE_K_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/dot_common-inl.h"
#include "kernels/k_scales.h"
#include "kernels/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

// The targets whose tiled or interleaved K kernels read ActBlockQ8KTiled.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// Register k (0-3) of a Q4_K/Q5_K super-block holds the low (k even) or high (k odd) nibbles of
// qs[64 * (k / 2)] ..+63: sub-block kFirstSubBlock[k] in bytes 0-31 and that + 2 in bytes 32-63.
inline constexpr int kFirstSubBlock[4] = {0, 1, 4, 5};

// Packs one token's BlockQ8_K row (n_blocks super-blocks) for the tiled kernels; `q45_order`
// reorders the quants to match the Q4_K/Q5_K registers.
HWY_NOINLINE void PackActK(bool q45_order, const BlockQ8_K* x, size_t n_blocks,
                           ActBlockQ8KTiled* dst) {
  for (size_t b = 0; b < n_blocks; ++b) {
    const BlockQ8_K& src = x[b];
    ActBlockQ8KTiled& out = dst[b];
    for (int k = 0; k < 4; ++k) {
      const int s0 = q45_order ? kFirstSubBlock[k] : 2 * k;
      std::memcpy(out.qs + 64 * k, src.qs + 32 * s0, 32);
      std::memcpy(out.qs + 64 * k + 32, src.qs + 32 * (q45_order ? s0 + 2 : s0 + 1), 32);
    }
    for (int s = 0; s < 8; ++s) {
      out.sub_sums[s] = src.d * static_cast<float>(src.bsums[2 * s] + src.bsums[2 * s + 1]);
      out.sub_sums[8 + s] = 0.0f;
    }
    std::memcpy(out.bsums, src.bsums, sizeof(out.bsums));
    out.d = src.d;
    for (float& z : out.zero) z = 0.0f;
  }
}
#endif  // HWY_AVX2 || HWY_AVX3 || HWY_AVX3_DL

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni")
#endif

// acc + p[2i] * s[2i] + p[2i + 1] * s[2i + 1] in int32 lane i (int16 p and s).
HWY_INLINE __m512i AddPairProducts(__m512i acc, __m512i p, __m512i s) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpwssd_epi32(acc, p, s);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(p, s));
#endif
}

HWY_INLINE __m512i Join256x2(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The 64 unsigned quants of register k of a Q4_K/Q5_K super-block. `qh_pair` (Q5_K) is qh in
// bytes 0-31 and qh >> 2 in bytes 32-63, so that bit kFirstSubBlock[k] of either half is the
// fifth bit of that half's sub-block.
template <bool kFifthBit>
HWY_INLINE __m512i Q45KQuants(const uint8_t* qs, __m512i qh_pair, int k) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i packed = _mm512_loadu_si512(qs + 64 * (k / 2));
  __m512i u = (k & 1) ? _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4)
                      : _mm512_and_si512(packed, low4);
  if constexpr (kFifthBit) {
    // Bit s0 of each byte moved to bit 4 (shifts are per 16-bit lane; the mask keeps the bit
    // that came from the same byte).
    const int s0 = kFirstSubBlock[k];
    __m512i bit;
    if (s0 == 0) {
      bit = _mm512_slli_epi16(qh_pair, 4);
    } else if (s0 == 1) {
      bit = _mm512_slli_epi16(qh_pair, 3);
    } else if (s0 == 4) {
      bit = qh_pair;
    } else {
      bit = _mm512_srli_epi16(qh_pair, 1);
    }
    u = _mm512_or_si512(u, _mm512_and_si512(bit, _mm512_set1_epi8(0x10)));
  }
  return u;
}

// int16 lanes 0-15 = scale of sub-block kFirstSubBlock[k], lanes 16-31 = that of the one 2
// later; scales16 holds the 8 sub-block scales in int16 lanes 0-7.
HWY_INLINE __m512i Q45KScales(__m512i scales16, int k) {
  const __m512i index = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(kFirstSubBlock[k]),
                                                _mm512_set1_epi16(kFirstSubBlock[k] + 2));
  return _mm512_permutexvar_epi16(index, scales16);
}

template <class Block, size_t kR, size_t kT>
HWY_NOINLINE void TileQ45K(const uint8_t* w, size_t w_stride, const ActBlockQ8KTiled* const* a,
                           size_t blocks, float* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  __m512 acc[kR][kT];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < blocks; ++b) {
    const Block* blk[kR];
    __m512i scales16[kR], qh_pair[kR];
    uint64_t mins[kR];
    for (size_t r = 0; r < kR; ++r) {
      blk[r] = reinterpret_cast<const Block*>(w + r * w_stride) + b;
      const Q4kScalesMins sm = unpack_q4k_scales_words(blk[r]->scales);
      scales16[r] = _mm512_zextsi128_si512(
          _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.scales))));
      mins[r] = sm.mins;
      if constexpr (kFifthBit) {
        const __m256i qh = Load256(blk[r]->qh);
        qh_pair[r] = Join256x2(qh, _mm256_srli_epi16(qh, 2));
      } else {
        qh_pair[r] = _mm512_setzero_si512();
      }
    }
    __m512i isum[kR][kT];
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) isum[r][t] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512i q[kR], s[kR];
      for (size_t r = 0; r < kR; ++r) {
        q[r] = Q45KQuants<kFifthBit>(blk[r]->qs, qh_pair[r], k);
        s[r] = Q45KScales(scales16[r], k);
      }
      for (size_t t = 0; t < kT; ++t) {
        const __m512i va = _mm512_load_si512(a[t][b].qs + 64 * k);
        for (size_t r = 0; r < kR; ++r) {
          isum[r][t] = AddPairProducts(isum[r][t], _mm512_maddubs_epi16(q[r], va), s[r]);
        }
      }
    }
    for (size_t r = 0; r < kR; ++r) {
      const __m512 dw = _mm512_set1_ps(HalfToFloat(blk[r]->d));
      // dmin * min_s in lanes 0-7, zero above (the activations' lanes 8-15 are zero too).
      const __m256i mins32 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mins[r])));
      const __m512 scaled_mins = _mm512_zextps256_ps512(
          _mm256_mul_ps(_mm256_cvtepi32_ps(mins32), _mm256_set1_ps(HalfToFloat(blk[r]->dmin))));
      for (size_t t = 0; t < kT; ++t) {
        const ActBlockQ8KTiled& x = a[t][b];
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d));
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][t]), scale, acc[r][t]);
        acc[r][t] = _mm512_fnmadd_ps(scaled_mins, _mm512_load_ps(x.sub_sums), acc[r][t]);
      }
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) out[r * kT + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// The 64 unsigned quants (0-63) of elements 64k ..+63 of a Q6_K super-block: half h = k / 2,
// low (k even) or high nibbles of ql[64h] ..+63, with qh[32h] ..+31 bits 0-1 / 2-3 (k even) or
// 4-5 / 6-7 (k odd) for bytes 0-31 / 32-63 as bits 4-5.
HWY_INLINE __m512i Q6KQuants(const BlockQ6_K& w, int k) {
  const int h = k / 2;
  const __m512i ql = _mm512_loadu_si512(w.ql + 64 * h);
  const __m256i qh = Load256(w.qh + 32 * h);
  const __m512i qh_pair = Join256x2(qh, _mm256_srli_epi16(qh, 2));
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  if (k & 1) {
    return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                           _mm512_and_si512(qh_pair, bits45));
  }
  return _mm512_or_si512(_mm512_and_si512(ql, low4),
                         _mm512_and_si512(_mm512_slli_epi16(qh_pair, 4), bits45));
}

// int16 lanes 8g ..+7 = scale of 16-element group 4k + g (g < 4); scales16 holds all 16.
HWY_INLINE __m512i Q6KScales(__m512i scales16, int k) {
  const __m512i index =
      _mm512_add_epi16(_mm512_set1_epi16(static_cast<int16_t>(4 * k)),
                       _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1,
                                        1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0));
  return _mm512_permutexvar_epi16(index, scales16);
}

template <size_t kR, size_t kT>
HWY_NOINLINE void TileQ6K(const uint8_t* w, size_t w_stride, const ActBlockQ8KTiled* const* a,
                          size_t blocks, float* out) {
  __m512 acc[kR][kT];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < blocks; ++b) {
    const BlockQ6_K* blk[kR];
    __m512i scales16[kR], offset_scales[kR];
    for (size_t r = 0; r < kR; ++r) {
      blk[r] = reinterpret_cast<const BlockQ6_K*>(w + r * w_stride) + b;
      const __m256i s16 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[r]->scales)));
      scales16[r] = _mm512_zextsi256_si512(s16);
      // -32 * scale (|value| <= 4096) against the 16 bsums: the offset of u = q + 32.
      offset_scales[r] = _mm512_zextsi256_si512(
          _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5)));
    }
    __m512i isum[kR][kT];
    for (size_t r = 0; r < kR; ++r) {
      for (size_t t = 0; t < kT; ++t) isum[r][t] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512i q[kR], s[kR];
      for (size_t r = 0; r < kR; ++r) {
        q[r] = Q6KQuants(*blk[r], k);
        s[r] = Q6KScales(scales16[r], k);
      }
      for (size_t t = 0; t < kT; ++t) {
        const __m512i va = _mm512_load_si512(a[t][b].qs + 64 * k);
        for (size_t r = 0; r < kR; ++r) {
          isum[r][t] = AddPairProducts(isum[r][t], _mm512_maddubs_epi16(q[r], va), s[r]);
        }
      }
    }
    for (size_t r = 0; r < kR; ++r) {
      const __m512 dw = _mm512_set1_ps(HalfToFloat(blk[r]->d));
      for (size_t t = 0; t < kT; ++t) {
        const ActBlockQ8KTiled& x = a[t][b];
        const __m512i bsums = _mm512_zextsi256_si512(Load256(x.bsums));
        const __m512i total = AddPairProducts(isum[r][t], bsums, offset_scales[r]);
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d));
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), scale, acc[r][t]);
      }
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) out[r * kT + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC pop_options
#endif
#endif  // HWY_AVX3 || HWY_AVX3_DL

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
