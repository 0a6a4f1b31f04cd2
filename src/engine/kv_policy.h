// From the public KV policy (--kv-type, --kv-tiers) to the KV manager's terms: the arenas of
// the pool, one per precision and sized for the policy, and the tiers by age.
#pragma once

#include <cstddef>
#include <vector>

#include "kv/kv_page.h"
#include "kv/kv_pool.h"
#include "kv/kv_tiers.h"
#include "strata/engine.h"

namespace strata::engine {

struct KvPlan {
  std::vector<kv::ArenaSpec> arenas;  // the first is the write precision
  kv::KvTiers tiers;
};

struct KvPlanInput {
  KvCachePolicy policy;
  kv::KvShape shape;
  size_t context = 0;       // positions per sequence
  size_t sequences = 1;     // sequences at once
  size_t batch_tokens = 0;  // positions one step may write per sequence at most
};

// The arenas and tiers for a policy. A precision that cannot take the model's head size falls
// back to f16 with a warning (never wrong numbers); a policy that cannot work (a rotated write
// precision with tiers, tiers with an explicit page count) is kInvalidArgument.
Result<KvPlan> plan_kv_cache(const KvPlanInput& in);

kv::KvPrecision to_kv(KvPrecision p);

}  // namespace strata::engine
