// kernels/attention_block.h with Highway runtime dispatch. The format and the number of heads
// are template arguments below the entry point, so no inner loop switches on either. Every
// format decodes 16 f32 lanes at a time where the head is a multiple of 16 (8 where it is not:
// 8 is the multiple every block format's head has); the exp runs on the full width.

#include "kernels/attention_block.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/fp16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "kernels/exp_poly-inl.h"

// Shared by every target's pass over this file (foreach_target.h includes it once per target).
#ifndef STRATA_KERNELS_ATTENTION_BLOCK_SHARED_
#define STRATA_KERNELS_ATTENTION_BLOCK_SHARED_
namespace strata::kernels {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The scratch layout: per-head scores (rows padded to 16 with -inf), the queries with a rotated
// key block's steps folded in, and the value rows' scales (0 past the block's positions).
struct BlockScratch {
  float* scores;     // [group][rows_padded]
  float* qk;         // [group][head_dim]
  float* row_scale;  // [rows_padded]
  float* bias;       // [group]: a rotated key block's sum_c q_c m_c
  float* alpha;      // [group]: the block's rescale of each head's accumulator
  size_t rows_padded;
};

BlockScratch carve(float* scratch, size_t group, size_t rows, size_t head_dim) {
  const size_t padded = round_up(rows, 16);
  float* qk = scratch + group * padded;
  float* row_scale = qk + group * head_dim;
  float* bias = row_scale + padded;
  return {scratch, qk, row_scale, bias, bias + group, padded};
}

}  // namespace
}  // namespace strata::kernels
#endif  // STRATA_KERNELS_ATTENTION_BLOCK_SHARED_

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
// Lanes of the decoders: 16 (a q4_0 block's low or high nibbles, half an r4 run of 32 codes),
// or 8 where a head is not a multiple of 16.
using DR = hn::CappedTag<float, 16>;
using DC = hn::CappedTag<float, 8>;

template <class D>
HWY_INLINE hn::Vec<hn::Rebind<int32_t, D>> Bytes(D, const uint8_t* p) {
  const hn::Rebind<uint8_t, D> d8;
  const hn::Rebind<int32_t, D> di;
  return hn::PromoteTo(di, hn::LoadU(d8, p));
}

// Codes [i, i + lanes) of a run of n rotated codes (kv_format.h's layouts; n a multiple of 32,
// i a multiple of the lanes, which are at most 16).
template <KvFormat F, class D>
HWY_INLINE hn::Vec<hn::Rebind<int32_t, D>> Codes(D d, const uint8_t* codes, size_t n, size_t i) {
  static_assert(F == KvFormat::kR4 || F == KvFormat::kR3);
  const hn::Rebind<int32_t, D> di;
  if constexpr (F == KvFormat::kR4) {
    const size_t half = n / 2;
    const auto bytes = Bytes(d, codes + i % half);
    return i < half ? hn::And(bytes, hn::Set(di, 15)) : hn::ShiftRight<4>(bytes);
  } else {
    const size_t quarter = n / 4;
    const auto shift = hn::Set(di, static_cast<int32_t>(2 * (i / quarter)));
    hn::Vec<hn::Rebind<int32_t, D>> fields;
    if (quarter >= hn::Lanes(d)) {
      fields = hn::Shr(Bytes(d, codes + i % quarter), shift);
    } else {  // a quarter is half a register (8 of 16 lanes): both halves read its bytes, the
              // upper half at the next quarter's shift
#if HWY_TARGET != HWY_SCALAR  // one lane never spans two quarters
      const auto bytes = Bytes(hn::Half<D>(), codes + i % quarter);
      const auto lower = hn::Lt(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(quarter)));
      fields = hn::Shr(hn::Combine(di, bytes, bytes),
                       hn::IfThenElse(lower, shift, hn::Add(shift, hn::Set(di, 2))));
#endif
    }
    const auto low = hn::And(fields, hn::Set(di, 3));
    uint32_t word;  // the high bits of codes [i - i % 32, + 32)
    std::memcpy(&word, codes + quarter + i / 32 * 4, 4);
    const auto bit = hn::Add(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(i % 32)));
    // The And keeps bit 0 of each lane's bit (arithmetic on int32 lanes, which changes no low
    // bit).
    const auto high =
        hn::And(hn::Shr(hn::Set(di, static_cast<int32_t>(word)), bit), hn::Set(di, 1));
    return hn::Or(low, hn::ShiftLeft<2>(high));
  }
}

// A GGML block's f16 scale d (its first two bytes) in every lane, converted in a vector register
// (F16C's vcvtph2ps where the target has it; exact either way, so the scalar fp16_to_fp32's
// bits). A chunk of a q8_0 or q4_0 row reads it once per chunk; the scalar conversion's dozen
// integer steps there cost more than the chunk's own decode.
template <class D>
HWY_INLINE hn::Vec<D> BlockScale(D d, const uint8_t* block) {
  const hn::Rebind<uint16_t, D> du16;
  const hn::Rebind<hwy::float16_t, D> dh;
  uint16_t bits;
  std::memcpy(&bits, block, 2);
  return hn::PromoteTo(d, hn::BitCast(dh, hn::Set(du16, bits)));
}

// Elements [i, i + lanes) of a row of a row-writable format as f32 (i a multiple of the lanes).
// Rotated values: their codes (the caller applies the center and the row's scale).
template <KvFormat F, class D>
HWY_INLINE hn::Vec<D> RowChunk(D d, const uint8_t* row, size_t head_dim, size_t i) {
  const hn::Rebind<int32_t, D> di;
  if constexpr (F == KvFormat::kF32) {
    return hn::LoadU(d, reinterpret_cast<const float*>(row) + i);
  } else if constexpr (F == KvFormat::kF16) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + i));
  } else if constexpr (F == KvFormat::kBF16) {
    const hn::Rebind<uint16_t, D> d16;
    const hn::Rebind<uint32_t, D> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(
                              du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(row) + i))));
  } else if constexpr (F == KvFormat::kQ8_0 || F == KvFormat::kR8) {
    const uint8_t* block = row + i / 32 * 34;
    const hn::Rebind<int8_t, D> d8;
    const auto q =
        hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(block + 2 + i % 32)));
    return hn::Mul(hn::ConvertTo(d, q), BlockScale(d, block));
  } else if constexpr (F == KvFormat::kQ4_0) {
    const uint8_t* block = row + i / 32 * 18;
    const size_t j = i % 32;
    const auto bytes = Bytes(d, block + 2 + j % 16);
    const auto q = j < 16 ? hn::And(bytes, hn::Set(di, 15)) : hn::ShiftRight<4>(bytes);
    return hn::Mul(hn::ConvertTo(d, hn::Sub(q, hn::Set(di, 8))), BlockScale(d, block));
  } else {
    return hn::ConvertTo(d, Codes<F>(d, row + 2, head_dim, i));
  }
}

// Lane i of the result is the sum of v[i]'s lanes (v holds as many vectors as a vector has
// lanes): neighbouring lanes added pairwise log2(lanes) times, each step packing two vectors'
// sums into one. 3 (lanes - 1) operations for all the sums, against a reduction of log2(lanes)
// shuffles and adds per vector.
template <class D>
HWY_INLINE hn::Vec<D> SumOfEachVector(D d, hn::Vec<D>* v) {
#if HWY_TARGET != HWY_SCALAR  // one lane: v[0] is its own sum
  for (size_t width = hn::MaxLanes(d); width > 1; width /= 2) {
    for (size_t i = 0; i < width / 2; ++i) {
      v[i] = hn::Add(hn::ConcatEven(d, v[2 * i + 1], v[2 * i]),
                     hn::ConcatOdd(d, v[2 * i + 1], v[2 * i]));
    }
  }
#endif
  return v[0];
}

// Scores of kH heads (q rows head_dim apart) against a block of row-writable keys. A register of
// lanes covers P positions x kH heads (kH = 3 padded to 4): each position's row is decoded a
// chunk at a time and multiplied into its kH accumulators, and one SumOfEachVector turns the
// P * kH accumulators into their P * kH sums. Positions past n in the last group re-read row
// n - 1 (its bytes exist) and are dropped.
template <KvFormat F, size_t kH, class D>
HWY_INLINE void RowKeyScores(D d, const uint8_t* keys, size_t n, size_t head_dim, const float* q,
                             float scale, float* scores, size_t stride) {
  using V = hn::Vec<D>;
  constexpr size_t kLanes = hn::MaxLanes(D());
  constexpr size_t kPadded = kH == 3 ? 4 : kH;
  constexpr bool kTree = kLanes >= kPadded;  // false only on 1- or 2-lane targets
  constexpr size_t kPositions = kTree ? kLanes / kPadded : 1;
  const size_t row_bytes = kv_row_bytes(F, KvRole::kKeys, head_dim);
  HWY_ALIGN float sums[kTree ? kLanes : kPadded];
  for (size_t t0 = 0; t0 < n; t0 += kPositions) {
    V a[kPositions * kPadded];
    for (V& x : a) x = hn::Zero(d);
    const uint8_t* row[kPositions];
    for (size_t p = 0; p < kPositions; ++p) row[p] = keys + std::min(t0 + p, n - 1) * row_bytes;
    for (size_t i = 0; i < head_dim; i += kLanes) {
      for (size_t p = 0; p < kPositions; ++p) {
        const V k = RowChunk<F>(d, row[p], head_dim, i);
        for (size_t j = 0; j < kH; ++j) {
          a[p * kPadded + j] =
              hn::MulAdd(hn::LoadU(d, q + j * head_dim + i), k, a[p * kPadded + j]);
        }
      }
    }
    if constexpr (kTree) {
      hn::Store(hn::Mul(SumOfEachVector(d, a), hn::Set(d, scale)), d, sums);
    } else {
      for (size_t j = 0; j < kPadded; ++j) sums[j] = hn::GetLane(hn::SumOfLanes(d, a[j])) * scale;
    }
    for (size_t p = 0; p < kPositions && t0 + p < n; ++p) {
      for (size_t j = 0; j < kH; ++j) scores[j * stride + t0 + p] = sums[p * kPadded + j];
    }
  }
}

// A rotated key block's scales folded into kH queries: qk[j][c] = q[j][c] * step(c) and
// bias[j] = sum_c q[j][c] * min(c), a register of channels at a time with each channel's step
// and minimum decoded once for all heads (rounded as RotatedKeyScales rounds them). As a scalar
// loop, its chain of dependent adds took a fifth of an r3 block's time.
template <size_t kH>
HWY_INLINE void FoldKeyScales(const RotatedKeyScales& k, const float* q, size_t head_dim, float* qk,
                              float* bias) {
  const DR d;  // the rotated formats' heads are multiples of 32
  const hn::Rebind<int32_t, DR> di;
  const hn::Rebind<int8_t, DR> d8;
  const auto d_step = hn::Set(d, k.d_step);
  const auto d_min = hn::Set(d, k.d_min);
  hn::Vec<DR> b[kH];
  for (auto& x : b) x = hn::Zero(d);
  for (size_t c = 0; c < head_dim; c += hn::Lanes(d)) {
    const auto step = hn::Mul(d_step, hn::ConvertTo(d, Bytes(d, k.sc + c)));
    const auto min = hn::Mul(d_min, hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, k.mn + c))));
    for (size_t j = 0; j < kH; ++j) {
      const auto qj = hn::LoadU(d, q + j * head_dim + c);
      hn::StoreU(hn::Mul(qj, step), d, qk + j * head_dim + c);
      b[j] = hn::MulAdd(qj, min, b[j]);
    }
  }
  for (size_t j = 0; j < kH; ++j) bias[j] = hn::GetLane(hn::SumOfLanes(d, b[j]));
}

// Scores of kH heads against a rotated key block: two registers of positions at a time, one
// multiply-add per channel, head and register with the channel's codes (the steps already
// folded into qk), plus the minima's part. The two registers share each broadcast of qk and keep
// 2 kH accumulator chains in flight (one register's kH chains left the FMA units waiting).
template <KvFormat F, size_t kH, class D>
HWY_INLINE void RotatedKeyScores(D d, const uint8_t* codes, size_t n, size_t rows, size_t head_dim,
                                 const float* qk, const float* bias, float scale, float* scores,
                                 size_t stride) {
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(d);  // at most 16: two registers divide rows (a multiple of 32)
  const size_t channel_bytes = rotated_code_bytes(F, rows);
  for (size_t t0 = 0; t0 < n; t0 += 2 * lanes) {
    V a[kH], b[kH];
    for (size_t j = 0; j < kH; ++j) a[j] = b[j] = hn::Zero(d);
    for (size_t c = 0; c < head_dim; ++c) {
      const uint8_t* channel = codes + c * channel_bytes;
      const V x0 = hn::ConvertTo(d, Codes<F>(d, channel, rows, t0));
      const V x1 = hn::ConvertTo(d, Codes<F>(d, channel, rows, t0 + lanes));
      for (size_t j = 0; j < kH; ++j) {
        const V qj = hn::Set(d, qk[j * head_dim + c]);
        a[j] = hn::MulAdd(qj, x0, a[j]);
        b[j] = hn::MulAdd(qj, x1, b[j]);
      }
    }
    for (size_t j = 0; j < kH; ++j) {
      const V bj = hn::Set(d, bias[j]), sc = hn::Set(d, scale);
      hn::StoreU(hn::Mul(hn::Add(a[j], bj), sc), d, scores + j * stride + t0);
      hn::StoreU(hn::Mul(hn::Add(b[j], bj), sc), d, scores + j * stride + t0 + lanes);
    }
  }
}

// Accumulators the value pass keeps in registers (x86 below AVX-512 has 16 vector registers,
// the rest 32), leaving room for the decoded chunks and the weight.
constexpr size_t kValueAccumulators = HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3 ? 8 : 16;

// acc[j] = acc[j] * alpha[j] + sum_t w[j][t] v_t over dimensions [i, i + kChunks * lanes) for
// kH heads: their accumulators stay in registers while the positions stream by, and each
// position's chunks are decoded once for all kH heads. r4 and r3 values are summed as codes
// (v_t = code_t - center; the caller takes the center off once per block).
template <KvFormat F, size_t kH, size_t kChunks, class D>
HWY_INLINE void ValueChunks(D d, const uint8_t* values, size_t n, size_t head_dim, size_t i,
                            const float* w, size_t stride, const float* alpha, float* acc) {
  using V = hn::Vec<D>;
  constexpr size_t kLanes = hn::MaxLanes(D());
  const size_t row_bytes = kv_row_bytes(F, KvRole::kValues, head_dim);
  V a[kH * kChunks];
  for (size_t j = 0; j < kH; ++j) {
    for (size_t c = 0; c < kChunks; ++c) {
      a[j * kChunks + c] =
          hn::Mul(hn::LoadU(d, acc + j * head_dim + i + c * kLanes), hn::Set(d, alpha[j]));
    }
  }
  for (size_t t = 0; t < n; ++t) {
    V v[kChunks];
    for (size_t c = 0; c < kChunks; ++c) {
      v[c] = RowChunk<F>(d, values + t * row_bytes, head_dim, i + c * kLanes);
    }
    for (size_t j = 0; j < kH; ++j) {
      const V wj = hn::Set(d, w[j * stride + t]);
      for (size_t c = 0; c < kChunks; ++c)
        a[j * kChunks + c] = hn::MulAdd(wj, v[c], a[j * kChunks + c]);
    }
  }
  for (size_t j = 0; j < kH; ++j) {
    for (size_t c = 0; c < kChunks; ++c) {
      hn::StoreU(a[j * kChunks + c], d, acc + j * head_dim + i + c * kLanes);
    }
  }
}

template <KvFormat F, size_t kH, class D>
HWY_INLINE void Values(D d, const uint8_t* values, size_t n, size_t head_dim, const float* w,
                       size_t stride, const float* alpha, float* acc) {
  constexpr size_t kLanes = hn::MaxLanes(D());
  constexpr size_t kPadded = kH == 3 ? 4 : kH;
  constexpr size_t kChunks = std::clamp<size_t>(kValueAccumulators / kPadded, 1, 4);
  size_t i = 0;
  for (; i + kChunks * kLanes <= head_dim; i += kChunks * kLanes) {
    ValueChunks<F, kH, kChunks>(d, values, n, head_dim, i, w, stride, alpha, acc);
  }
  for (; i < head_dim; i += kLanes) {
    ValueChunks<F, kH, 1>(d, values, n, head_dim, i, w, stride, alpha, acc);
  }
}

// The block for kH heads of the group, from head g0: q, st and acc start at that head, and its
// rows of the scratch are at g0's offset.
template <KvFormat F, size_t kH, class D>
HWY_INLINE void AttendHeads(D d, const uint8_t* kb, const uint8_t* vb, size_t n, size_t rows,
                            size_t head_dim, const float* q, float scale, OnlineSoftmax* st,
                            float* acc, const BlockScratch& s, size_t g0) {
  constexpr bool kPacked = kv_format_packs_codes(F);  // r8's rows read as q8_0's
  const size_t stride = s.rows_padded;
  float* scores = s.scores + g0 * stride;
  float* alpha = s.alpha + g0;

  // Scores. Per-channel keys: q_c s_c once per block, and the minima's part of q·k per head.
  if constexpr (kPacked) {
    const RotatedKeyScales k = read_rotated_keys(kb, head_dim);
    float* qk = s.qk + g0 * head_dim;
    float* bias = s.bias + g0;
    FoldKeyScales<kH>(k, q, head_dim, qk, bias);
    RotatedKeyScores<F, kH>(d, k.codes, n, rows, head_dim, qk, bias, scale, scores, stride);
  } else {
    RowKeyScores<F, kH>(d, kb, n, head_dim, q, scale, scores, stride);
  }

  // Softmax weights, one rescale per head; a rotated value row's scale joins its weight, and
  // the weights' sum times the codes' center is what the values' codes add over v_t.
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const float center = static_cast<float>(rotated_levels(F) - 1) / 2.0f;
  float centering[kH];
  for (size_t j = 0; j < kH; ++j) {
    float* sg = scores + j * stride;
    std::fill(sg + n, sg + stride, -std::numeric_limits<float>::infinity());
    float m = st[j].m;
    for (size_t t = 0; t < n; ++t) m = std::max(m, sg[t]);
    alpha[j] = std::exp(st[j].m - m);
    const VF vm = hn::Set(df, m);
    VF sum = hn::Zero(df), scaled = hn::Zero(df);
    for (size_t t = 0; t < stride; t += lanes) {
      VF w = ExpPoly(df, hn::Sub(hn::LoadU(df, sg + t), vm));
      sum = hn::Add(sum, w);
      if constexpr (kPacked) {  // row_scale is 0 past n
        w = hn::Mul(w, hn::LoadU(df, s.row_scale + t));
        scaled = hn::Add(scaled, w);
      }
      hn::StoreU(w, df, sg + t);
    }
    if constexpr (kPacked) centering[j] = center * hn::GetLane(hn::SumOfLanes(df, scaled));
    st[j].sum = st[j].sum * alpha[j] + hn::GetLane(hn::SumOfLanes(df, sum));
    st[j].m = m;
    st[j].f16_accumulator = false;
  }

  // Values: acc = acc * alpha + sum_t w_t v_t.
  if constexpr (kPacked) {
    Values<F, kH>(d, vb, n, head_dim, scores, stride, alpha, acc);
    for (size_t j = 0; j < kH; ++j) {
      const VF off = hn::Set(df, centering[j]);
      for (size_t i = 0; i < head_dim; i += lanes) {
        float* a = acc + j * head_dim + i;
        hn::StoreU(hn::Sub(hn::LoadU(df, a), off), df, a);
      }
    }
  } else {
    Values<F, kH>(d, vb, n, head_dim, scores, stride, alpha, acc);
  }
}

// The group in runs of at most 4 heads, each run's head count a template argument, so that no
// loop over heads or dimensions branches on a count inside.
template <KvFormat F, class D>
HWY_INLINE void AttendGroup(D d, const uint8_t* kb, const uint8_t* vb, size_t n, size_t rows,
                            size_t head_dim, const float* q, size_t group, float scale,
                            OnlineSoftmax* st, float* acc, const BlockScratch& s) {
  if constexpr (kv_format_packs_codes(F)) {
    const size_t value_row_bytes = kv_row_bytes(F, KvRole::kValues, head_dim);
    for (size_t t = 0; t < n; ++t) {
      uint16_t sh;
      std::memcpy(&sh, vb + t * value_row_bytes, 2);
      s.row_scale[t] = fp16_to_fp32(sh);
    }
    std::fill(s.row_scale + n, s.row_scale + s.rows_padded, 0.0f);
  }
  for (size_t g0 = 0; g0 < group; g0 += 4) {
    const size_t o = g0 * head_dim;
    switch (std::min<size_t>(4, group - g0)) {
      case 1:
        AttendHeads<F, 1>(d, kb, vb, n, rows, head_dim, q + o, scale, st + g0, acc + o, s, g0);
        break;
      case 2:
        AttendHeads<F, 2>(d, kb, vb, n, rows, head_dim, q + o, scale, st + g0, acc + o, s, g0);
        break;
      case 3:
        AttendHeads<F, 3>(d, kb, vb, n, rows, head_dim, q + o, scale, st + g0, acc + o, s, g0);
        break;
      default:
        AttendHeads<F, 4>(d, kb, vb, n, rows, head_dim, q + o, scale, st + g0, acc + o, s, g0);
        break;
    }
  }
}

// kv_decode_block's values with these decoders: each element is the product of its code and
// its scales (plus a rotated key channel's minimum) in the scalar decoder's order, so the bits
// are the same.
template <KvFormat F, class D>
HWY_INLINE void DecodeRows(D d, KvRole role, const uint8_t* in, size_t n, size_t head_dim,
                           float* x) {
  const size_t row_bytes = kv_row_bytes(F, role, head_dim);
  const float center = static_cast<float>(rotated_levels(F) - 1) / 2.0f;
  for (size_t t = 0; t < n; ++t) {
    const uint8_t* row = in + t * row_bytes;
    auto scale = hn::Set(d, 1.0f);
    if constexpr (kv_format_packs_codes(F)) {  // a rotated value row: scale * (code - center)
      uint16_t sh;
      std::memcpy(&sh, row, 2);
      scale = hn::Set(d, fp16_to_fp32(sh));
    }
    for (size_t i = 0; i < head_dim; i += hn::Lanes(d)) {
      auto v = RowChunk<F>(d, row, head_dim, i);
      if constexpr (kv_format_packs_codes(F)) v = hn::Mul(scale, hn::Sub(v, hn::Set(d, center)));
      hn::StoreU(v, d, x + t * head_dim + i);
    }
  }
}

// A rotated key block, channel by channel: min_c + step_c * code, a register of positions at a
// time, written back into rows.
template <KvFormat F, class D>
HWY_INLINE void DecodeRotatedKeys(D d, const uint8_t* in, size_t n, size_t rows, size_t head_dim,
                                  float* x) {
  const RotatedKeyScales k = read_rotated_keys(in, head_dim);
  const size_t channel_bytes = rotated_code_bytes(F, rows);
  HWY_ALIGN float column[hn::MaxLanes(D())];
  for (size_t c = 0; c < head_dim; ++c) {
    const auto lo = hn::Set(d, k.min(c));
    const auto step = hn::Set(d, k.step(c));
    for (size_t t0 = 0; t0 < n; t0 += hn::Lanes(d)) {
      const auto code = hn::ConvertTo(d, Codes<F>(d, k.codes + c * channel_bytes, rows, t0));
      hn::Store(hn::Add(lo, hn::Mul(step, code)), d, column);
      for (size_t p = 0; p < hn::Lanes(d) && t0 + p < n; ++p) {
        x[(t0 + p) * head_dim + c] = column[p];
      }
    }
  }
}

template <KvFormat F, class D>
HWY_INLINE void DecodeFormat(D d, KvRole role, const uint8_t* in, size_t n, size_t rows,
                             size_t head_dim, float* x) {
  if constexpr (kv_format_packs_codes(F)) {
    if (role == KvRole::kKeys) return DecodeRotatedKeys<F>(d, in, n, rows, head_dim, x);
  }
  DecodeRows<F>(d, role, in, n, head_dim, x);
}

// Calls fn(d, format) with the format as a compile-time constant
// (std::integral_constant<KvFormat, F>) and the decoders' lanes d: 16 where the head is a
// multiple of them (so do the codes of r4 and r3, whose runs hold at least 32), else 8 (the
// multiple every block format's head has).
template <class Fn>
HWY_INLINE void WithFormat(KvFormat format, size_t head_dim, const Fn& fn) {
  const auto lanes = [&](auto f) {
    const DR dr;
    if (head_dim % hn::Lanes(dr) == 0) return fn(dr, f);
    return fn(DC(), f);
  };
  using F = KvFormat;
  switch (format) {
    case F::kF32:
      return lanes(std::integral_constant<F, F::kF32>());
    case F::kF16:
      return lanes(std::integral_constant<F, F::kF16>());
    case F::kBF16:
      return lanes(std::integral_constant<F, F::kBF16>());
    case F::kQ8_0:
      return lanes(std::integral_constant<F, F::kQ8_0>());
    case F::kQ4_0:
      return lanes(std::integral_constant<F, F::kQ4_0>());
    case F::kR4:
      return lanes(std::integral_constant<F, F::kR4>());
    case F::kR3:
      return lanes(std::integral_constant<F, F::kR3>());
    case F::kR8:
      return lanes(std::integral_constant<F, F::kR8>());
  }
}

void DecodeBlock(KvFormat format, KvRole role, const void* block, size_t n, size_t rows,
                 size_t head_dim, float* x) {
  assert(head_dim % kBlockDimMultiple == 0);
  const auto* in = static_cast<const uint8_t*>(block);
  WithFormat(format, head_dim, [&](auto d, auto f) {
    DecodeFormat<decltype(f)::value>(d, role, in, n, rows, head_dim, x);
  });
}

void AttendBlock(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                 size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                 float* acc, float* scratch) {
  if (n == 0) return;
  assert(head_dim % kBlockDimMultiple == 0);
  const BlockScratch s = carve(scratch, group, rows, head_dim);
  const auto* kb = static_cast<const uint8_t*>(keys);
  const auto* vb = static_cast<const uint8_t*>(values);
  WithFormat(format, head_dim, [&](auto d, auto f) {
    AttendGroup<decltype(f)::value>(d, kb, vb, n, rows, head_dim, q, group, scale, st, acc, s);
  });
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(AttendBlock);
HWY_EXPORT(DecodeBlock);

size_t attend_block_scratch_floats(size_t group, size_t rows, size_t head_dim) {
  return group * (round_up(rows, 16) + head_dim + 2) + round_up(rows, 16);
}

void attend_block(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                  size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                  float* acc, float* scratch) {
  HWY_DYNAMIC_DISPATCH(AttendBlock)
  (format, keys, values, n, rows, head_dim, q, group, scale, st, acc, scratch);
}

void decode_kv_block_simd(KvFormat format, KvRole role, const void* block, size_t n, size_t rows,
                          size_t head_dim, float* x) {
  HWY_DYNAMIC_DISPATCH(DecodeBlock)(format, role, block, n, rows, head_dim, x);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
