// kernels/attention_block.h with Highway runtime dispatch. The decoders and multiply-adds work
// on 8 f32 lanes (at most: the code layouts give 8 codes per run of bytes, see kv_format.h;
// head_dim and the rows of a rotated block are multiples of 8), the exp on the full width.

#include "kernels/attention_block.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

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
// key block's steps folded in, and the value rows' scales.
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
using DC = hn::CappedTag<float, 8>;  // the decoders' lanes
using VC = hn::Vec<DC>;

HWY_INLINE hn::Vec<hn::Rebind<int32_t, DC>> Bytes(const uint8_t* p) {
  const hn::Rebind<uint8_t, DC> d8;
  const hn::Rebind<int32_t, DC> di;
  return hn::PromoteTo(di, hn::LoadU(d8, p));
}

// Codes [i, i + lanes) of a run of n rotated codes (kv_format.h's layouts; i a multiple of the
// lanes, which are at most 8).
HWY_INLINE hn::Vec<hn::Rebind<int32_t, DC>> Codes(KvFormat f, const uint8_t* codes, size_t n,
                                                  size_t i) {
  const hn::Rebind<int32_t, DC> di;
  if (f == KvFormat::kR4) {
    const size_t half = n / 2;
    const auto bytes = Bytes(codes + i % half);
    return i < half ? hn::And(bytes, hn::Set(di, 15)) : hn::ShiftRight<4>(bytes);
  }
  const size_t quarter = n / 4;
  const auto low =
      hn::And(hn::ShiftRightSame(Bytes(codes + i % quarter), static_cast<int>(2 * (i / quarter))),
              hn::Set(di, 3));
  uint32_t word;  // the high bits of codes [i - i % 32, + 32)
  std::memcpy(&word, codes + quarter + i / 32 * 4, 4);
  const auto shift = hn::Add(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(i % 32)));
  // The And keeps bit 0 of each lane's shift (arithmetic on int32 lanes, which changes no low bit).
  const auto high =
      hn::And(hn::Shr(hn::Set(di, static_cast<int32_t>(word)), shift), hn::Set(di, 1));
  return hn::Or(low, hn::ShiftLeft<2>(high));
}

// Elements [d, d + lanes) of a row of a row-writable format as f32 (d a multiple of the lanes).
// Rotated values: code - center (the row's scale is applied by the caller).
HWY_INLINE VC RowChunk(KvFormat f, const uint8_t* row, size_t head_dim, size_t d, float center) {
  const DC dc;
  const hn::Rebind<int32_t, DC> di;
  switch (f) {
    case KvFormat::kF32:
      return hn::LoadU(dc, reinterpret_cast<const float*>(row) + d);
    case KvFormat::kF16: {
      const hn::Rebind<hwy::float16_t, DC> dh;
      return hn::PromoteTo(dc, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + d));
    }
    case KvFormat::kBF16: {
      const hn::Rebind<uint16_t, DC> d16;
      const hn::Rebind<uint32_t, DC> du;
      return hn::BitCast(dc, hn::ShiftLeft<16>(hn::PromoteTo(
                                 du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(row) + d))));
    }
    case KvFormat::kQ8_0:
    case KvFormat::kR8: {
      const uint8_t* block = row + d / 32 * 34;
      uint16_t dh;
      std::memcpy(&dh, block, 2);
      const hn::Rebind<int8_t, DC> d8;
      const auto q =
          hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(block + 2 + d % 32)));
      return hn::Mul(hn::ConvertTo(dc, q), hn::Set(dc, fp16_to_fp32(dh)));
    }
    case KvFormat::kQ4_0: {
      const uint8_t* block = row + d / 32 * 18;
      uint16_t dh;
      std::memcpy(&dh, block, 2);
      const size_t j = d % 32;
      const auto bytes = Bytes(block + 2 + j % 16);
      const auto q = j < 16 ? hn::And(bytes, hn::Set(di, 15)) : hn::ShiftRight<4>(bytes);
      return hn::Mul(hn::ConvertTo(dc, hn::Sub(q, hn::Set(di, 8))), hn::Set(dc, fp16_to_fp32(dh)));
    }
    case KvFormat::kR4:
    case KvFormat::kR3:
      return hn::Sub(hn::ConvertTo(dc, Codes(f, row + 2, head_dim, d)), hn::Set(dc, center));
  }
  return hn::Zero(dc);
}

// Heads handled together: each decoded chunk feeds this many accumulators.
constexpr size_t kHeads = 4;

// Scores of a rotated key block: for 8 positions at a time, one multiply-add per channel and
// head with the channel's codes (the steps already folded into qk), plus the minima's part.
HWY_INLINE void RotatedKeyScores(KvFormat f, const uint8_t* codes, size_t n, size_t rows,
                                 size_t head_dim, const float* qk, const float* bias, size_t group,
                                 float scale, float* scores, size_t stride) {
  const DC dc;
  const size_t channel_bytes = rotated_code_bytes(f, rows);
  for (size_t t0 = 0; t0 < n; t0 += hn::Lanes(dc)) {
    for (size_t g0 = 0; g0 < group; g0 += kHeads) {
      const size_t heads = std::min(kHeads, group - g0);
      VC acc[kHeads];
      for (size_t j = 0; j < kHeads; ++j) acc[j] = hn::Zero(dc);
      for (size_t c = 0; c < head_dim; ++c) {
        const VC code = hn::ConvertTo(dc, Codes(f, codes + c * channel_bytes, rows, t0));
        for (size_t j = 0; j < heads; ++j) {
          acc[j] = hn::MulAdd(hn::Set(dc, qk[(g0 + j) * head_dim + c]), code, acc[j]);
        }
      }
      for (size_t j = 0; j < heads; ++j) {
        const VC s = hn::Mul(hn::Add(acc[j], hn::Set(dc, bias[g0 + j])), hn::Set(dc, scale));
        hn::StoreU(s, dc, scores + (g0 + j) * stride + t0);
      }
    }
  }
}

// Scores of a row-writable key block: per position, chunks of the row against each head.
HWY_INLINE void RowKeyScores(KvFormat f, const uint8_t* rows_data, size_t n, size_t head_dim,
                             const float* q, size_t group, float scale, float* scores,
                             size_t stride) {
  const DC dc;
  const size_t row_bytes = kv_row_bytes(f, KvRole::kKeys, head_dim);
  for (size_t t = 0; t < n; ++t) {
    const uint8_t* row = rows_data + t * row_bytes;
    for (size_t g0 = 0; g0 < group; g0 += kHeads) {
      const size_t heads = std::min(kHeads, group - g0);
      VC acc[kHeads];
      for (size_t j = 0; j < kHeads; ++j) acc[j] = hn::Zero(dc);
      for (size_t d = 0; d < head_dim; d += hn::Lanes(dc)) {
        const VC k = RowChunk(f, row, head_dim, d, 0.0f);
        for (size_t j = 0; j < heads; ++j) {
          acc[j] = hn::MulAdd(hn::LoadU(dc, q + (g0 + j) * head_dim + d), k, acc[j]);
        }
      }
      for (size_t j = 0; j < heads; ++j) {
        scores[(g0 + j) * stride + t] = hn::GetLane(hn::SumOfLanes(dc, acc[j])) * scale;
      }
    }
  }
}

void AttendBlock(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                 size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                 float* acc, float* scratch) {
  if (n == 0) return;
  assert(head_dim % kBlockDimMultiple == 0);
  const BlockScratch s = carve(scratch, group, rows, head_dim);
  const auto* kb = static_cast<const uint8_t*>(keys);
  const auto* vb = static_cast<const uint8_t*>(values);
  const bool packed = kv_format_packs_codes(format);  // r8's rows read as q8_0's
  const float center = static_cast<float>(rotated_levels(format) - 1) / 2.0f;
  const size_t stride = s.rows_padded;

  // Scores. Per-channel keys: q_c s_c once per block, and the minima's part of q·k per head.
  if (packed) {
    RotatedKeyHeader header;
    std::memcpy(&header, kb, sizeof header);
    const float d_step = fp16_to_fp32(header.d_step), d_min = fp16_to_fp32(header.d_min);
    const uint8_t* sc = kb + sizeof header;
    const auto* mn = reinterpret_cast<const int8_t*>(sc + head_dim);
    for (size_t g = 0; g < group; ++g) {
      float b = 0.0f;
      for (size_t c = 0; c < head_dim; ++c) {
        s.qk[g * head_dim + c] = q[g * head_dim + c] * (d_step * static_cast<float>(sc[c]));
        b += q[g * head_dim + c] * (d_min * static_cast<float>(mn[c]));
      }
      s.bias[g] = b;
    }
    RotatedKeyScores(format, kb + rotated_key_header_bytes(head_dim), n, rows, head_dim, s.qk,
                     s.bias, group, scale, s.scores, stride);
  } else {
    RowKeyScores(format, kb, n, head_dim, q, group, scale, s.scores, stride);
  }

  // Softmax weights, one rescale per head; a rotated value row's scale joins its weight.
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const size_t value_row_bytes = kv_row_bytes(format, KvRole::kValues, head_dim);
  float* row_scale = s.row_scale;
  for (size_t t = 0; t < n; ++t) {
    uint16_t sh = 0x3C00;  // 1.0
    if (packed) std::memcpy(&sh, vb + t * value_row_bytes, 2);
    row_scale[t] = fp16_to_fp32(sh);
  }
  for (size_t g = 0; g < group; ++g) {
    float* sg = s.scores + g * stride;
    std::fill(sg + n, sg + stride, -std::numeric_limits<float>::infinity());
    float m = st[g].m;
    for (size_t t = 0; t < n; ++t) m = std::max(m, sg[t]);
    s.alpha[g] = std::exp(st[g].m - m);
    const VF vm = hn::Set(df, m);
    VF sum = hn::Zero(df);
    for (size_t t = 0; t < stride; t += lanes) {
      const VF w = ExpPoly(df, hn::Sub(hn::LoadU(df, sg + t), vm));
      sum = hn::Add(sum, w);
      hn::StoreU(w, df, sg + t);
    }
    for (size_t t = 0; t < n && packed; ++t) sg[t] *= row_scale[t];
    st[g].sum = st[g].sum * s.alpha[g] + hn::GetLane(hn::SumOfLanes(df, sum));
    st[g].m = m;
    st[g].f16_accumulator = false;
  }

  // Values: acc = acc * alpha + sum_t w_t v_t, a vector of dimensions of up to 4 heads in
  // registers while the positions stream by.
  const DC dc;
  for (size_t d = 0; d < head_dim; d += hn::Lanes(dc)) {
    for (size_t g0 = 0; g0 < group; g0 += kHeads) {
      const size_t heads = std::min(kHeads, group - g0);
      VC a[kHeads];
      for (size_t j = 0; j < heads; ++j) {
        a[j] = hn::Mul(hn::LoadU(dc, acc + (g0 + j) * head_dim + d), hn::Set(dc, s.alpha[g0 + j]));
      }
      for (size_t t = 0; t < n; ++t) {
        const VC v = RowChunk(format, vb + t * value_row_bytes, head_dim, d, center);
        for (size_t j = 0; j < heads; ++j) {
          a[j] = hn::MulAdd(hn::Set(dc, s.scores[(g0 + j) * stride + t]), v, a[j]);
        }
      }
      for (size_t j = 0; j < heads; ++j) hn::StoreU(a[j], dc, acc + (g0 + j) * head_dim + d);
    }
  }
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(AttendBlock);

size_t attend_block_scratch_floats(size_t group, size_t rows, size_t head_dim) {
  return group * (round_up(rows, 16) + head_dim + 2) + round_up(rows, 16);
}

void attend_block(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                  size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                  float* acc, float* scratch) {
  HWY_DYNAMIC_DISPATCH(AttendBlock)
  (format, keys, values, n, rows, head_dim, q, group, scale, st, acc, scratch);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
