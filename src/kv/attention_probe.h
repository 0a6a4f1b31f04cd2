// A read-only look at every attention call: kv::attend hands a probe the queries of each layer
// before it computes, so diagnostics (kv/attention_profile.h: where the attention mass goes and
// how much of it sparse attention's selection keeps) see exactly what the model attends with,
// without a second forward pass and without changing its result.
#pragma once

#include <cstddef>
#include <span>

namespace strata::kv {

class KvCache;
struct QueryPos;

class AttentionProbe {
 public:
  virtual ~AttentionProbe() = default;
  // q is [queries][n_heads][head_dim] in the cache's space (rotated where the cache rotates);
  // scores are scale * q·k. Called on the thread that called attend, before any output.
  virtual void observe(const KvCache& cache, size_t layer, std::span<const QueryPos> queries,
                       size_t n_heads, float scale, const float* q) = 0;
};

}  // namespace strata::kv
