// Attention over one block of a KV page in any storage format (kernels/kv_format.h), for the
// group of query heads that read one KV head, folded into their online softmax states a block
// at a time (FlashAttention's rescale once per block, not once per key):
//   s_t = scale * q·k_t for t < n,  m' = max(m, max_t s_t),  alpha = exp(m - m'),
//   w_t = exp(s_t - m'),  sum' = sum * alpha + sum_t w_t,  acc' = acc * alpha + sum_t w_t v_t.
// Rows are decoded one at a time into registers' worth of f32 (never a whole page into a
// scratch copy), each key row once for all heads of the group:
//   - q8_0, r8, q4_0, bf16, f16, f32: the row's values;
//   - rotated keys (r4, r3): the row's codes, the query having folded in the block's per-channel
//     steps and minima once (q·k = sum_c (q_c s_c) code_c + sum_c q_c m_c);
//   - rotated values: the codes, the weight w_t taking the row's scale and the codes' center
//     taken off once per block (sum_t w_t (code_t - c) = sum_t w_t code_t - c sum_t w_t).
// Queries and outputs of rotated formats are in the rotated space (the caller rotates them).
// The exp is the polynomial of exp_poly-inl.h. The scalar twin
// (kernels/reference/attention_block_ref.h) decodes with the format's scalar decoder instead and
// sums in double; the two agree to ~1e-6 relative.
#pragma once

#include <cstddef>

#include "kernels/attention.h"
#include "kernels/kv_format.h"

namespace strata::kernels {

// Floats of scratch attend_block needs.
size_t attend_block_scratch_floats(size_t group, size_t rows, size_t head_dim);

// Folds positions [0, n) of a block pair (keys and values of `rows` positions in `format`) into
// st[g] and acc[g] ([group][head_dim]) for the group of queries q ([group][head_dim]).
// head_dim is a multiple of kBlockDimMultiple (kernels/kv_format.h).
void attend_block(KvFormat format, const void* keys, const void* values, size_t n, size_t rows,
                  size_t head_dim, const float* q, size_t group, float scale, OnlineSoftmax* st,
                  float* acc, float* scratch);

// kv_decode_block (kernels/kv_format.h, the scalar decoder and this one's twin) with the
// decoders above: positions [0, n) of a block into x[n][head_dim], the same bits. The prompt
// tiles read a quantized page this way, once per tile. head_dim a multiple of
// kBlockDimMultiple.
void decode_kv_block_simd(KvFormat format, KvRole role, const void* block, size_t n, size_t rows,
                          size_t head_dim, float* x);

}  // namespace strata::kernels
