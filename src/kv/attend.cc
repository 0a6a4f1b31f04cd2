#include "kv/attend.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "kernels/attention_tile.h"
#include "kernels/kv_format.h"
#include "kv/paged_attention.h"
#include "kv/window_attention.h"

namespace strata::kv {
namespace {
// Multiply-adds of q·k and p·v below which attention is not worth spreading over threads.
constexpr size_t kMinParallelAttentionWork = size_t{1} << 15;
// Queries of one sequence per tile in the fast path: each page is read (and converted to f32)
// once per tile, and the tile's last queries compute scores the causal mask then drops for up
// to this many positions; 16 queries with their group of heads keep a tile's queries and
// accumulators (2 * 16 * group * head_dim floats) in L1.
constexpr size_t kTileQueries = 16;
// Rows (queries times their group of heads) up to which a tile runs query by query with the
// block kernel a decode step uses: a tile computes the scores of kernels::kTileAlign rows per
// key whatever it holds, and converts each key and value to f32 for them all. Over 2,048 f16
// positions (strata_kernel_bench AttentionVerify) one query of 2 heads costs 24 us by blocks and
// 72 as a tile; the two cross near 8 rows with AVX-512 and near 12 with AVX2. So a decode step and
// a few verified guesses (speculative decoding) take the blocks, and get a decode step's bits;
// one query always does, whatever its group.
constexpr size_t kMaxRowsQueryByQuery = 8;

// Which queries of a batch choose their pages (kv/page_selection.h): in a layer their
// sequence's policy selects in, generated positions (a decode step, the guesses a step verifies)
// and, with SparsePolicy::prefill, every query.
std::vector<uint8_t> selecting_queries(const KvCache& cache, size_t layer,
                                       std::span<const QueryPos> queries) {
  std::vector<uint8_t> selects(queries.size(), 0);
  if (!cache.selects_in(layer)) return selects;
  for (size_t t = 0; t < queries.size(); ++t) {
    const SparsePolicy& sparse = cache.sparse_for(queries[t].seq);
    selects[t] = sparse.sparse_layer(layer) && (sparse.prefill || queries[t].generated);
  }
  return selects;
}

// The pages one query reads with its KV head's group of heads q: every page (an empty span), or
// the selection when the budget does not cover them all.
std::span<const uint32_t> pages_to_read(const KvCache& cache, size_t layer, const QueryPos& e,
                                        size_t kv_head, const float* q_group, size_t group,
                                        SelectionScratch& scratch) {
  const PageRegions regions =
      page_regions(cache.sparse_for(e.seq), cache.shape().page_size, e.pos + 1);
  if (regions.dense()) return {};
  select_pages(cache.pool(), cache.page_table(e.seq), layer, kv_head, q_group, group, regions,
               scratch);
  return scratch.chosen;
}

// Handing work to other threads costs microseconds (more when cores are shared), so a small
// attention (short contexts, small heads) runs on the calling thread.
template <class Task>
void run_tasks(std::span<const QueryPos> queries, size_t n_heads, size_t head_dim, size_t tasks,
               ThreadPool& pool, Task& task) {
  size_t work = 0;
  for (const QueryPos& e : queries) work += (e.pos + 1) * n_heads * head_dim;
  if (work < kMinParallelAttentionWork) {
    for (size_t i = 0; i < tasks; ++i) task(i, 0);
  } else {
    pool.parallel_for(tasks, task);
  }
}

void attend_exact(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
                  float scale, const float* q, float* out, ThreadPool& pool) {
  const size_t head_dim = cache.shape().head_dim;
  const size_t group = n_heads / cache.shape().n_kv_heads;
  // A task is `heads` adjacent query heads of one KV head (grouped-query attention): they read
  // each key and value row once, and their accumulator chains overlap. Whole groups, unless that
  // leaves a thread without a task; any split gives the same bits. (Splitting down to two tasks
  // per thread read each page twice: the testbed's decode with 2 KV heads on 2 threads took
  // 0.27-0.35 ms a token at depth 1,000 and 0.72-0.81 at 4,000, against 0.23-0.24 and 0.61-0.66
  // with whole groups, AMD EPYC Zen 4.)
  size_t heads = group;
  while (heads % 2 == 0 && queries.size() * n_heads / heads < pool.num_threads()) heads /= 2;
  const size_t tasks_per_entry = n_heads / heads;
  const size_t floats = attend_kv_head_scratch_floats(cache.shape(), heads);
  std::vector<float> scratch(pool.num_threads() * floats);
  const std::vector<uint8_t> selects = selecting_queries(cache, layer, queries);
  std::vector<SelectionScratch> selection(pool.num_threads());
  auto attend_task = [&](size_t task, size_t thread) {
    const size_t t = task / tasks_per_entry, h = task % tasks_per_entry * heads;
    const QueryPos& e = queries[t];
    const size_t kv_head = h / group;
    // The whole group chooses, whichever of its heads this task runs: the same pages for any
    // split of the heads over threads.
    const std::span<const uint32_t> read =
        selects[t] ? pages_to_read(cache, layer, e, kv_head,
                                   q + (t * n_heads + kv_head * group) * head_dim, group,
                                   selection[thread])
                   : std::span<const uint32_t>{};
    attend_kv_head(cache.pool(), cache.page_table(e.seq), layer, kv_head, e.pos + 1,
                   q + (t * n_heads + h) * head_dim, heads, scale,
                   out + (t * n_heads + h) * head_dim, scratch.data() + thread * floats,
                   cache.reference_reads(), read);
  };
  run_tasks(queries, n_heads, head_dim, queries.size() * tasks_per_entry, pool, attend_task);
}

// The fast path: runs of entries of one sequence at ascending positions (a prompt chunk) cut
// into tiles of at most kTileQueries, and a task per tile and KV head with the whole group of
// query heads as the tile's extra rows. A tile of at most kMaxRowsQueryByQuery rows (a decode step,
// a few verified guesses) takes the exact path query by query. The tiles depend on the batch alone,
// never on the thread count, and so do the bits.
void attend_fast(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
                 float scale, const float* q, float* out, ThreadPool& pool) {
  const size_t head_dim = cache.shape().head_dim, n_kv_heads = cache.shape().n_kv_heads;
  const size_t group = n_heads / n_kv_heads, stride = n_heads * head_dim;
  std::vector<size_t> tile_begin;
  for (size_t t = 0; t < queries.size(); ++t) {
    // Equal positions: an encoder's queries, each reading its whole sequence.
    const bool extends = t > 0 && queries[t].seq == queries[t - 1].seq &&
                         queries[t].pos >= queries[t - 1].pos &&
                         t - tile_begin.back() < kTileQueries;
    if (!extends) tile_begin.push_back(t);
  }
  const size_t n_tiles = tile_begin.size();
  // Decode only: the exact path, with its split of the heads.
  if (n_tiles == queries.size()) {
    attend_exact(cache, layer, queries, n_heads, scale, q, out, pool);
    return;
  }
  tile_begin.push_back(queries.size());
  std::vector<uint32_t> last(queries.size());
  for (size_t t = 0; t < queries.size(); ++t) last[t] = queries[t].pos;
  const size_t floats =
      std::max(attend_kv_head_tile_scratch_floats(cache.shape(), kTileQueries * group),
               attend_kv_head_scratch_floats(cache.shape(), group));
  std::vector<float> scratch(pool.num_threads() * floats);
  const std::vector<uint8_t> selects = selecting_queries(cache, layer, queries);
  std::vector<SelectionScratch> selection(pool.num_threads());
  auto tile_task = [&](size_t task, size_t thread) {
    const size_t i = task / n_kv_heads, kv_head = task % n_kv_heads;
    const size_t first = tile_begin[i], count = tile_begin[i + 1] - first;
    const size_t at = first * stride + kv_head * group * head_dim;
    float* work = scratch.data() + thread * floats;
    // A tile reads every page for all its queries: one that selects goes query by query.
    const bool selecting =
        std::any_of(selects.begin() + first, selects.begin() + first + count, std::identity{});
    if (count == 1 || count * group <= kMaxRowsQueryByQuery || selecting) {
      for (size_t t = first; t < first + count; ++t) {
        const size_t qt = t * stride + kv_head * group * head_dim;
        const std::span<const uint32_t> read =
            selects[t]
                ? pages_to_read(cache, layer, queries[t], kv_head, q + qt, group, selection[thread])
                : std::span<const uint32_t>{};
        attend_kv_head(cache.pool(), cache.page_table(queries[t].seq), layer, kv_head,
                       last[t] + size_t{1}, q + qt, group, scale, out + qt, work,
                       cache.reference_reads(), read);
      }
      return;
    }
    attend_kv_head_tile(cache.pool(), cache.page_table(queries[first].seq), layer, kv_head, q + at,
                        count, group, stride, &last[first], scale, out + at, work);
  };
  run_tasks(queries, n_heads, head_dim, n_tiles * n_kv_heads, pool, tile_task);
}

}  // namespace

void attend(KvCache& cache, size_t layer, std::span<const QueryPos> queries, size_t n_heads,
            float scale, const float* q, float* out, ThreadPool& pool, const ScoreOptions& scores) {
  // A rotated cache holds R k and R v (R orthogonal): (R q)·(R k) = q·k, and the output
  // sum_t p_t R v_t = R o is rotated back.
  const size_t head_dim = cache.shape().head_dim, rows = queries.size() * n_heads;
  std::vector<float> rotated_q;
  if (cache.rotated()) {
    rotated_q.assign(q, q + rows * head_dim);
    for (size_t r = 0; r < rows; ++r) kernels::rotate_kv_head(&rotated_q[r * head_dim], head_dim);
    q = rotated_q.data();
  }
  if (cache.probe() != nullptr) cache.probe()->observe(cache, layer, queries, n_heads, scale, q);
  if (!scores.plain()) {
    attend_window(cache, layer, queries, n_heads, scale, scores, q, out, pool);
  } else if (cache.attention_mode() == AttentionMode::kFast) {
    attend_fast(cache, layer, queries, n_heads, scale, q, out, pool);
  } else {
    attend_exact(cache, layer, queries, n_heads, scale, q, out, pool);
  }
  for (size_t r = 0; r < rows && cache.rotated(); ++r) {
    kernels::unrotate_kv_head(out + r * head_dim, head_dim);
  }
}

}  // namespace strata::kv
