// The interleaved-layout kernels without VNNI (AVX2, and AVX-512 without VNNI): the VNNI kernels
// of tile_interleaved-inl.h (whose helpers these use; include it first) on 256-bit halves of
// each group register. Integer sums and f32 steps are the VNNI kernels', so every x86 target
// gives the same bits (tested).

#if defined(STRATA_KERNELS_TILE_INTERLEAVED_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_TILE_INTERLEAVED_AVX2_INL_H_
#undef STRATA_KERNELS_TILE_INTERLEAVED_AVX2_INL_H_
#else
#define STRATA_KERNELS_TILE_INTERLEAVED_AVX2_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "hwy/highway.h"
#include "kernels/interleave.h"
#include "kernels/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
// Without VNNI, groups in 256-bit halves (rows 0-7 and 8-15 of each 64-byte register):
// vpmaddubsw multiplies unsigned quant bytes by signed activation bytes and adds neighbours in
// int16, vpmaddwd adds those pairs into one int32 per row (times 1, or times the sub-block scale
// of the K types), as vpdpbusd would. The int16 sums cannot saturate: Q4_0's and Q4_K's are at
// most 2 * 15 * 127, Q6_K's 2 * 63 * 127; Q8_0's quants are made signed again and multiplied as
// |q| times a with a's sign flipped where q < 0, at most 2 * 128 * 127. Integer sums and f32
// steps are those of the VNNI kernels, so all x86 targets give the same bits (tested). On Zen 4
// these 256-bit kernels run as fast as the VNNI ones (llama-1b Q4_K_M pp512 310 vs 311 t/s).
// Tokens per pass of the 16 registers: Q5_0's fifth-bit constants leave room for 2 tokens;
// Q4_0 (two int16 sums per token) and Q8_0 (two int32 sums) take 4, measured faster than 2.
template <DType kType>
inline constexpr size_t kMaxGroupTokens = kType == DType::kQ5_0 ? 2 : 4;
// The K kernels take one half of the rows at a time (one int32 total and, for Q4_K, two int16
// sums per token); a block's quants (2 KB) are still in L1 when the second half reads them.
inline constexpr size_t kMaxGroupTokensK = 4;

// y[t * y_stride + r] for the group's 16 rows r (rows 0-7 in acc[t][0], 8-15 in acc[t][1]).
template <size_t kT>
HWY_INLINE void StoreRowHalves(const __m256 (*acc)[2], float* y, size_t y_stride) {
  for (size_t t = 0; t < kT; ++t) {
    _mm256_storeu_ps(y + t * y_stride, acc[t][0]);
    _mm256_storeu_ps(y + t * y_stride + 8, acc[t][1]);
  }
}

HWY_INLINE __m256i Broadcast4x8(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// An empty asm that takes v in a register and gives it back: the sums before it must be done
// there. GCC otherwise reassociates a chain of integer adds into a tree over all the loop's
// products (legal for integers), which keeps 32 products live at once and spills them.
HWY_INLINE void PinRegister(__m256i& v) { asm("" : "+x"(v)); }

// 8 f16 (rows 8r ..+7 of a group's 16 per-row halves at p) as f32.
HWY_INLINE __m256 LoadHalf8(const uint8_t* p, size_t r) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * r)));
}

// A Q4_K/Q5_K group block's 6-bit scales and mins, decoded once for its 16 rows (128-bit planes)
// and kept by sub-block and row, so that neither row half nor the min term decodes them again.
struct ScaleMinTable {
  alignas(16) uint8_t scale[8][kInterleaveRows];
  alignas(16) uint8_t min[8][kInterleaveRows];

  explicit ScaleMinTable(const uint8_t* planes) {
    auto plane = [&](int p) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + 16 * p));
    };
    for (int s = 0; s < 8; ++s) {
      const ScaleMinBytes bytes = Q4KScaleMinBytes(plane, s);
      _mm_store_si128(reinterpret_cast<__m128i*>(scale[s]), bytes.scale);
      _mm_store_si128(reinterpret_cast<__m128i*>(min[s]), bytes.min);
    }
  }
  // Sub-block s's scales of rows 8r ..+7 as the int16 pairs (scale, scale) by which vpmaddwd
  // multiplies each row's pair of int16 sums.
  __m256i ScalePairs(int s, size_t r) const {
    const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(scale[s]));
    return _mm256_cvtepu8_epi16(r == 0 ? _mm_unpacklo_epi8(x, x) : _mm_unpackhi_epi8(x, x));
  }
  // Sub-block s's mins of rows 8r ..+7 as f32.
  __m256 Mins(int s, size_t r) const {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(min[s] + 8 * r))));
  }
};

// Q5_K's fifth bits of sub-block s: bit s of each qh byte moved to bit 4, as 16 to OR into the
// nibble (a 16-bit shift: what crosses into the other byte lands below bit 4 or above it and is
// masked off).
HWY_INLINE __m256i FifthBits(__m256i qh, int s) {
  const __m256i moved = s <= 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - s))
                               : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(s - 4));
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

// The quants of chunk i in 32 bytes of a Q4_K/Q5_K group block (8 rows): sub-block 2i from the
// low nibbles, 2i + 1 from the high ones; Q5_K's with their fifth bits from the same 32 bytes of
// the qh plane.
struct QuantPair {
  __m256i lo, hi;
};
template <bool kQ5>
HWY_INLINE QuantPair Q45KQuants(const uint8_t* quants, const uint8_t* qh, int i) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(quants));
  QuantPair u{_mm256_and_si256(packed, low4), _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4)};
  if constexpr (kQ5) {
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
    u.lo = _mm256_or_si256(u.lo, FifthBits(high, 2 * i));
    u.hi = _mm256_or_si256(u.hi, FifthBits(high, 2 * i + 1));
  }
  return u;
}

// A Q4_K/Q5_K block's f32 step for rows 8r ..+7 of kT tokens, as the VNNI kernel takes it:
// acc += total * d * d_a, then acc -= dmin * min_s * sub_sum_s sub-block by sub-block.
template <size_t kT>
HWY_INLINE void AddQ4KBlock(const uint8_t* gb, const ScaleMinTable& scale_min, size_t r,
                            const __m256i* total, const ActBlockQ8KTiled* const* a, size_t b,
                            __m256 (*acc)[2]) {
  const __m256 d = LoadHalf8(gb, r), dmin = LoadHalf8(gb + 2 * kInterleaveRows, r);
  for (size_t t = 0; t < kT; ++t) {
    const __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(a[t][b].d));
    acc[t][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[t]), scale, acc[t][r]);
  }
  for (int s = 0; s < 8; ++s) {
    const __m256 min = _mm256_mul_ps(dmin, scale_min.Mins(s, r));
    for (size_t t = 0; t < kT; ++t) {
      acc[t][r] = _mm256_fnmadd_ps(min, _mm256_set1_ps(a[t][b].sub_sums[s]), acc[t][r]);
    }
  }
}

// GroupQ4K for one token (decode; GroupQ4K<1> calls it), with the same integer sums and f32 steps.
// Decode streams the weights once, and with 256-bit registers GroupQ4K<1> computed barely faster
// than two cores read (MatvecHot q4_K 24 GB/s on one Zen 4 core with --simd AVX2, against 14 GB/s
// per core that decode must stream), so the work per byte decides how much of the read bandwidth
// decode reaches. Here each 64-byte line is read for both row halves in one pass, so its two
// activation broadcasts serve 16 rows, and the int16 sums stay in registers: 33 GB/s.
template <bool kQ5 = false>
HWY_NOINLINE void GroupQ4KOneToken(const uint8_t* w, size_t blocks, const ActBlockQ8KTiled* act,
                                   float* y) {
  constexpr size_t kGroupBlock = kInterleaveRows * (kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
  constexpr size_t kRegistersPerSum16 = kQ5 ? 4 : 8;
  __m256 acc[1][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()}};
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlock;
    const ActBlockQ8KTiled& a = act[b];
    const uint8_t* planes = gb + 4 * kInterleaveRows;
    const uint8_t* qh = planes + 12 * kInterleaveRows;  // Q5_K only
    const uint8_t* qs = qh + (kQ5 ? 32 * kInterleaveRows : 0);
    for (const uint8_t* line = gb; line < qs; line += 64) PrefetchAhead(line);  // scales, qh
    const ScaleMinTable scale_min(planes);
    __m256i total[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    // Chunk i holds sub-blocks 2i (low nibbles) and 2i + 1 (high nibbles).
    for (int i = 0; i < 4; ++i) {
      for (size_t j0 = 0; j0 < 8; j0 += kRegistersPerSum16) {
        __m256i lo[2], hi[2];
        lo[0] = lo[1] = hi[0] = hi[1] = _mm256_setzero_si256();
        for (size_t j = j0; j < j0 + kRegistersPerSum16; ++j) {
          const uint8_t* line = qs + 512 * i + 64 * j;
          PrefetchAhead(line);
          const __m256i act_lo = Broadcast4x8(a.qs + 64 * i + 4 * j);
          const __m256i act_hi = Broadcast4x8(a.qs + 64 * i + 4 * j + 32);
          for (size_t r = 0; r < 2; ++r) {
            const QuantPair u = Q45KQuants<kQ5>(line + 32 * r, qh + 64 * j + 32 * r, i);
            lo[r] = _mm256_add_epi16(lo[r], _mm256_maddubs_epi16(u.lo, act_lo));
            hi[r] = _mm256_add_epi16(hi[r], _mm256_maddubs_epi16(u.hi, act_hi));
            PinRegister(lo[r]);
            PinRegister(hi[r]);
          }
        }
        for (size_t r = 0; r < 2; ++r) {
          total[r] =
              _mm256_add_epi32(total[r], _mm256_madd_epi16(lo[r], scale_min.ScalePairs(2 * i, r)));
          total[r] = _mm256_add_epi32(total[r],
                                      _mm256_madd_epi16(hi[r], scale_min.ScalePairs(2 * i + 1, r)));
        }
      }
    }
    for (size_t r = 0; r < 2; ++r) AddQ4KBlock<1>(gb, scale_min, r, &total[r], &act, b, acc);
  }
  StoreRowHalves<1>(acc, y, 0);
}

// The VNNI GroupQ4K's integer sums and f32 steps, rows 0-7 then 8-15 of each block. A nibble's
// product pairs (at most 2 * 15 * 127 = 3810) are added in int16 over the 8 registers of a
// sub-block (at most 30480 < 2^15), and only that sum is multiplied by the sub-block scale in
// vpmaddwd: one vpaddw per register and token instead of vpmaddwd + vpaddd.
//
// kQ5 reads Q5_K's group blocks (interleave.h) with the same steps: each quant gains its fifth
// bit (bit s of the row's qh byte for sub-block s) as 16, and with 5-bit quants a pair reaches
// 2 * 31 * 127 = 7874, so the int16 sums are widened every 4 registers (at most 31496).
template <size_t kT, bool kQ5 = false>
HWY_NOINLINE void GroupQ4K(const uint8_t* w, size_t blocks, const ActBlockQ8KTiled* const* a,
                           float* y, size_t y_stride) {
  if constexpr (kT == 1) return GroupQ4KOneToken<kQ5>(w, blocks, a[0], y);
  constexpr size_t kGroupBlock = kInterleaveRows * (kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
  constexpr size_t kRegistersPerSum16 = kQ5 ? 4 : 8;
  __m256 acc[kT][2];
  for (size_t t = 0; t < kT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlock;
    const uint8_t* planes = gb + 4 * kInterleaveRows;
    const uint8_t* qh = planes + 12 * kInterleaveRows;  // Q5_K only
    const uint8_t* qs = qh + (kQ5 ? 32 * kInterleaveRows : 0);
    for (const uint8_t* line = gb; line < qs; line += 64) PrefetchAhead(line);  // scales, qh
    const ScaleMinTable scale_min(planes);
    for (size_t r = 0; r < 2; ++r) {
      __m256i total[kT];
      for (size_t t = 0; t < kT; ++t) total[t] = _mm256_setzero_si256();
      // Chunk i holds sub-blocks 2i (low nibbles) and 2i + 1 (high nibbles).
      for (int i = 0; i < 4; ++i) {
        for (size_t j0 = 0; j0 < 8; j0 += kRegistersPerSum16) {
          __m256i lo[kT], hi[kT];
          for (size_t t = 0; t < kT; ++t) lo[t] = hi[t] = _mm256_setzero_si256();
          for (size_t j = j0; j < j0 + kRegistersPerSum16; ++j) {
            const uint8_t* line = qs + 512 * i + 64 * j;
            if (r == 0) PrefetchAhead(line);
            const QuantPair u = Q45KQuants<kQ5>(line + 32 * r, qh + 64 * j + 32 * r, i);
            for (size_t t = 0; t < kT; ++t) {
              const int8_t* act = a[t][b].qs + 64 * i + 4 * j;
              lo[t] = _mm256_add_epi16(lo[t], _mm256_maddubs_epi16(u.lo, Broadcast4x8(act)));
              hi[t] = _mm256_add_epi16(hi[t], _mm256_maddubs_epi16(u.hi, Broadcast4x8(act + 32)));
            }
          }
          const __m256i scale_lo = scale_min.ScalePairs(2 * i, r);
          const __m256i scale_hi = scale_min.ScalePairs(2 * i + 1, r);
          for (size_t t = 0; t < kT; ++t) {
            total[t] = _mm256_add_epi32(total[t], _mm256_madd_epi16(lo[t], scale_lo));
            total[t] = _mm256_add_epi32(total[t], _mm256_madd_epi16(hi[t], scale_hi));
          }
        }
      }
      AddQ4KBlock<kT>(gb, scale_min, r, total, a, b, acc);
    }
  }
  StoreRowHalves<kT>(acc, y, y_stride);
}

// The VNNI GroupQ6K's sums, rows 0-7 then 8-15: 6-bit quants' product pairs (at most
// 2 * 63 * 127) times the signed sub-block scale in vpmaddwd, and the -32 offset taken off once
// per half block as 32 * sum_s scale_s * bsum_s, two sub-blocks per vpmaddwd (the same integer
// total as the VNNI kernel's, and MatvecHot q6_K 10% faster than the offset per pair).
template <size_t kT>
HWY_NOINLINE void GroupQ6K(const uint8_t* w, size_t blocks, const ActBlockQ8KTiled* const* a,
                           float* y, size_t y_stride) {
  constexpr size_t kGroupBlock = kInterleaveRows * sizeof(BlockQ6_K);
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  __m256 acc[kT][2];
  for (size_t t = 0; t < kT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlock;
    for (size_t line = 0; line < 288; line += 64) PrefetchAhead(gb + line);  // scales
    const uint8_t* scale_planes = gb + 2 * kInterleaveRows;
    const uint8_t* quants = scale_planes + 16 * kInterleaveRows;
    for (size_t r = 0; r < 2; ++r) {
      // Rows 8r ..+7 of the signed scales of sub-blocks s0 and s1 as int16 pairs (s0, s1).
      auto scale_pairs = [&](size_t s0, size_t s1) {
        auto plane = [&](size_t s) {
          return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scale_planes + 16 * s + 8 * r));
        };
        return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(plane(s0), plane(s1)));
      };
      __m256i total[kT];
      for (size_t t = 0; t < kT; ++t) total[t] = _mm256_setzero_si256();
      // Elements 128h + 32q + 16jj ..+15 form sub-block 8h + 2q + jj.
      for (size_t h = 0; h < 2; ++h) {
        for (size_t jj = 0; jj < 2; ++jj) {
          __m256i sc[4];
          for (size_t q = 0; q < 4; ++q) {
            const size_t sub = 8 * h + 2 * q + jj;
            sc[q] = scale_pairs(sub, sub);
          }
          for (size_t j = 4 * jj; j < 4 * jj + 4; ++j) {
            // The three registers of (h, j): ql low, ql high, qh (Q6KQuants16's layout).
            const uint8_t* regs = quants + 192 * (8 * h + j);
            if (r == 0) {
              for (size_t k = 0; k < 3; ++k) PrefetchAhead(regs + 64 * k);
            }
            auto load = [&](size_t k) {
              return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(regs + 64 * k + 32 * r));
            };
            const __m256i ql0 = load(0), ql1 = load(1), qh = load(2);
            const __m256i u[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, low4),
                                _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
                _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                _mm256_and_si256(qh, bits45)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45))};
            for (size_t q = 0; q < 4; ++q) {
              for (size_t t = 0; t < kT; ++t) {
                const __m256i pairs =
                    _mm256_maddubs_epi16(u[q], Broadcast4x8(a[t][b].qs + 128 * h + 32 * q + 4 * j));
                total[t] = _mm256_add_epi32(total[t], _mm256_madd_epi16(pairs, sc[q]));
              }
            }
          }
        }
      }
      // The -32 offset: total -= 32 * sum_s scale_s * bsum_s, sub-blocks in pairs.
      __m256i offset[kT];
      for (size_t t = 0; t < kT; ++t) offset[t] = _mm256_setzero_si256();
      for (size_t k = 0; k < 8; ++k) {
        const __m256i scale_pair = scale_pairs(2 * k, 2 * k + 1);
        for (size_t t = 0; t < kT; ++t) {
          int32_t bsum_pair;
          std::memcpy(&bsum_pair, a[t][b].bsums + 2 * k, 4);
          offset[t] = _mm256_add_epi32(offset[t],
                                       _mm256_madd_epi16(scale_pair, _mm256_set1_epi32(bsum_pair)));
        }
      }
      for (size_t t = 0; t < kT; ++t) {
        total[t] = _mm256_sub_epi32(total[t], _mm256_slli_epi32(offset[t], 5));
      }
      const __m256 d = LoadHalf8(gb, r);
      for (size_t t = 0; t < kT; ++t) {
        const __m256 sd = _mm256_mul_ps(d, _mm256_set1_ps(a[t][b].d));
        acc[t][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[t]), sd, acc[t][r]);
      }
    }
  }
  StoreRowHalves<kT>(acc, y, y_stride);
}

// Q4_0's and Q5_0's product pairs are added in int16 over kPairsPerSum16 registers before
// vpmaddwd widens them: at most 8 * 2 * 15 * 127 = 30480 and 4 * 2 * 31 * 127 = 31496 < 2^15.
// Q8_0's pairs (up to 2 * 128 * 127) are widened one register at a time.
template <size_t kT, DType kType>
HWY_NOINLINE void GroupQ32(const uint8_t* w, size_t blocks, const ActBlockQ8* const* a, float* y,
                           size_t y_stride) {
  constexpr bool kQ8 = kType == DType::kQ8_0, kQ5 = kType == DType::kQ5_0;
  constexpr size_t kPairsPerSum16 = kQ5 ? 4 : 8;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i sign_bit = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  // Q5_0's fifth bits, as the AVX-512 kernel finds them (8 rows per half).
  const __m256i byte0 = _mm256_set_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0x00000000, 0x0C0C0C0C,
                                         0x08080808, 0x04040404, 0x00000000);
  const __m256i bit_k = _mm256_set1_epi32(0x08040201);
  const __m256i sixteen = _mm256_set1_epi8(16);
  __m256 acc[kT][2];
  for (size_t t = 0; t < kT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* gb = w + b * kGroupBlockBytes<kType>;
    PrefetchAhead(gb);
    const uint8_t* qh = gb + 2 * kInterleaveRows;
    const uint8_t* qs = qh + (kQ5 ? 4 * kInterleaveRows : 0);
    // Q4_0's and Q5_0's int32 sums start at their first widening (Q4_0's only one), so that
    // they take no registers while the int16 sums fill.
    __m256i isum[kT][2], sum16[kT][2];
    for (size_t t = 0; t < kT; ++t) {
      isum[t][0] = isum[t][1] = _mm256_setzero_si256();
      sum16[t][0] = sum16[t][1] = _mm256_setzero_si256();
    }
    // Register e of the block (quants 4e ..+3 of every row); e is a constant in Q4_0's and
    // Q5_0's unrolled loop, which then has no branches (Q8_0 measured slower unrolled).
    auto step = [&](auto e_constant) {
      const size_t e = e_constant;
      __m256i act[kT];
      for (size_t t = 0; t < kT; ++t) act[t] = Broadcast4x8(a[t][b].qs + 4 * e);
      for (size_t h = 0; h < 2; ++h) {
        __m256i u, q = _mm256_setzero_si256();
        if constexpr (kQ8) {
          const uint8_t* line = qs + 64 * e + 32 * h;
          PrefetchAhead(line);
          q = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(line)),
                               sign_bit);
          u = _mm256_abs_epi8(q);
        } else {
          const uint8_t* line = qs + 64 * (e % 4) + 32 * h;
          if (e < 4) PrefetchAhead(line);
          const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line));
          u = _mm256_and_si256(e < 4 ? packed : _mm256_srli_epi16(packed, 4), low4);
        }
        if constexpr (kQ5) {
          const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * h));
          const __m256i bits = _mm256_and_si256(
              _mm256_shuffle_epi8(
                  _mm256_srl_epi32(high, _mm_cvtsi32_si128(static_cast<int>(4 * e))), byte0),
              bit_k);
          u = _mm256_or_si256(u, _mm256_and_si256(_mm256_cmpeq_epi8(bits, bit_k), sixteen));
        }
        for (size_t t = 0; t < kT; ++t) {
          __m256i at = act[t];
          if constexpr (kQ8) at = _mm256_sign_epi8(at, q);
          const __m256i pairs = _mm256_maddubs_epi16(u, at);
          if constexpr (kQ8) {
            isum[t][h] = _mm256_add_epi32(isum[t][h], _mm256_madd_epi16(pairs, ones));
          } else {
            sum16[t][h] = _mm256_add_epi16(sum16[t][h], pairs);
          }
        }
      }
      if constexpr (!kQ8) {
        if ((e + 1) % kPairsPerSum16 != 0) return;
        for (size_t t = 0; t < kT; ++t) {
          const __m256i offset = _mm256_set1_epi32(-kQuantOffset<kType> * a[t][b].sum);
          for (size_t h = 0; h < 2; ++h) {
            const __m256i wide = _mm256_madd_epi16(sum16[t][h], ones);
            isum[t][h] = _mm256_add_epi32(e + 1 == kPairsPerSum16 ? offset : isum[t][h], wide);
            sum16[t][h] = _mm256_setzero_si256();
          }
        }
      }
    };
    if constexpr (kQ8) {
      for (size_t e = 0; e < 8; ++e) step(e);
    } else {
      [&]<size_t... kE>(std::index_sequence<kE...>) {
        (step(std::integral_constant<size_t, kE>()), ...);
      }
      (std::make_index_sequence<8>());
    }
    for (size_t h = 0; h < 2; ++h) {
      const __m256 dw = LoadHalf8(gb, h);
      for (size_t t = 0; t < kT; ++t) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(a[t][b].d));
        acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t][h]), scale, acc[t][h]);
      }
    }
  }
  StoreRowHalves<kT>(acc, y, y_stride);
}
#endif  // HWY_AVX3 || HWY_AVX2

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
