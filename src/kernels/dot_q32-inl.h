// Per-target dot products of the 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) with
// ActBlockQ8 activations, for up to kMaxTileTokens activation rows per weight row.
//
// The integer algorithm (the scalar twin is reference::dot_quantized_ref): per block, the exact
// int32 sum of quant products, with unsigned quants u = q + offset corrected by offset * sum(a);
// then f32 accumulation of d_w * d_a * isum, plus m * d_a * sum(a) for the formats with a min.

#if defined(STRATA_KERNELS_DOT_Q32_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef STRATA_KERNELS_DOT_Q32_INL_H_
#undef STRATA_KERNELS_DOT_Q32_INL_H_
#else
#define STRATA_KERNELS_DOT_Q32_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/dot_common-inl.h"
#include "kernels/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

// What distinguishes the formats: the offset that makes quants unsigned, a min term, a fifth bit
// in qh, or (Q8_0) plain signed bytes.
struct Q4_0Format {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr bool kHasMin = false, kFifthBit = false, kSignedBytes = false;
};
struct Q4_1Format {
  using Block = BlockQ4_1;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true, kFifthBit = false, kSignedBytes = false;
};
struct Q5_0Format {
  using Block = BlockQ5_0;
  static constexpr int kOffset = 16;
  static constexpr bool kHasMin = false, kFifthBit = true, kSignedBytes = false;
};
struct Q5_1Format {
  using Block = BlockQ5_1;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true, kFifthBit = true, kSignedBytes = false;
};
struct Q8_0Format {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = false, kFifthBit = false, kSignedBytes = true;
};

template <class Format>
HWY_INLINE float BlockMin(const typename Format::Block& b) {
  if constexpr (Format::kHasMin) {
    return HalfToFloat(b.m);
  } else {
    return 0.0f;
  }
}

// Portable path: the block's quants as 32 int8 (unsigned values for the nibble formats), then
// DotI8.
template <class Format>
HWY_INLINE const int8_t* UnpackQuants32(const typename Format::Block& b, int8_t* q) {
  if constexpr (Format::kSignedBytes) {
    return b.qs;
  } else {
    uint8_t* u = reinterpret_cast<uint8_t*>(q);
#if HWY_TARGET == HWY_SCALAR
    for (int j = 0; j < 16; ++j) {
      u[j] = b.qs[j] & 0x0F;
      u[j + 16] = b.qs[j] >> 4;
    }
#else
    const hn::FixedTag<uint8_t, 16> d8;
    const auto packed = hn::LoadU(d8, b.qs);
    hn::StoreU(hn::And(packed, hn::Set(d8, 0x0F)), d8, u);
    hn::StoreU(hn::ShiftRight<4>(packed), d8, u + 16);
#endif
    if constexpr (Format::kFifthBit) {
      uint32_t qh;
      __builtin_memcpy(&qh, b.qh, 4);
      for (int j = 0; j < 32; ++j) u[j] |= static_cast<uint8_t>(((qh >> j) & 1) << 4);
    }
    return q;
  }
}

template <class Format, size_t kT>
HWY_INLINE void DotQ32Portable(const typename Format::Block* HWY_RESTRICT w,
                               const ActBlockQ8* const* a, size_t blocks, float* out) {
  float acc[kT] = {}, min_acc[kT] = {};
  HWY_ALIGN int8_t buffer[kQK32];
  for (size_t b = 0; b < blocks; ++b) {
    const int8_t* q = UnpackQuants32<Format>(w[b], buffer);
    const float dw = HalfToFloat(w[b].d);
    for (size_t t = 0; t < kT; ++t) {
      const ActBlockQ8& x = a[t][b];
      const int32_t isum = DotI8(q, x.qs, kQK32) - Format::kOffset * x.sum;
      acc[t] += dw * x.d * static_cast<float>(isum);
      if constexpr (Format::kHasMin) min_acc[t] += BlockMin<Format>(w[b]) * x.d * x.sum;
    }
  }
  for (size_t t = 0; t < kT; ++t) out[t] = acc[t] + min_acc[t];
}

#if STRATA_X86_INT8_DOT

// x86 path: 32 unsigned quant bytes in one register, multiplied with maddubs (for Q8_0, |w| with
// the activation's sign flipped where w < 0); the offset correction -offset * sum(a) is added to
// int32 lane 0, and the lanes are scaled in f32 without a horizontal sum per block. Even and odd
// blocks accumulate separately so that consecutive FMAs do not wait on each other.
template <class Format, size_t kT>
HWY_INLINE void AccumulateQ32BlockX86(const typename Format::Block& blk, const ActBlockQ8* const* a,
                                      size_t b, __m256* acc, float* min_acc) {
  __m256i u;
  if constexpr (Format::kSignedBytes) {
    u = Load256(blk.qs);
  } else if constexpr (Format::kFifthBit) {
    u = _mm256_or_si256(UnpackNibbles32(blk.qs), FifthBits32(blk.qh));
  } else {
    u = UnpackNibbles32(blk.qs);
  }
  const __m256i u_abs = Format::kSignedBytes ? _mm256_sign_epi8(u, u) : u;
  const float dw = HalfToFloat(blk.d);
  for (size_t t = 0; t < kT; ++t) {
    const ActBlockQ8& x = a[t][b];
    __m256i va = Load256(x.qs);
    if constexpr (Format::kSignedBytes) va = _mm256_sign_epi8(va, u);
    __m256i p = DotU8I8(u_abs, va);
    if constexpr (Format::kOffset != 0) {
      p = _mm256_add_epi32(p, _mm256_zextsi128_si256(_mm_cvtsi32_si128(-Format::kOffset * x.sum)));
    }
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x.d), acc[t]);
    if constexpr (Format::kHasMin) min_acc[t] += BlockMin<Format>(blk) * x.d * x.sum;
  }
}

template <class Format, size_t kT>
HWY_INLINE void DotQ32X86(const typename Format::Block* HWY_RESTRICT w, const ActBlockQ8* const* a,
                          size_t blocks, float* out) {
  __m256 acc_even[kT], acc_odd[kT];
  float min_even[kT] = {}, min_odd[kT] = {};
  for (size_t t = 0; t < kT; ++t) acc_even[t] = acc_odd[t] = _mm256_setzero_ps();
  size_t b = 0;
  for (; b + 1 < blocks; b += 2) {
    AccumulateQ32BlockX86<Format, kT>(w[b], a, b, acc_even, min_even);
    AccumulateQ32BlockX86<Format, kT>(w[b + 1], a, b + 1, acc_odd, min_odd);
  }
  if (b < blocks) AccumulateQ32BlockX86<Format, kT>(w[b], a, b, acc_even, min_even);
  for (size_t t = 0; t < kT; ++t) {
    out[t] = HorizontalSum(_mm256_add_ps(acc_even[t], acc_odd[t])) + (min_even[t] + min_odd[t]);
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// AVX-512 path: two blocks per 512-bit register. The offset formats (Q4_0, Q5_0) are made signed
// (u - offset) and, like Q8_0, multiplied as |w| times a with a's sign flipped where w < 0, so no
// per-token correction is needed; the f32 scale is d_w (shared by the tile) times d_a.
// AVX3_DL adds VNNI's vpdpbusd (one instruction for maddubs + madd). Its 256-bit form would be
// emitted VEX-encoded (AVX-VNNI, which Highway does not check for), so only the 512-bit form is
// used, in a function compiled with avx512vnni and called (not inlined) from the dispatch code.
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni")
#endif

HWY_INLINE __m512i DotU8I8x64(__m512i u, __m512i a) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, a);
#else
  return _mm512_madd_epi16(_mm512_maddubs_epi16(u, a), _mm512_set1_epi16(1));
#endif
}

HWY_INLINE __m512i Join256(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

HWY_INLINE __m512 JoinBroadcast(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

template <class Format>
HWY_INLINE __m256i SignedOrUnsignedQuants(const typename Format::Block& blk) {
  __m256i u;
  if constexpr (Format::kSignedBytes) {
    return Load256(blk.qs);
  } else if constexpr (Format::kFifthBit) {
    u = _mm256_or_si256(UnpackNibbles32(blk.qs), FifthBits32(blk.qh));
  } else {
    u = UnpackNibbles32(blk.qs);
  }
  if constexpr (Format::kOffset != 0) {
    u = _mm256_sub_epi8(u, _mm256_set1_epi8(static_cast<char>(Format::kOffset)));
  }
  return u;
}

template <class Format, size_t kT>
HWY_NOINLINE void DotQ32X512(const typename Format::Block* HWY_RESTRICT w,
                             const ActBlockQ8* const* a, size_t blocks, float* out) {
  // Formats whose quants carry a sign after the offset use the |w| / sign-flip product.
  constexpr bool kSigned = Format::kSignedBytes || Format::kOffset != 0;
  __m512 acc[kT];
  __m256 tail[kT];
  float min_acc[kT] = {};
  for (size_t t = 0; t < kT; ++t) {
    acc[t] = _mm512_setzero_ps();
    tail[t] = _mm256_setzero_ps();
  }
  size_t b = 0;
  for (; b + 1 < blocks; b += 2) {
    const __m512i q =
        Join256(SignedOrUnsignedQuants<Format>(w[b]), SignedOrUnsignedQuants<Format>(w[b + 1]));
    const __m512i q_abs = kSigned ? _mm512_abs_epi8(q) : q;
    const __mmask64 negative = kSigned ? _mm512_movepi8_mask(q) : 0;
    const __m512 dw = JoinBroadcast(HalfToFloat(w[b].d), HalfToFloat(w[b + 1].d));
    for (size_t t = 0; t < kT; ++t) {
      const ActBlockQ8& x0 = a[t][b];
      const ActBlockQ8& x1 = a[t][b + 1];
      __m512i va = Join256(Load256(x0.qs), Load256(x1.qs));
      if constexpr (kSigned) va = _mm512_mask_sub_epi8(va, negative, _mm512_setzero_si512(), va);
      const __m512 p = _mm512_cvtepi32_ps(DotU8I8x64(q_abs, va));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(p, JoinBroadcast(x0.d, x1.d)), dw, acc[t]);
      if constexpr (Format::kHasMin) {
        min_acc[t] += BlockMin<Format>(w[b]) * x0.d * x0.sum;
        min_acc[t] += BlockMin<Format>(w[b + 1]) * x1.d * x1.sum;
      }
    }
  }
  if (b < blocks) AccumulateQ32BlockX86<Format, kT>(w[b], a, b, tail, min_acc);
  for (size_t t = 0; t < kT; ++t) {
    out[t] = _mm512_reduce_add_ps(acc[t]) + HorizontalSum(tail[t]) + min_acc[t];
  }
}

#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC pop_options
#endif
#endif  // HWY_AVX3 || HWY_AVX3_DL

#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni")
// Register-tiled matmul for the formats with signed quants (Q4_0, Q5_0, Q8_0): kR weight rows
// times kT tokens per pass over the blocks, so each unpacked weight block serves kT tokens and
// each activation load serves kR rows. vpdpbusd multiplies unsigned by signed bytes, so the
// activations are stored as a + 128 (ActPairQ8) and the weights stay signed; the extra
// 128 * sum(w) per lane starts the accumulator negated (`bias`). The int32 lanes are then exactly
// those of DotQ32X512, and the f32 steps are the same, so both give the same bits.

// Two consecutive activation blocks of one token, as vpdpbusd and the f32 scaling read them.
struct ActPairQ8 {
  uint8_t qs[2 * kQK32];  // a + 128 of both blocks
  float d[16];            // lanes 0-7 the first block's scale, 8-15 the second's
};

// Packs the n_blocks (even) ActBlockQ8 of one token into n_blocks / 2 ActPairQ8.
HWY_NOINLINE void PackActPairs(const ActBlockQ8* x, size_t n_blocks, ActPairQ8* dst) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (size_t p = 0; p < n_blocks / 2; ++p) {
    const ActBlockQ8& x0 = x[2 * p];
    const ActBlockQ8& x1 = x[2 * p + 1];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[p].qs),
                        _mm256_xor_si256(Load256(x0.qs), flip));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[p].qs + 32),
                        _mm256_xor_si256(Load256(x1.qs), flip));
    _mm512_storeu_ps(dst[p].d, JoinBroadcast(x0.d, x1.d));
  }
}

template <class Format, size_t kR, size_t kT>
HWY_NOINLINE void TileQ32Vnni(const uint8_t* w, size_t w_stride, const ActPairQ8* const* a,
                              size_t pairs, float* out) {
  using Block = typename Format::Block;
  __m512 acc[kR][kT];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const __m512i c128 = _mm512_set1_epi8(static_cast<char>(0x80));
  for (size_t p = 0; p < pairs; ++p) {
    __m512i q[kR], bias[kR];
    __m512 dw[kR];
    for (size_t r = 0; r < kR; ++r) {
      const Block* blk = reinterpret_cast<const Block*>(w + r * w_stride) + 2 * p;
      q[r] =
          Join256(SignedOrUnsignedQuants<Format>(blk[0]), SignedOrUnsignedQuants<Format>(blk[1]));
      bias[r] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                 _mm512_dpbusd_epi32(_mm512_setzero_si512(), c128, q[r]));
      dw[r] = JoinBroadcast(HalfToFloat(blk[0].d), HalfToFloat(blk[1].d));
    }
    for (size_t t = 0; t < kT; ++t) {
      const __m512i va = _mm512_loadu_si512(a[t][p].qs);
      const __m512 da = _mm512_loadu_ps(a[t][p].d);
      for (size_t r = 0; r < kR; ++r) {
        const __m512 prod = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(bias[r], va, q[r]));
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(prod, da), dw[r], acc[r][t]);
      }
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    for (size_t t = 0; t < kT; ++t) out[r * kT + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

#pragma GCC pop_options
#endif  // HWY_AVX3_DL

#endif  // STRATA_X86_INT8_DOT

template <class Format, size_t kT>
HWY_INLINE void DotQ32(const void* row, const ActBlockQ8* const* a, size_t blocks, float* out) {
  const auto* w = static_cast<const typename Format::Block*>(row);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  DotQ32X512<Format, kT>(w, a, blocks, out);
#elif STRATA_X86_INT8_DOT
  DotQ32X86<Format, kT>(w, a, blocks, out);
#else
  DotQ32Portable<Format, kT>(w, a, blocks, out);
#endif
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
