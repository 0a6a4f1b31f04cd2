#include "kv/window_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention.h"
#include "kernels/kv_format.h"
#include "kernels/ops.h"

namespace strata::kv {

void attend_window(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
                   float scale, const ScoreOptions& scores, const float* q, float* out,
                   ThreadPool& pool) {
  const KvShape& shape = cache.shape();
  const size_t head_dim = shape.head_dim, page_size = shape.page_size;
  const size_t group = n_heads / shape.n_kv_heads;
  // Per thread: one page's keys and values of a KV head in f32, and the group's softmax states.
  const size_t floats = 2 * page_size * head_dim;
  std::vector<float> scratch(pool.num_threads() * floats);
  std::vector<kernels::OnlineSoftmax> states(pool.num_threads() * group);
  auto task = [&](size_t i, size_t thread) {
    const size_t t = i / shape.n_kv_heads, kv_head = i % shape.n_kv_heads;
    const QueryPos& e = queries[t];
    const size_t end = size_t{e.pos} + 1;  // positions [first, end) are read
    const size_t first = scores.window != 0 && end > scores.window ? end - scores.window : 0;
    const float* q_group = q + (t * n_heads + kv_head * group) * head_dim;
    float* out_group = out + (t * n_heads + kv_head * group) * head_dim;
    kernels::OnlineSoftmax* st = states.data() + thread * group;
    std::fill_n(st, group, kernels::OnlineSoftmax{});
    std::fill_n(out_group, group * head_dim, 0.0f);
    float* keys = scratch.data() + thread * floats;
    float* values = keys + page_size * head_dim;
    const std::span<const PageId> pages = cache.page_table(e.seq);
    for (size_t p = first / page_size; p * page_size < end; ++p) {
      const size_t start = p * page_size, n = std::min(page_size, end - start);
      const KvHeadView view = cache.pool().head(pages[p], layer, kv_head);
      kernels::kv_decode_block(view.precision, kernels::KvRole::kKeys, view.keys, n, page_size,
                               head_dim, keys);
      kernels::kv_decode_block(view.precision, kernels::KvRole::kValues, view.values, n, page_size,
                               head_dim, values);
      for (size_t r = std::max(first, start) - start; r < n; ++r) {
        for (size_t g = 0; g < group; ++g) {
          float s = scale * kernels::dot_f32(q_group + g * head_dim, keys + r * head_dim, head_dim);
          if (scores.softcap != 0) s = scores.softcap * std::tanh(s / scores.softcap);
          const kernels::SoftmaxStep step = kernels::online_softmax_step(st[g], s);
          float* acc = out_group + g * head_dim;
          if (step.rescale != 1.0f) {
            for (size_t d = 0; d < head_dim; ++d) acc[d] *= step.rescale;
          }
          kernels::axpy(acc, step.weight, values + r * head_dim, head_dim);
        }
      }
    }
    for (size_t g = 0; g < group; ++g) {
      const float inv = 1.0f / st[g].sum;
      for (size_t d = 0; d < head_dim; ++d) out_group[g * head_dim + d] *= inv;
    }
  };
  const size_t tasks = queries.size() * shape.n_kv_heads;
  if (tasks == 1) {
    task(0, 0);
  } else {
    pool.parallel_for(tasks, task);
  }
}

}  // namespace strata::kv
