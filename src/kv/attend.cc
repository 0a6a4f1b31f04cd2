#include "kv/attend.h"

#include <vector>

#include "kv/paged_attention.h"

namespace strata::kv {
namespace {
// Multiply-adds of q·k and p·v below which attention is not worth spreading over threads.
constexpr size_t kMinParallelAttentionWork = size_t{1} << 15;
}  // namespace

void attend(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
            float scale, const float* q, float* out, ThreadPool& pool) {
  const size_t head_dim = cache.shape().head_dim;
  const size_t group = n_heads / cache.shape().n_kv_heads;
  // A task is `heads` adjacent query heads of one KV head (grouped-query attention): they read
  // each key and value row once, and their accumulator chains overlap. Whole groups, unless that
  // leaves fewer than two tasks per thread; any split gives the same bits.
  size_t heads = group;
  while (heads % 2 == 0 && queries.size() * n_heads / heads < 2 * pool.num_threads()) heads /= 2;
  const size_t tasks_per_entry = n_heads / heads;
  std::vector<float> scratch(pool.num_threads() * heads * head_dim);
  auto attend_task = [&](size_t task, size_t thread) {
    const size_t t = task / tasks_per_entry, h = task % tasks_per_entry * heads;
    const QueryPos& e = queries[t];
    attend_kv_head(cache.pool(), cache.page_table(e.seq), layer, h / group, e.pos + 1,
                   q + (t * n_heads + h) * head_dim, heads, scale,
                   out + (t * n_heads + h) * head_dim, scratch.data() + thread * heads * head_dim);
  };
  // Handing work to other threads costs microseconds (more when cores are shared), so a small
  // attention (short contexts, small heads) runs on the calling thread.
  size_t work = 0;
  for (const QueryPos& e : queries) work += (e.pos + 1) * n_heads * head_dim;
  const size_t tasks = queries.size() * tasks_per_entry;
  if (work < kMinParallelAttentionWork) {
    for (size_t task = 0; task < tasks; ++task) attend_task(task, 0);
  } else {
    pool.parallel_for(tasks, attend_task);
  }
}

}  // namespace strata::kv
