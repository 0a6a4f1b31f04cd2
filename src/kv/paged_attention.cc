#include "kv/paged_attention.h"

#include <algorithm>
#include <cstring>

#include "base/fp16.h"
#include "kernels/ops.h"

namespace strata::kv {
namespace {

float dot_f16(const float* q, const uint16_t* k, size_t n) {
  float sum = 0;
  for (size_t i = 0; i < n; ++i) sum += q[i] * fp16_to_fp32(k[i]);
  return sum;
}

void axpy_f16(float* y, float a, const uint16_t* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

}  // namespace

void attend_head(KvPool& pool, std::span<const PageId> pages, size_t layer, size_t kv_head,
                 size_t n_ctx, const float* q, float scale, float* out, float* scores) {
  const size_t page_size = pool.shape().page_size;
  const size_t head_dim = pool.shape().head_dim;

  // scores[t] = scale * q · K[t]
  for (size_t start = 0, p = 0; start < n_ctx; start += page_size, ++p) {
    KvHeadView view = pool.head(pages[p], layer, kv_head);
    const size_t n = std::min(page_size, n_ctx - start);
    for (size_t i = 0; i < n; ++i) {
      float s =
          view.precision == KvPrecision::kF32
              ? kernels::dot_f32(q, static_cast<const float*>(view.keys) + i * head_dim, head_dim)
              : dot_f16(q, static_cast<const uint16_t*>(view.keys) + i * head_dim, head_dim);
      scores[start + i] = s * scale;
    }
  }
  kernels::softmax(scores, n_ctx);

  // out = sum_t scores[t] * V[t]
  std::memset(out, 0, head_dim * sizeof(float));
  for (size_t start = 0, p = 0; start < n_ctx; start += page_size, ++p) {
    KvHeadView view = pool.head(pages[p], layer, kv_head);
    const size_t n = std::min(page_size, n_ctx - start);
    for (size_t i = 0; i < n; ++i) {
      if (view.precision == KvPrecision::kF32) {
        kernels::axpy(out, scores[start + i], static_cast<const float*>(view.values) + i * head_dim,
                      head_dim);
      } else {
        axpy_f16(out, scores[start + i], static_cast<const uint16_t*>(view.values) + i * head_dim,
                 head_dim);
      }
    }
  }
}

}  // namespace strata::kv
