#include "engine/kv_policy.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "base/log.h"
#include "kernels/kv_format.h"

namespace strata {
namespace {

constexpr KvPrecision kAllPrecisions[] = {
    KvPrecision::kF32,  KvPrecision::kF16, KvPrecision::kBF16, KvPrecision::kQ8_0,
    KvPrecision::kQ4_0, KvPrecision::kR4,  KvPrecision::kR3,   KvPrecision::kR8};

Error tier_error(std::string_view spec, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    "bad KV tier spec '" + std::string(spec) + "': " + why +
                        "; write it as sink=N,hot=N,warm=TYPE:N,cold=TYPE (for example "
                        "sink=32,hot=256,warm=q8_0:1024,cold=r3) or 'default'");
}

Result<int> parse_count(std::string_view spec, std::string_view text) {
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0) {
    return tier_error(spec, "'" + std::string(text) + "' is not a token count");
  }
  return n;
}

// A tier's type: a precision name, or the spec's error naming it.
Result<KvPrecision> parse_tier_type(std::string_view spec, std::string_view name) {
  Result<KvPrecision> p = parse_kv_precision(name);
  if (!p.ok()) return tier_error(spec, p.error().message);
  return p;
}

}  // namespace

const char* kv_precision_name(KvPrecision p) { return kernels::kv_format_name(engine::to_kv(p)); }

Result<KvPrecision> parse_kv_precision(std::string_view name) {
  for (KvPrecision p : kAllPrecisions) {
    if (name == kv_precision_name(p)) return p;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown KV cache type '" + std::string(name) +
                        "': use f16, bf16, f32, q8_0, q4_0, r8, r4 or r3");
}

KvTierPolicy default_kv_tiers() {
  KvTierPolicy t;
  t.sink = 32;
  t.hot = 256;
  t.warm = KvPrecision::kR4;
  t.warm_tokens = 4096;
  t.cold = KvPrecision::kR3;
  return t;
}

Result<KvTierPolicy> parse_kv_tiers(std::string_view spec) {
  if (spec == "default") return default_kv_tiers();
  if (spec == "none") return KvTierPolicy{};
  KvTierPolicy t;
  bool seen_warm_count = false;
  std::string seen;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return tier_error(spec, "'" + std::string(item) + "' has no '='");
    const std::string key(item.substr(0, eq));
    const std::string_view value = item.substr(eq + 1);
    if (seen.find("," + key + ",") != std::string::npos) {
      return tier_error(spec, "'" + key + "' is given twice");
    }
    seen += "," + key + ",";
    if (key == "sink" || key == "hot") {
      STRATA_ASSIGN_OR_RETURN(const int n, parse_count(spec, value));
      (key == "sink" ? t.sink : t.hot) = n;
    } else if (key == "warm") {
      const size_t colon = value.find(':');
      STRATA_ASSIGN_OR_RETURN(t.warm, parse_tier_type(spec, value.substr(0, colon)));
      if (colon != std::string_view::npos) {
        STRATA_ASSIGN_OR_RETURN(t.warm_tokens, parse_count(spec, value.substr(colon + 1)));
        seen_warm_count = true;
      }
    } else if (key == "cold") {
      STRATA_ASSIGN_OR_RETURN(t.cold, parse_tier_type(spec, value));
    } else {
      return tier_error(spec, "unknown tier '" + key + "' (sink, hot, warm, cold)");
    }
  }
  if (!t.enabled()) return tier_error(spec, "no warm or cold tier is named");
  if (t.warm && t.cold && !seen_warm_count) {
    return tier_error(spec, "a warm tier before a cold one needs its length (warm=TYPE:N)");
  }
  return t;
}

std::string kv_tiers_string(const KvTierPolicy& t) {
  if (!t.enabled()) return "none";
  std::string s = "sink=" + std::to_string(t.sink) + ",hot=" + std::to_string(t.hot);
  if (t.warm) {
    s += ",warm=" + std::string(kv_precision_name(*t.warm));
    if (t.cold) s += ":" + std::to_string(t.warm_tokens);
  }
  if (t.cold) s += ",cold=" + std::string(kv_precision_name(*t.cold));
  return s;
}

namespace engine {
namespace {

size_t pages_for(size_t tokens, size_t page_size) { return (tokens + page_size - 1) / page_size; }

// The precision itself, or f16 with a warning when the head size does not suit it.
kv::KvPrecision usable(KvPrecision p, const kv::KvShape& shape) {
  const kv::KvPrecision k = to_kv(p);
  if (kernels::kv_format_supports(k, shape.head_dim, shape.page_size)) return k;
  log_warn(std::string("KV type ") + kv_precision_name(p) + " cannot hold heads of " +
           std::to_string(shape.head_dim) + " in pages of " + std::to_string(shape.page_size) +
           " (q8_0/q4_0 need heads of a multiple of 32; r8 a power of two from 32; r4/r3 too, and "
           "pages of a multiple of 32): using f16 for it");
  return kv::KvPrecision::kF16;
}

void add_arena(std::vector<kv::ArenaSpec>& arenas, kv::KvPrecision p, size_t pages) {
  for (kv::ArenaSpec& a : arenas) {
    if (a.precision == p) {
      a.n_pages += pages;
      return;
    }
  }
  arenas.push_back({p, pages});
}

}  // namespace

kv::KvPrecision to_kv(KvPrecision p) {
  switch (p) {
    case KvPrecision::kF32:
      return kv::KvPrecision::kF32;
    case KvPrecision::kF16:
      return kv::KvPrecision::kF16;
    case KvPrecision::kBF16:
      return kv::KvPrecision::kBF16;
    case KvPrecision::kQ8_0:
      return kv::KvPrecision::kQ8_0;
    case KvPrecision::kQ4_0:
      return kv::KvPrecision::kQ4_0;
    case KvPrecision::kR4:
      return kv::KvPrecision::kR4;
    case KvPrecision::kR3:
      return kv::KvPrecision::kR3;
    case KvPrecision::kR8:
      return kv::KvPrecision::kR8;
  }
  return kv::KvPrecision::kF16;
}

namespace {

// The pages of each precision, before the window slots.
Result<KvPlan> plan_pages(const KvPlanInput& in) {
  const KvCachePolicy& policy = in.policy;
  const size_t page = in.shape.page_size;
  const size_t all_pages = pages_for(in.context, page);
  KvTierPolicy tiers = policy.tiers;
  if (tiers.enabled() && in.shape.head_dim % kernels::kBlockDimMultiple != 0) {
    log_warn("KV tiers need heads of a multiple of " + std::to_string(kernels::kBlockDimMultiple) +
             " elements, this model's have " + std::to_string(in.shape.head_dim) +
             ": every page stays in --kv-type");
    tiers = KvTierPolicy{};
  }
  kv::KvPrecision write = usable(policy.hot, in.shape);
  if (!kernels::kv_format_row_writable(write, kernels::KvRole::kKeys)) {
    if (tiers.enabled()) {
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("--kv-type ") + kv_precision_name(policy.hot) +
                            " cannot be the hot tier of --kv-tiers (its keys are encoded a "
                            "whole page at a time): use f16, bf16, f32, q8_0 or q4_0 with tiers");
    }
    // One rotated precision: pages are written in f16 and re-encoded once full.
    tiers.cold = policy.hot;
    write = kv::KvPrecision::kF16;
  }
  KvPlan plan;
  if (!tiers.enabled()) {
    const size_t pages =
        policy.pages > 0 ? static_cast<size_t>(policy.pages) : all_pages * in.sequences;
    plan.arenas.push_back({write, pages});
    return plan;
  }
  if (policy.pages > 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a KV page count cannot be combined with --kv-tiers (the tiers size "
                      "each precision's pages from the context)");
  }
  kv::KvTiers& t = plan.tiers;
  t.sink_tokens = static_cast<size_t>(tiers.sink);
  t.hot_tokens = static_cast<size_t>(tiers.hot);
  t.warm_tokens = static_cast<size_t>(tiers.warm_tokens);
  if (tiers.warm) t.warm = usable(*tiers.warm, in.shape);
  if (tiers.cold) t.cold = usable(*tiers.cold, in.shape);
  // Per sequence, the most pages each tier can hold at once: a page leaves the hot tier at the
  // first allocation after it ages out, so the hot tier also holds one step's new pages and the
  // page being filled.
  const size_t in_flight = pages_for(in.batch_tokens, page) + 2;
  const size_t hot = std::min(
      all_pages, pages_for(t.sink_tokens, page) + pages_for(t.hot_tokens, page) + in_flight);
  size_t warm = 0, cold = 0;
  if (t.warm)
    warm = t.cold ? std::min(all_pages, pages_for(t.warm_tokens, page) + in_flight) : all_pages;
  if (t.cold) {
    const size_t younger = t.hot_tokens + (t.warm ? t.warm_tokens : 0);
    cold =
        in.context > younger ? std::min(all_pages, pages_for(in.context - younger, page) + 1) : 0;
  }
  add_arena(plan.arenas, write, hot * in.sequences);
  if (t.warm && warm > 0) add_arena(plan.arenas, *t.warm, warm * in.sequences);
  if (t.cold && cold > 0) add_arena(plan.arenas, *t.cold, cold * in.sequences);
  return plan;
}

}  // namespace

Result<KvPlan> plan_kv_cache(const KvPlanInput& in) {
  STRATA_ASSIGN_OR_RETURN(KvPlan plan, plan_pages(in));
  // The arenas run hot to cold: the last holds the oldest pages.
  plan.arenas.back().offload_dir = in.policy.offload_dir;
  if (in.shape.n_window_layers() == 0) return plan;
  // Sliding-window layers: per sequence, the pages whose window parts a step can need at once
  // are the window's, the step's new ones and the one being filled (KvCache::release_windows
  // runs before each step's writes). Any arena may hold them: tiers can age a page inside the
  // window.
  const size_t page = in.shape.page_size;
  const size_t window_pages =
      std::min(pages_for(in.context, page),
               pages_for(in.shape.window, page) + pages_for(in.batch_tokens, page) + 2);
  for (kv::ArenaSpec& a : plan.arenas) a.window_slots = window_pages * in.sequences;
  return plan;
}

}  // namespace engine
}  // namespace strata
