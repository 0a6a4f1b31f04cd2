#include "kv/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "base/fp16.h"

namespace strata::kv {
namespace {

// Largest magnitude an f16 accumulator may reach before it would round to infinity.
constexpr float kF16Limit = 60000.0f;

inline float round_to_f16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

// The running state of one online softmax: maximum m, sum of exp(s - m), and acc (in `out`).
struct OnlineSoftmax {
  float m = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  bool f16_accumulator = true;  // cleared once acc nears the f16 range
};

// Folds positions [0, n) of one page into the state. Row elements are read as `Element` (float
// or uint16_t f16 bits); f16 pages use the f16 query and round acc to f16.
template <typename Element>
void attend_page(const Element* keys, const Element* values, size_t n, size_t head_dim,
                 const float* q, float scale, OnlineSoftmax& st, float* out) {
  constexpr bool kF16 = std::is_same_v<Element, uint16_t>;
  auto load = [](Element e) {
    if constexpr (kF16) {
      return fp16_to_fp32(e);
    } else {
      return e;
    }
  };
  for (size_t t = 0; t < n; ++t) {
    const Element* k = keys + t * head_dim;
    const Element* v = values + t * head_dim;
    // s = scale * q·k; products of f16 values are exact in f32, and summing them in double makes
    // the dot independent of summation order.
    double dot = 0.0;
    for (size_t d = 0; d < head_dim; ++d) dot += q[d] * load(k[d]);
    const float s = static_cast<float>(dot) * scale;

    // New maximum: rescale what was accumulated so far; otherwise weigh this position.
    float rescale = 1.0f, weight = 1.0f;
    if (s > st.m) {
      rescale = std::exp(st.m - s);
      st.m = s;
    } else {
      weight = std::exp(s - st.m);
    }
    bool round = kF16 && st.f16_accumulator;
    for (size_t d = 0; d < head_dim; ++d) {
      float a = out[d];
      if (rescale != 1.0f) a = round ? round_to_f16(a * rescale) : a * rescale;
      a += load(v[d]) * weight;
      if (round && std::abs(a) > kF16Limit) round = st.f16_accumulator = false;
      out[d] = round ? round_to_f16(a) : a;
    }
    st.sum = std::fma(st.sum, rescale, weight);
  }
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
void attend_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                 size_t n_ctx, const float* q, float scale, float* out, float* q16) {
  const size_t page_size = pool.shape().page_size;
  const size_t head_dim = pool.shape().head_dim;
  for (size_t d = 0; d < head_dim; ++d) q16[d] = round_to_f16(q[d]);
  for (size_t d = 0; d < head_dim; ++d) out[d] = 0.0f;

  OnlineSoftmax state;
  for (size_t start = 0, p = 0; start < n_ctx; start += page_size, ++p) {
    const KvHeadView view = pool.head(pages[p], layer, kv_head);
    const size_t n = std::min(page_size, n_ctx - start);
    if (view.precision == KvPrecision::kF16) {
      attend_page(static_cast<const uint16_t*>(view.keys),
                  static_cast<const uint16_t*>(view.values), n, head_dim, q16, scale, state, out);
    } else {
      attend_page(static_cast<const float*>(view.keys), static_cast<const float*>(view.values), n,
                  head_dim, q, scale, state, out);
    }
  }
  const float inv = 1.0f / state.sum;
  for (size_t d = 0; d < head_dim; ++d) out[d] *= inv;
}

}  // namespace strata::kv
