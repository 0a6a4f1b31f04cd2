#include "kv/paged_attention.h"

#include <cmath>
#include <limits>

#include "base/fp16.h"

namespace strata::kv {
namespace {

// Reads one key or value row of a page as f32.
inline float element(const void* row, size_t i, KvPrecision precision) {
  return precision == KvPrecision::kF32 ? static_cast<const float*>(row)[i]
                                        : fp16_to_fp32(static_cast<const uint16_t*>(row)[i]);
}

// Largest magnitude an f16 accumulator may reach before it would round to infinity.
constexpr float kF16Limit = 60000.0f;

}  // namespace

// One pass of online softmax (Milakov & Gimelshein; FlashAttention): a running maximum M, a
// running sum S of exp(s - M), and an accumulator acc of exp(s - M) * V[t], rescaled by
// exp(M_old - M_new) whenever the maximum grows; out = acc / S.
//
// An f16 page is read the way the reference CPU engine reads an f16 KV cache, so that strata's
// logits agree with it to ~1e-6 rather than ~1e-2: the query is rounded to f16 for the q·k dot,
// and acc is rounded to f16 after every update. Should acc approach the f16 range (very long
// contexts), rounding stops and acc continues in f32 rather than overflowing.
void attend_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                 size_t n_ctx, const float* q, float scale, float* out, float* q16) {
  const size_t page_size = pool.shape().page_size;
  const size_t head_dim = pool.shape().head_dim;
  for (size_t d = 0; d < head_dim; ++d) q16[d] = fp16_to_fp32(fp32_to_fp16(q[d]));

  float m = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  bool f16_accumulator = true;
  for (size_t d = 0; d < head_dim; ++d) out[d] = 0.0f;

  for (size_t t = 0; t < n_ctx; ++t) {
    const KvHeadView view = pool.head(pages[t / page_size], layer, kv_head);
    const bool f16 = view.precision == KvPrecision::kF16;
    const size_t row = (t % page_size) * head_dim * precision_bytes(view.precision);
    const void* k = static_cast<const unsigned char*>(view.keys) + row;
    const void* v = static_cast<const unsigned char*>(view.values) + row;

    // s = scale * q·k; products of f16 values are exact in f32, and summing them in double makes
    // the dot independent of summation order.
    const float* qv = f16 ? q16 : q;
    double dot = 0.0;
    for (size_t d = 0; d < head_dim; ++d) dot += qv[d] * element(k, d, view.precision);
    const float s = static_cast<float>(dot) * scale;

    // New maximum: rescale what was accumulated so far; otherwise weigh this position.
    float rescale = 1.0f, weight = 1.0f;
    if (s > m) {
      rescale = std::exp(m - s);
      m = s;
    } else {
      weight = std::exp(s - m);
    }
    bool round = f16 && f16_accumulator;
    for (size_t d = 0; d < head_dim; ++d) {
      float a = out[d];
      if (rescale != 1.0f) a = round ? fp16_to_fp32(fp32_to_fp16(a * rescale)) : a * rescale;
      a = std::fma(element(v, d, view.precision), weight, a);
      if (round && std::abs(a) > kF16Limit) round = f16_accumulator = false;
      out[d] = round ? fp16_to_fp32(fp32_to_fp16(a)) : a;
    }
    sum = std::fma(sum, rescale, weight);
  }
  const float inv = 1.0f / sum;
  for (size_t d = 0; d < head_dim; ++d) out[d] *= inv;
}

}  // namespace strata::kv
