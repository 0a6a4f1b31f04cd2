// Tiers by age: which precision each full page of a sequence should have, from where the page
// lies. The attention sinks (the first positions) and a recent window stay as written (hot);
// the positions before the window drop to a warm precision, and older ones to a cold one:
//
//   position:  0 .. sink | ............ cold ............ | ..... warm ..... | .. hot .. | end
//
// A page moves when all of it has aged past a boundary, never back up. The precisions are the
// pool's arenas; the cache re-encodes a page (KvCache::age) when its target changes.
#pragma once

#include <cstddef>
#include <optional>

#include "kv/kv_page.h"

namespace strata::kv {

struct KvTiers {
  size_t sink_tokens = 0;  // the first positions, kept as written
  size_t hot_tokens = 0;   // the last positions, kept as written
  std::optional<KvPrecision> warm;
  size_t warm_tokens = 0;           // positions before the hot window in `warm` (with a cold tier)
  std::optional<KvPrecision> cold;  // everything older

  bool enabled() const { return warm.has_value() || cold.has_value(); }

  // The precision the page of positions [first, first + page_size) should have in a sequence of
  // `length` positions, or nullopt to keep it as written (not full, a sink, or hot).
  std::optional<KvPrecision> target(size_t first, size_t page_size, size_t length) const {
    const size_t end = first + page_size;
    if (!enabled() || end > length || first < sink_tokens) return std::nullopt;
    const size_t age = length - end;  // positions written after the page
    if (age < hot_tokens) return std::nullopt;
    if (warm && (!cold || age < hot_tokens + warm_tokens)) return warm;
    return cold;
  }
};

}  // namespace strata::kv
