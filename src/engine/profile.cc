// Engine::profile_attention: the prompt evaluated with an AttentionProfiler watching kv::attend.
#include <algorithm>

#include "engine/engine_impl.h"
#include "kv/attention_profile.h"

namespace strata {
namespace {

// Shows `probe` every attention call while it lives.
class ProbeScope {
 public:
  ProbeScope(kv::KvCache& cache, kv::AttentionProbe& probe) : cache_(cache) {
    cache_.set_probe(&probe);
  }
  ~ProbeScope() { cache_.set_probe(nullptr); }
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;

 private:
  kv::KvCache& cache_;
};

}  // namespace

Result<AttentionProfile> Engine::profile_attention(std::span<const TokenId> tokens,
                                                   size_t queries) {
  Impl& im = *impl_;
  kv::KvCache& cache = im.kv->cache();
  if (!im.options.kv.sparse.enabled) {
    return make_error(ErrorCode::kInvalidArgument,
                      "profiling attention needs an engine created with sparse attention "
                      "enabled (--attn sparse), whose pages keep the key summaries selection "
                      "reads");
  }
  if (cache.pool().key_summaries().empty()) {
    return make_error(ErrorCode::kUnsupported,
                      "sparse attention cannot take this model's head size of " +
                          std::to_string(cache.shape().head_dim) + " (it needs a multiple of 8)");
  }
  if (queries == 0) {
    return make_error(ErrorCode::kInvalidArgument, "profile at least one position");
  }
  const size_t n_heads = im.summary.n_heads;
  const size_t first = tokens.size() > queries ? tokens.size() - queries : 0;
  kv::AttentionProfiler profiler(cache.shape(), n_heads, first, cache.sparse());
  {
    const ProbeScope scope(cache, profiler);
    STRATA_RETURN_IF_ERROR(evaluate(tokens));
  }
  AttentionProfile out;
  out.positions = tokens.size();
  for (size_t layer = 0; layer < cache.shape().n_layers; ++layer) {
    for (size_t h = 0; h < n_heads; ++h) {
      const kv::HeadAttentionStats& s = profiler.head(layer, h);
      const double n = static_cast<double>(std::max<size_t>(s.queries, 1));
      AttentionHeadProfile p;
      p.layer = layer;
      p.head = h;
      p.dense_layer = !cache.sparse().sparse_layer(layer);
      p.queries = s.queries;
      p.entropy = s.entropy / n;
      p.sinks = s.sinks / n;
      p.window = s.window / n;
      p.selected = s.selected / n;
      p.rest = s.rest / n;
      p.recalls = s.recalls;
      p.best_recalls = s.best_recalls;
      out.heads.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace strata
