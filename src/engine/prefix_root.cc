#include "engine/prefix_root.h"

#include <algorithm>
#include <string>

#include "platform/cpu_features.h"

namespace strata::engine {

kv::PageKey model_fingerprint(const gguf::File& file) {
  constexpr uint64_t kSample = 4096;
  kv::Sha256 h;
  const MappedFile& image = file.image();
  h.update(image.data(), std::min<uint64_t>(file.data_offset(), image.size()));
  for (const gguf::TensorInfo& t : file.tensors()) {
    const uint64_t head = std::min(kSample, t.n_bytes);
    h.update(t.data, head);
    if (t.n_bytes > head) {
      const uint64_t tail = std::min(kSample, t.n_bytes - head);
      h.update(t.data + t.n_bytes - tail, tail);
    }
  }
  kv::PageKey key;
  const std::array<uint8_t, 32> digest = h.finish();
  std::copy_n(digest.begin(), key.bytes.size(), key.bytes.begin());
  return key;
}

kv::PageKey prefix_cache_root(const kv::PageKey& model, const EngineOptions& o,
                              const kv::KvShape& shape) {
  const KvCachePolicy& kv = o.kv;
  std::string what = "strata prefix cache 1";
  what += "\npage " + std::to_string(shape.page_size) + " layers " +
          std::to_string(shape.n_layers) + " kv_heads " + std::to_string(shape.n_kv_heads) +
          " head_dim " + std::to_string(shape.head_dim);
  what += std::string("\nkv ") + kv_precision_name(kv.hot) + " tiers " + kv_tiers_string(kv.tiers);
  if (!shape.precise_layers.empty()) {  // the low-bit pages' layout (kv_page.h)
    what += "\nprecise layers";
    for (size_t l = 0; l < shape.n_layers; ++l) {
      if (shape.precise_layer(l)) what += " " + std::to_string(l);
    }
  }
  what += std::string("\nattention ") + (kv.attention == AttentionMode::kFast ? "fast" : "exact");
  what += std::string("\nsummaries ") + (kv.sparse.enabled ? "yes" : "no");
  if (kv.sparse.enabled && kv.sparse.prefill) {
    what += "\nsparse prefill " + std::to_string(kv.sparse.budget) + " " +
            std::to_string(kv.sparse.window) + " " + std::to_string(kv.sparse.sinks) + " " +
            std::to_string(kv.sparse.dense_layers);
  }
  what += "\nsimd " + simd_targets_description();
  what += std::string("\ninterleave ") + (o.interleave_weights && !o.use_mmap ? "yes" : "no");
  return kv::salted_key(model, what);
}

}  // namespace strata::engine
