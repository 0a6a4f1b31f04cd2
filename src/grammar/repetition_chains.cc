#include "grammar/repetition_chains.h"

#include "grammar/interned_ids.h"

namespace strata::grammar {
namespace {

constexpr uint32_t kTailCall = UINT32_MAX - 1;  // a word no rule id reaches
constexpr uint32_t kUnknown = UINT32_MAX - 1;   // levels_below_ not computed yet
constexpr uint32_t kOnPath = UINT32_MAX - 2;    // being computed (a cycle when met again)

}  // namespace

RepetitionChains::RepetitionChains(const Grammar& g, std::span<const uint32_t> set_ids)
    : shape_(g.rules().size(), kNone),
      below_(g.rules().size(), kNone),
      levels_below_(g.rules().size(), 0) {
  WordIds shapes;
  std::vector<uint32_t> words;
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    words.clear();
    uint32_t below = kNone;
    bool level = true, has_empty = false, all_tail = true;
    for (uint32_t alt : g.rules()[r].alternatives) {
      uint32_t pos = alt;
      for (; g.element(pos).kind != ElementKind::kEnd; ++pos) {
        const Element& e = g.element(pos);
        words.push_back(static_cast<uint32_t>(e.kind));
        const bool tail = e.kind == ElementKind::kRule &&
                          g.element(pos + 1).kind == ElementKind::kEnd && pos > alt;
        if (!tail) {
          words.push_back(e.kind == ElementKind::kBytes ? set_ids[e.value] : e.value);
          continue;
        }
        words.push_back(kTailCall);
        // What precedes the tail call takes a byte at least: min_rest counts it.
        const uint32_t before = g.min_rest(alt) - g.min_rest(pos);
        level = level && (below == kNone || below == e.value) && before >= 1 &&
                g.min_rest(alt) != Grammar::kUnbounded;
        below = e.value;
      }
      words.push_back(static_cast<uint32_t>(ElementKind::kEnd));
      const bool ends_with_tail = pos > alt + 1 && g.element(pos - 1).kind == ElementKind::kRule;
      has_empty = has_empty || pos == alt;
      all_tail = all_tail && ends_with_tail;
    }
    if (!level || below == kNone || (!has_empty && !all_tail)) continue;
    uint32_t id = shapes.find(words);
    if (id == kNoId) {
      id = static_cast<uint32_t>(shapes.size());
      shapes.add(words, id);
    }
    shape_[r] = id;
    below_[r] = below;
    levels_below_[r] = kUnknown;
  }
  // Levels below, following the tail calls without recursion (chains are thousands long).
  std::vector<uint32_t> path;
  for (uint32_t r = 0; r < g.rules().size(); ++r) {
    if (levels_below_[r] != kUnknown) continue;
    path.clear();
    uint32_t at = r;
    uint32_t count = 0;  // levels below the last rule on the path
    while (true) {
      levels_below_[at] = kOnPath;
      path.push_back(at);
      const uint32_t next = below_[at];
      if (shape_[next] != shape_[at]) break;
      if (levels_below_[next] == kOnPath) {
        count = kEndless;
        break;
      }
      if (levels_below_[next] != kUnknown) {
        count = levels_below_[next] == kEndless ? kEndless : levels_below_[next] + 1;
        break;
      }
      at = next;
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      levels_below_[*it] = count;
      if (count != kEndless) ++count;
    }
  }
}

}  // namespace strata::grammar
