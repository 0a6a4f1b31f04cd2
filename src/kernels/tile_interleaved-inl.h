// Kernels for weights in the interleaved layout (interleave.h), AVX-512 VNNI here and AVX2 (also
// run on AVX-512 without VNNI) in tile_interleaved_avx2-inl.h, which reads this file's helpers: one
// group of 16 rows times kT tokens per pass over the blocks. Each 64-byte weight register holds
// four quants of 16 rows; vpdpbusd multiplies it by four broadcast activation bytes and adds one
// int32 per row, so a lane is a row from the first instruction to the final store: no horizontal
// sums, and each block's per-row scales are one vector.
//
// The integer sums are those of the scalar twin (reference::dot_quantized_ref); only the order
// of f32 additions differs:
//   Q4_0: isum = sum q * a - 8 * sum a                 y += d_w * d_a * isum
//   Q5_0: isum = sum (q | h << 4) * a - 16 * sum a      y += d_w * d_a * isum
//   Q8_0: isum = sum (q + 128) * a - 128 * sum a       y += d_w * d_a * isum
//   Q4_K: isum = sum_s scale_s * sum q * a             y += d * d_a * isum
//                                                      y -= sum_s dmin * min_s * d_a * bsum_s
//   Q5_K: as Q4_K with q | h << 4 (AVX2 only)
//   Q6_K: isum = sum_s scale_s * sum (q - 32) * a      y += d * d_a * isum
// (q unsigned as stored; the -32 of Q6_K is -32 * sum_s scale_s * bsum_s, added with vpdpwssd.)

#if defined(STRATA_KERNELS_TILE_INTERLEAVED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_TILE_INTERLEAVED_INL_H_
#undef STRATA_KERNELS_TILE_INTERLEAVED_INL_H_
#else
#define STRATA_KERNELS_TILE_INTERLEAVED_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/interleave.h"
#include "kernels/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
// Decode streams each group from memory once. The hardware prefetchers alone left the Q4_K kernel
// at 30 GB/s on one thread; asking for each line a fixed distance ahead, one prefetch per load so
// that they never queue up in a burst, keeps more misses in flight.
inline constexpr size_t kPrefetchDistance = 4608;

HWY_INLINE void PrefetchAhead(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchDistance), _MM_HINT_T0);
}

// The quants of a Q32 group block: Q8_0's are stored whole, Q4_0's and Q5_0's as nibbles (Q5_0
// with a plane of each row's 32 high bits after the scales).
template <DType kType>
inline constexpr size_t kGroupBlockBytes = kInterleaveRows*(kType == DType::kQ8_0
                                                                ? sizeof(BlockQ8_0)
                                                            : kType == DType::kQ5_0
                                                                ? sizeof(BlockQ5_0)
                                                                : sizeof(BlockQ4_0));
template <DType kType>
inline constexpr int32_t kQuantOffset = kType == DType::kQ8_0   ? 128
                                        : kType == DType::kQ5_0 ? 16
                                                                : 8;

// Q4_K's 6-bit scale and min bytes of sub-block s < 8, one byte per row, from the 12 byte planes
// that plane(p) loads (GGUF get_scale_min_k4: s < 4 in the low 6 bits of bytes s and s + 4;
// s >= 4 in the nibbles of byte s + 4 with the top 2 bits of bytes s - 4 and s).
struct ScaleMinBytes {
  __m128i scale, min;
};
template <class LoadPlane>
HWY_INLINE ScaleMinBytes Q4KScaleMinBytes(const LoadPlane& plane, int s) {
  if (s < 4) {
    return {_mm_and_si128(plane(s), _mm_set1_epi8(0x3F)),
            _mm_and_si128(plane(s + 4), _mm_set1_epi8(0x3F))};
  }
  const __m128i low = plane(s + 4);
  const __m128i top2 = _mm_set1_epi8(0x30);  // bits 6-7 moved to bits 4-5
  return {_mm_or_si128(_mm_and_si128(low, _mm_set1_epi8(0x0F)),
                       _mm_and_si128(_mm_srli_epi16(plane(s - 4), 2), top2)),
          _mm_or_si128(_mm_and_si128(_mm_srli_epi16(low, 4), _mm_set1_epi8(0x0F)),
                       _mm_and_si128(_mm_srli_epi16(plane(s), 2), top2))};
}
#endif

#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni")

// Tokens per pass: each token's accumulators must stay in the 32 vector registers. Q4_0 and
// Q8_0 keep two per token; Q4_K (low and high nibbles) and Q6_K (four sub-blocks) keep more.
// One count for every type here (the AVX2 kernels' count depends on the type).
template <DType kType>
inline constexpr size_t kMaxGroupTokens = 8;
inline constexpr size_t kMaxGroupTokensK = 4;

// A weight register, and the line the kernel will read kPrefetchDistance later.
HWY_INLINE __m512i StreamLoad(const uint8_t* p) {
  PrefetchAhead(p);
  return _mm512_loadu_si512(p);
}

// Four activation bytes in every int32 lane.
HWY_INLINE __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

HWY_INLINE __m512i Load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

// 16 f16 scales (one per row) as f32 lanes.
HWY_INLINE __m512 LoadHalf16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

template <size_t kT>
HWY_INLINE void StoreRows(const __m512* acc, float* y, size_t y_stride) {
  for (size_t t = 0; t < kT; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// y[t * y_stride + r] for the group's 16 rows r and kT tokens; a[t] is token t's ActBlockQ8 row.
template <size_t kT, DType kType>
HWY_NOINLINE void GroupQ32(const uint8_t* w, size_t blocks, const ActBlockQ8* const* a, float* y,
                           size_t y_stride) {
  constexpr bool kQ8 = kType == DType::kQ8_0, kQ5 = kType == DType::kQ5_0;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  // Q5_0's fifth bits: byte 0 of each row's shifted qh copied to its 4 bytes, tested against
  // bits 0-3, becomes 16 in the bytes whose bit is set.
  const __m512i byte0 = _mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0x00000000);
  const __m512i bit_k = _mm512_set1_epi32(0x08040201);
  const __m512i sixteen = _mm512_set1_epi8(16);
  __m512 acc[kT];
  for (size_t t = 0; t < kT; ++t) acc[t] = _mm512_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlockBytes<kType>;
    PrefetchAhead(gb);
    const uint8_t* qh = gb + 2 * kInterleaveRows;
    const uint8_t* qs = qh + (kQ5 ? 4 * kInterleaveRows : 0);
    const __m512i high_bits = kQ5 ? Load512(qh) : _mm512_setzero_si512();
    __m512i isum[kT];
    for (size_t t = 0; t < kT; ++t) isum[t] = _mm512_set1_epi32(-kQuantOffset<kType> * a[t][b].sum);
    // Quants 4e ..+3 of the block: register e of Q8_0; the low (e < 4) or high nibbles of
    // register e % 4 of Q4_0 and Q5_0 (with bits 4e ..+3 of the row's qh as their fifth bits).
    for (size_t e = 0; e < 8; ++e) {
      __m512i u;
      if constexpr (kQ8) {
        u = StreamLoad(qs + 64 * e);
      } else {
        const __m512i packed = e < 4 ? StreamLoad(qs + 64 * e) : Load512(qs + 64 * (e % 4));
        u = _mm512_and_si512(e < 4 ? packed : _mm512_srli_epi16(packed, 4), low4);
      }
      if constexpr (kQ5) {
        const __m512i bits = _mm512_shuffle_epi8(
            _mm512_srl_epi32(high_bits, _mm_cvtsi32_si128(static_cast<int>(4 * e))), byte0);
        u = _mm512_or_si512(u, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(bits, bit_k), sixteen));
      }
      for (size_t t = 0; t < kT; ++t) {
        isum[t] = _mm512_dpbusd_epi32(isum[t], u, Broadcast4(a[t][b].qs + 4 * e));
      }
    }
    const __m512 dw = LoadHalf16(gb);
    for (size_t t = 0; t < kT; ++t) {
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(a[t][b].d));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), scale, acc[t]);
    }
  }
  StoreRows<kT>(acc, y, y_stride);
}

// Scale and min of sub-block s < 8 for the 16 rows, from the 12 byte planes of the packed 6-bit
// values (GGUF get_scale_min_k4: s < 4 in the low 6 bits of bytes s and s + 4; s >= 4 in the
// nibbles of byte s + 4 with the top 2 bits of bytes s - 4 and s).
struct ScaleMin16 {
  __m512i scale, min;
};
HWY_INLINE ScaleMin16 Q4KScaleMin(const uint8_t* planes, int s) {
  const ScaleMinBytes bytes = Q4KScaleMinBytes(
      [&](int p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 16 * p)); }, s);
  return {_mm512_cvtepu8_epi32(bytes.scale), _mm512_cvtepu8_epi32(bytes.min)};
}

template <size_t kT>
HWY_NOINLINE void GroupQ4K(const uint8_t* w, size_t blocks, const ActBlockQ8KTiled* const* a,
                           float* y, size_t y_stride) {
  constexpr size_t kGroupBlock = kInterleaveRows * sizeof(BlockQ4_K);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[kT];
  for (size_t t = 0; t < kT; ++t) acc[t] = _mm512_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlock;
    const uint8_t* planes = gb + 4 * kInterleaveRows;
    const uint8_t* qs = planes + 12 * kInterleaveRows;
    for (size_t line = 0; line < 256; line += 64) PrefetchAhead(gb + line);  // scales
    __m512i total[kT];
    for (size_t t = 0; t < kT; ++t) total[t] = _mm512_setzero_si512();
    // Chunk i holds sub-blocks 2i (low nibbles) and 2i + 1 (high nibbles): one pass over its
    // registers feeds both.
    for (int i = 0; i < 4; ++i) {
      const uint8_t* chunk = qs + 512 * i;
      __m512i lo[kT], hi[kT];
      for (size_t t = 0; t < kT; ++t) lo[t] = hi[t] = _mm512_setzero_si512();
      for (size_t j = 0; j < 8; ++j) {
        const __m512i packed = StreamLoad(chunk + 64 * j);
        const __m512i u_lo = _mm512_and_si512(packed, low4);
        const __m512i u_hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
        for (size_t t = 0; t < kT; ++t) {
          const int8_t* act = a[t][b].qs + 64 * i + 4 * j;
          lo[t] = _mm512_dpbusd_epi32(lo[t], u_lo, Broadcast4(act));
          hi[t] = _mm512_dpbusd_epi32(hi[t], u_hi, Broadcast4(act + 32));
        }
      }
      const __m512i scale_lo = Q4KScaleMin(planes, 2 * i).scale;
      const __m512i scale_hi = Q4KScaleMin(planes, 2 * i + 1).scale;
      for (size_t t = 0; t < kT; ++t) {
        total[t] = _mm512_add_epi32(total[t], _mm512_mullo_epi32(lo[t], scale_lo));
        total[t] = _mm512_add_epi32(total[t], _mm512_mullo_epi32(hi[t], scale_hi));
      }
    }
    const __m512 d = LoadHalf16(gb), dmin = LoadHalf16(gb + 2 * kInterleaveRows);
    for (size_t t = 0; t < kT; ++t) {
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(a[t][b].d));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[t]), scale, acc[t]);
    }
    for (int s = 0; s < 8; ++s) {
      const __m512 min = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(Q4KScaleMin(planes, s).min));
      for (size_t t = 0; t < kT; ++t) {
        acc[t] = _mm512_fnmadd_ps(min, _mm512_set1_ps(a[t][b].sub_sums[s]), acc[t]);
      }
    }
  }
  StoreRows<kT>(acc, y, y_stride);
}

// The 4 x 64 quants (0-63) of elements 128h + 32q + 4j ..+3 (q < 4) of the 16 rows, from the
// three registers of (h, j): low (q < 2) or high nibbles of ql[64h + 32 (q % 2) + 4j], with bits
// 2q, 2q + 1 of qh[32h + 4j] as bits 4-5.
HWY_INLINE void Q6KQuants16(const uint8_t* regs, __m512i (&u)[4]) {
  const __m512i ql0 = StreamLoad(regs), ql1 = StreamLoad(regs + 64), qh = StreamLoad(regs + 128);
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  u[0] = _mm512_or_si512(_mm512_and_si512(ql0, low4),
                         _mm512_and_si512(_mm512_slli_epi16(qh, 4), bits45));
  u[1] = _mm512_or_si512(_mm512_and_si512(ql1, low4),
                         _mm512_and_si512(_mm512_slli_epi16(qh, 2), bits45));
  u[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql0, 4), low4),
                         _mm512_and_si512(qh, bits45));
  u[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql1, 4), low4),
                         _mm512_and_si512(_mm512_srli_epi16(qh, 2), bits45));
}

template <size_t kT>
HWY_NOINLINE void GroupQ6K(const uint8_t* w, size_t blocks, const ActBlockQ8KTiled* const* a,
                           float* y, size_t y_stride) {
  constexpr size_t kGroupBlock = kInterleaveRows * sizeof(BlockQ6_K);
  __m512 acc[kT];
  for (size_t t = 0; t < kT; ++t) acc[t] = _mm512_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlock;
    for (size_t line = 0; line < 288; line += 64) PrefetchAhead(gb + line);  // scales
    const uint8_t* scale_planes = gb + 2 * kInterleaveRows;
    const uint8_t* quants = scale_planes + 16 * kInterleaveRows;
    auto scale = [&](size_t s) {
      return _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(scale_planes + 16 * s)));
    };
    __m512i total[kT];
    for (size_t t = 0; t < kT; ++t) total[t] = _mm512_setzero_si512();
    // Elements 128h + 32q + 16jj ..+15 form sub-block 8h + 2q + jj: four sums per (h, jj).
    for (size_t h = 0; h < 2; ++h) {
      for (size_t jj = 0; jj < 2; ++jj) {
        __m512i isum[4][kT];
        for (size_t q = 0; q < 4; ++q) {
          for (size_t t = 0; t < kT; ++t) isum[q][t] = _mm512_setzero_si512();
        }
        for (size_t j = 4 * jj; j < 4 * jj + 4; ++j) {
          __m512i u[4];
          Q6KQuants16(quants + 192 * (8 * h + j), u);
          for (size_t q = 0; q < 4; ++q) {
            for (size_t t = 0; t < kT; ++t) {
              isum[q][t] = _mm512_dpbusd_epi32(isum[q][t], u[q],
                                               Broadcast4(a[t][b].qs + 128 * h + 32 * q + 4 * j));
            }
          }
        }
        for (size_t q = 0; q < 4; ++q) {
          const __m512i sc = scale(8 * h + 2 * q + jj);
          for (size_t t = 0; t < kT; ++t) {
            total[t] = _mm512_add_epi32(total[t], _mm512_mullo_epi32(isum[q][t], sc));
          }
        }
      }
    }
    // The -32 offset: int16 pairs (-32 scale_2k, -32 scale_2k+1) against (bsum_2k, bsum_2k+1).
    for (size_t k = 0; k < 8; ++k) {
      const __m512i lo =
          _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(scale(2 * k), 5));
      const __m512i hi =
          _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(scale(2 * k + 1), 5));
      const __m512i pair = _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xFFFF)),
                                           _mm512_slli_epi32(hi, 16));
      for (size_t t = 0; t < kT; ++t) {
        int32_t bsum_pair;
        std::memcpy(&bsum_pair, a[t][b].bsums + 2 * k, 4);
        total[t] = _mm512_dpwssd_epi32(total[t], pair, _mm512_set1_epi32(bsum_pair));
      }
    }
    const __m512 d = LoadHalf16(gb);
    for (size_t t = 0; t < kT; ++t) {
      const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(a[t][b].d));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[t]), s, acc[t]);
    }
  }
  StoreRows<kT>(acc, y, y_stride);
}

#pragma GCC pop_options
#endif  // HWY_AVX3_DL

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
