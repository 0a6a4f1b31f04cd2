// The root key of the prefix cache's page chains (kv/page_key.h): everything besides the tokens
// that the cached keys and values depend on. Two engines share cached pages (in memory never, on
// disk through --kv-cache-dir) only when their roots agree.
#pragma once

#include "gguf/gguf.h"
#include "kv/kv_page.h"
#include "kv/page_key.h"
#include "strata/engine.h"

namespace strata::engine {

// A digest of the model file: its header (metadata and tensor table, bytes as stored) and a
// sample of every tensor's data (its first and last 4 KiB), so that a fine-tune with the same
// metadata differs too, without reading gigabytes at start-up. Call before the model rearranges
// its weights in place.
kv::PageKey model_fingerprint(const gguf::File& file);

// The root: the model's fingerprint, the KV layout and precisions, and the numerics that shape
// the values (attention mode, sparse prefill, page summaries, SIMD targets, weight layout).
kv::PageKey prefix_cache_root(const kv::PageKey& model, const EngineOptions& options,
                              const kv::KvShape& shape);

}  // namespace strata::engine
