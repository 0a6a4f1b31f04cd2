// kernels/attention_block.h with Highway runtime dispatch. Row decoders work on at most 8 f32
// lanes (the r3 bit plane gives 8 codes per byte run; see kv_format.h), the dot products and
// accumulator updates on the target's full width.

#include "kernels/attention_block.h"

#include <algorithm>
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
// key block's steps folded in, and one decoded row.
struct BlockScratch {
  float* scores;  // [group][rows_padded]
  float* qk;      // [group][head_dim]
  float* row;     // [head_dim]
  float* bias;    // [group]: a rotated key block's sum_c q_c m_c
  float* alpha;   // [group]: the block's rescale of each head's accumulator
  size_t rows_padded;
};

BlockScratch carve(float* scratch, size_t group, size_t rows, size_t head_dim) {
  const size_t padded = round_up(rows, 16);
  float* qk = scratch + group * padded;
  float* row = qk + group * head_dim;
  float* bias = row + head_dim;
  return {scratch, qk, row, bias, bias + group, padded};
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

HWY_INLINE VC BytesToFloat(const uint8_t* p) {
  const DC dc;
  const hn::Rebind<uint8_t, DC> d8;
  const hn::Rebind<int32_t, DC> di;
  return hn::ConvertTo(dc, hn::PromoteTo(di, hn::LoadU(d8, p)));
}

HWY_INLINE hn::Vec<hn::Rebind<int32_t, DC>> Bytes(const uint8_t* p) {
  const hn::Rebind<uint8_t, DC> d8;
  const hn::Rebind<int32_t, DC> di;
  return hn::PromoteTo(di, hn::LoadU(d8, p));
}

// Row `row` of a row-writable format as f32 values (rotated values: code - center, the row's
// scale returned instead of applied).
HWY_INLINE float DecodeRow(KvFormat f, const uint8_t* p, size_t head_dim, float* out) {
  const DC dc;
  const size_t lanes = hn::Lanes(dc);
  const hn::Rebind<int32_t, DC> di;
  switch (f) {
    case KvFormat::kF32:
      std::memcpy(out, p, head_dim * sizeof(float));
      return 1.0f;
    case KvFormat::kF16: {
      const hn::Rebind<hwy::float16_t, DC> dh;
      for (size_t d = 0; d < head_dim; d += lanes) {
        hn::StoreU(hn::PromoteTo(dc, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p) + d)),
                   dc, out + d);
      }
      return 1.0f;
    }
    case KvFormat::kBF16: {
      const hn::Rebind<uint16_t, DC> d16;
      const hn::Rebind<uint32_t, DC> du;
      for (size_t d = 0; d < head_dim; d += lanes) {
        const auto bits = hn::ShiftLeft<16>(
            hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p) + d)));
        hn::StoreU(hn::BitCast(dc, bits), dc, out + d);
      }
      return 1.0f;
    }
    case KvFormat::kQ8_0: {
      const hn::Rebind<int8_t, DC> d8;
      for (size_t b = 0; b < head_dim; b += 32, p += 34) {
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const VC scale = hn::Set(dc, fp16_to_fp32(dh));
        for (size_t i = 0; i < 32; i += lanes) {
          const VC q = hn::ConvertTo(
              dc, hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p + 2 + i))));
          hn::StoreU(hn::Mul(q, scale), dc, out + b + i);
        }
      }
      return 1.0f;
    }
    case KvFormat::kQ4_0: {
      const auto mask = hn::Set(di, 15), eight = hn::Set(di, 8);
      for (size_t b = 0; b < head_dim; b += 32, p += 18) {
        uint16_t dh;
        std::memcpy(&dh, p, 2);
        const VC scale = hn::Set(dc, fp16_to_fp32(dh));
        for (size_t j = 0; j < 16; j += lanes) {
          const auto bytes = Bytes(p + 2 + j);
          const VC lo = hn::ConvertTo(dc, hn::Sub(hn::And(bytes, mask), eight));
          const VC hi = hn::ConvertTo(dc, hn::Sub(hn::ShiftRight<4>(bytes), eight));
          hn::StoreU(hn::Mul(lo, scale), dc, out + b + j);
          hn::StoreU(hn::Mul(hi, scale), dc, out + b + 16 + j);
        }
      }
      return 1.0f;
    }
    case KvFormat::kR4:
    case KvFormat::kR3:
      break;
  }
  return 0.0f;
}

// A row of rotated codes as f32 codes minus `center`.
HWY_INLINE void DecodeCodes(KvFormat f, const uint8_t* codes, size_t head_dim, float center,
                            float* out) {
  const DC dc;
  const size_t lanes = hn::Lanes(dc);
  const hn::Rebind<int32_t, DC> di;
  const VC c = hn::Set(dc, center);
  if (f == KvFormat::kR4) {
    const size_t half = head_dim / 2;
    const auto mask = hn::Set(di, 15);
    for (size_t i = 0; i < half; i += lanes) {
      const auto bytes = Bytes(codes + i);
      hn::StoreU(hn::Sub(hn::ConvertTo(dc, hn::And(bytes, mask)), c), dc, out + i);
      hn::StoreU(hn::Sub(hn::ConvertTo(dc, hn::ShiftRight<4>(bytes)), c), dc, out + half + i);
    }
    return;
  }
  const size_t quarter = head_dim / 4, eighth = head_dim / 8;
  const auto three = hn::Set(di, 3), one = hn::Set(di, 1);
  for (size_t i = 0; i < head_dim; i += lanes) {
    const auto low = hn::And(hn::ShiftRightSame(Bytes(codes + i % quarter),
                                                static_cast<int>(2 * (i / quarter))),
                             three);
    const auto high = hn::And(hn::ShiftRightSame(Bytes(codes + quarter + i % eighth),
                                                 static_cast<int>(i / eighth)),
                              one);
    const auto code = hn::Or(low, hn::ShiftLeft<2>(high));
    hn::StoreU(hn::Sub(hn::ConvertTo(dc, code), c), dc, out + i);
  }
}

HWY_INLINE float Dot(const float* a, const float* b, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  VF s0 = hn::Zero(df), s1 = hn::Zero(df);
  size_t d = 0;
  for (; d + 2 * lanes <= n; d += 2 * lanes) {
    s0 = hn::MulAdd(hn::LoadU(df, a + d), hn::LoadU(df, b + d), s0);
    s1 = hn::MulAdd(hn::LoadU(df, a + d + lanes), hn::LoadU(df, b + d + lanes), s1);
  }
  float tail = 0.0f;
  for (; d < n; ++d) tail += a[d] * b[d];
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1))) + tail;
}

// acc = acc * alpha + w * row.
HWY_INLINE void ScaleAdd(float* acc, float alpha, float w, const float* row, size_t n) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  const VF va = hn::Set(df, alpha), vw = hn::Set(df, w);
  size_t d = 0;
  for (; d + lanes <= n; d += lanes) {
    hn::StoreU(hn::MulAdd(hn::LoadU(df, row + d), vw, hn::Mul(hn::LoadU(df, acc + d), va)), df,
               acc + d);
  }
  for (; d < n; ++d) acc[d] = acc[d] * alpha + w * row[d];
}

void AttendBlock(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                 size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                 float* acc, float* scratch) {
  if (n == 0) return;
  const BlockScratch s = carve(scratch, group, rows, head_dim);
  const auto* kb = static_cast<const uint8_t*>(keys);
  const auto* vb = static_cast<const uint8_t*>(values);
  const bool rotated = kv_format_rotated(format);
  const float center = static_cast<float>(rotated_levels(format) - 1) / 2.0f;

  // Scores. Rotated keys: q_c s_c once per block, and the minima's part of q·k per head.
  std::fill_n(s.bias, group, 0.0f);
  const uint8_t* key_rows = kb;
  size_t key_row_bytes = 0;
  if (rotated) {
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
    key_rows = kb + rotated_key_header_bytes(head_dim);
    key_row_bytes = rotated_code_bytes(format, head_dim);
  } else {
    key_row_bytes = kv_row_bytes(format, KvRole::kKeys, head_dim);
  }
  const float* qk = rotated ? s.qk : q;
  for (size_t t = 0; t < n; ++t) {
    const uint8_t* row = key_rows + t * key_row_bytes;
    const float* k = s.row;
    if (rotated) {
      DecodeCodes(format, row, head_dim, 0.0f, s.row);
    } else if (format == KvFormat::kF32) {
      k = reinterpret_cast<const float*>(row);
    } else {
      DecodeRow(format, row, head_dim, s.row);
    }
    for (size_t g = 0; g < group; ++g) {
      s.scores[g * s.rows_padded + t] = (Dot(qk + g * head_dim, k, head_dim) + s.bias[g]) * scale;
    }
  }

  // Softmax weights, one rescale per head.
  const DF df;
  const size_t lanes = hn::Lanes(df);
  for (size_t g = 0; g < group; ++g) {
    float* sg = s.scores + g * s.rows_padded;
    std::fill(sg + n, sg + s.rows_padded, -std::numeric_limits<float>::infinity());
    float m = st[g].m;
    for (size_t t = 0; t < n; ++t) m = std::max(m, sg[t]);
    s.alpha[g] = std::exp(st[g].m - m);
    const VF vm = hn::Set(df, m);
    VF sum = hn::Zero(df);
    for (size_t t = 0; t < s.rows_padded; t += lanes) {
      const VF w = ExpPoly(df, hn::Sub(hn::LoadU(df, sg + t), vm));
      hn::StoreU(w, df, sg + t);
      sum = hn::Add(sum, w);
    }
    st[g].sum = st[g].sum * s.alpha[g] + hn::GetLane(hn::SumOfLanes(df, sum));
    st[g].m = m;
    st[g].f16_accumulator = false;
  }

  // Values: acc = acc * alpha + sum_t w_t v_t, the rescale folded into the first row.
  const size_t value_row_bytes = kv_row_bytes(format, KvRole::kValues, head_dim);
  for (size_t t = 0; t < n; ++t) {
    const uint8_t* row = vb + t * value_row_bytes;
    const float* v = s.row;
    float row_scale = 1.0f;
    if (rotated) {
      uint16_t sh;
      std::memcpy(&sh, row, 2);
      row_scale = fp16_to_fp32(sh);
      DecodeCodes(format, row + 2, head_dim, center, s.row);
    } else if (format == KvFormat::kF32) {
      v = reinterpret_cast<const float*>(row);
    } else {
      DecodeRow(format, row, head_dim, s.row);
    }
    for (size_t g = 0; g < group; ++g) {
      ScaleAdd(acc + g * head_dim, t == 0 ? s.alpha[g] : 1.0f,
               s.scores[g * s.rows_padded + t] * row_scale, v, head_dim);
    }
  }
}

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(AttendBlock);

size_t attend_block_scratch_floats(size_t group, size_t rows, size_t head_dim) {
  return group * (round_up(rows, 16) + head_dim + 2) + head_dim;
}

void attend_block(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                  size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                  float* acc, float* scratch) {
  HWY_DYNAMIC_DISPATCH(AttendBlock)(format, keys, values, n, rows, head_dim, q, group, scale, st,
                                    acc, scratch);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
