// Upper bounds on attention scores from a KV page's key summary, the score query-aware sparse
// attention ranks pages by (Quest, Tang et al. 2024, arXiv 2406.10774). For keys k_t whose
// channels lie in [lo_d, hi_d],
//   q·k_t = sum_d q_d k_td <= sum_d max(q_d lo_d, q_d hi_d),
// since each term q_d k_td is linear in k_td and so largest at an end of its interval. A group of
// query heads that read one KV head (grouped-query attention) chooses pages together: a page's
// bound is the largest of the group's.
//
// Summaries are bfloat16 (kv/key_summary.h rounds lo down and hi up, so the bound stays a bound):
// [2][head_dim], the lows then the highs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::kernels {

// For i < n: out[i] = max_g sum_d max(q[g][d] lo_d, q[g][d] hi_d) over the summary at
// summaries + index[i] * stride; q is [group][head_dim], head_dim a multiple of 8.
void key_score_bounds(const float* q, size_t group, size_t head_dim, const uint16_t* summaries,
                      size_t stride, const uint32_t* index, size_t n, float* out);

}  // namespace strata::kernels
