#include "kv/paged_attention.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/attention_block.h"
#include "kernels/attention_tile.h"

namespace strata::kv {
namespace {

inline float round_to_f16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

// One head's blocks of consecutive pages lie a whole page (every layer) apart, in runs of a few
// KiB that the hardware prefetchers, which stop at 4 KiB boundaries, do not run ahead into: at
// depth, decode attention waited on DRAM more than it computed. So the next page's blocks are
// requested while this page's are read.
void prefetch_head(const KvShape& shape, const KvHeadView& view) {
  const auto prefetch = [](const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(c + i);
  };
  prefetch(view.keys, shape.block_bytes(view.precision, kernels::KvRole::kKeys));
  prefetch(view.values, shape.block_bytes(view.precision, kernels::KvRole::kValues));
}

}  // namespace

// One pass of online softmax (Milakov & Gimelshein; FlashAttention): a running maximum m, a
// running sum of exp(s - m), and an accumulator acc of exp(s - m) * V[t], rescaled by
// exp(m_old - m_new) whenever the maximum grows; out = acc / sum.
//
// An f16 page is read the way the reference CPU engine reads an f16 KV cache, so that strata's
// logits agree with it to ~1e-6 rather than ~1e-2: the query is rounded to f16 for the q·k dot,
// and acc is rounded to f16 after every update. Should acc approach the f16 range (very long
// contexts), rounding stops and acc continues in f32 rather than overflowing.
size_t attend_kv_head_scratch_floats(const KvShape& shape, size_t group) {
  return std::max(group * shape.head_dim,
                  kernels::attend_block_scratch_floats(group, shape.page_size, shape.head_dim));
}

void attend_kv_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                    size_t n_ctx, const float* q, size_t group, float scale, float* out,
                    float* scratch, bool reference_reads, std::span<const uint32_t> read) {
  const size_t page_size = pool.shape().page_size;
  const size_t head_dim = pool.shape().head_dim;
  std::fill_n(out, group * head_dim, 0.0f);
  // A GQA group has a handful of heads (Llama 3: 4; at most n_heads).
  std::vector<kernels::OnlineSoftmax> states(group);
  float* q16 = scratch;
  if (reference_reads) {
    for (size_t i = 0; i < group * head_dim; ++i) q16[i] = round_to_f16(q[i]);
  }
  const size_t n_pages = read.empty() ? (n_ctx + page_size - 1) / page_size : read.size();
  const auto page_at = [&](size_t i) { return read.empty() ? i : size_t{read[i]}; };
  KvHeadView next = pool.head(pages[page_at(0)], layer, kv_head);
  for (size_t i = 0; i < n_pages; ++i) {
    const size_t p = page_at(i), start = p * page_size;
    const KvHeadView view = next;
    if (i + 1 < n_pages) {
      next = pool.head(pages[page_at(i + 1)], layer, kv_head);
      prefetch_head(pool.shape(), next);
    }
    const size_t n = std::min(page_size, n_ctx - start);
    if (!reference_reads) {
      kernels::attend_block(view.precision, view.keys, view.values, n, page_size, head_dim, q,
                            group, scale, states.data(), out, scratch);
    } else if (view.precision == KvPrecision::kF16) {
      kernels::attend_rows_f16(static_cast<const uint16_t*>(view.keys),
                               static_cast<const uint16_t*>(view.values), n, head_dim, q16, group,
                               scale, states.data(), out);
    } else {
      kernels::attend_rows_f32(static_cast<const float*>(view.keys),
                               static_cast<const float*>(view.values), n, head_dim, q, group, scale,
                               states.data(), out);
    }
  }
  for (size_t g = 0; g < group; ++g) {
    const float inv = 1.0f / states[g].sum;
    for (size_t d = 0; d < head_dim; ++d) out[g * head_dim + d] *= inv;
  }
}

// The query stays f32 on f16 pages too: the fast path does not reproduce the reference engine's
// rounding, so it keeps the more accurate product.
size_t attend_kv_head_tile_scratch_floats(const KvShape& shape, size_t rows) {
  return kernels::attention_tile_floats(rows, shape.head_dim) +
         2 * shape.page_size * shape.head_dim;
}

void attend_kv_head_tile(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                         const float* q, size_t queries, size_t group, size_t query_stride,
                         const uint32_t* last_pos, float scale, float* out, float* scratch) {
  const size_t page_size = pool.shape().page_size;
  const size_t head_dim = pool.shape().head_dim;
  const size_t n_ctx = size_t{last_pos[queries - 1]} + 1;
  float* decoded = scratch + kernels::attention_tile_floats(queries * group, head_dim);
  kernels::AttentionTile tile =
      kernels::begin_attention_tile(scratch, q, queries, group, query_stride, head_dim, last_pos);
  for (size_t start = 0, p = 0; start < n_ctx; start += page_size, ++p) {
    const KvHeadView view = pool.head(pages[p], layer, kv_head);
    const size_t n = std::min(page_size, n_ctx - start);
    if (view.precision == KvPrecision::kF16) {
      kernels::attend_tile_f16(tile, static_cast<const uint16_t*>(view.keys),
                               static_cast<const uint16_t*>(view.values), n, start, scale);
    } else if (view.precision != KvPrecision::kF32) {
      // Decoded once for the tile's 16 queries and their group of heads.
      float* k = decoded;
      float* v = decoded + page_size * head_dim;
      kernels::decode_kv_block_simd(view.precision, kernels::KvRole::kKeys, view.keys, n, page_size,
                                    head_dim, k);
      kernels::decode_kv_block_simd(view.precision, kernels::KvRole::kValues, view.values, n,
                                    page_size, head_dim, v);
      kernels::attend_tile_f32(tile, k, v, n, start, scale);
    } else {
      kernels::attend_tile_f32(tile, static_cast<const float*>(view.keys),
                               static_cast<const float*>(view.values), n, start, scale);
    }
  }
  kernels::finish_attention_tile(tile, out, query_stride);
}

}  // namespace strata::kv
