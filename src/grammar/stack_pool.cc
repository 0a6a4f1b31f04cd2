#include "grammar/stack_pool.h"

#include <algorithm>

namespace strata::grammar {
namespace {

constexpr uint32_t kEmpty = UINT32_MAX;

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

StackPool::StackPool() { rehash(64); }

size_t StackPool::slot_for(uint32_t pos, uint32_t parent) const {
  return mix(uint64_t{pos} << 32 | parent) & mask_;
}

uint32_t StackPool::intern(uint32_t pos, uint32_t parent) {
  size_t slot = slot_for(pos, parent);
  while (table_[slot] != kEmpty) {
    const StackNode& n = nodes_[table_[slot]];
    if (n.pos == pos && n.parent == parent) return table_[slot];
    slot = (slot + 1) & mask_;
  }
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({pos, parent});
  node_slot_.push_back(static_cast<uint32_t>(slot));
  table_[slot] = id;
  if (nodes_.size() * 2 > table_.size()) rehash(table_.size() * 2);
  return id;
}

// Reinserting in id order leaves the table as if the nodes had been interned into it in that
// order, so truncate() can still undo insertions newest first.
void StackPool::rehash(size_t capacity) {
  table_.assign(capacity, kEmpty);
  mask_ = capacity - 1;
  for (uint32_t id = 0; id < nodes_.size(); ++id) {
    size_t slot = slot_for(nodes_[id].pos, nodes_[id].parent);
    while (table_[slot] != kEmpty) slot = (slot + 1) & mask_;
    table_[slot] = id;
    node_slot_[id] = static_cast<uint32_t>(slot);
  }
}

// Undoing linear-probing insertions newest first restores the table exactly.
void StackPool::truncate(size_t size) {
  while (nodes_.size() > size) {
    table_[node_slot_.back()] = kEmpty;
    node_slot_.pop_back();
    nodes_.pop_back();
  }
}

void StackPool::clear() { truncate(0); }

void Advancer::new_visit_generation() {
  n_visited_ = 0;
  if (++generation_ == 0) {  // wrapped: stale stamps could read as current
    std::fill(visited_gen_.begin(), visited_gen_.end(), 0);
    generation_ = 1;
  }
}

bool Advancer::mark_visited(uint64_t key) {
  if ((n_visited_ + 1) * 2 > visited_keys_.size()) {
    const size_t capacity = std::max<size_t>(64, visited_keys_.size() * 2);
    std::vector<uint64_t> old_keys;
    std::vector<uint32_t> old_gen;
    old_keys.swap(visited_keys_);
    old_gen.swap(visited_gen_);
    visited_keys_.assign(capacity, 0);
    visited_gen_.assign(capacity, 0);
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_gen[i] != generation_) continue;
      size_t slot = mix(old_keys[i]) & (capacity - 1);
      while (visited_gen_[slot] == generation_) slot = (slot + 1) & (capacity - 1);
      visited_keys_[slot] = old_keys[i];
      visited_gen_[slot] = generation_;
    }
  }
  const size_t mask = visited_keys_.size() - 1;
  size_t slot = mix(key) & mask;
  while (visited_gen_[slot] == generation_) {
    if (visited_keys_[slot] == key) return false;
    slot = (slot + 1) & mask;
  }
  visited_keys_[slot] = key;
  visited_gen_[slot] = generation_;
  ++n_visited_;
  return true;
}

// Expands (pos, parent) until every branch stands at a kBytes element or has popped the
// bottom. Iterative: rules nest as deep as the grammar says.
void Advancer::closure(uint32_t pos, uint32_t parent, StackSet* out) {
  const auto& elements = grammar_.elements();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    auto [p, par] = work_.back();
    work_.pop_back();
    if (!mark_visited(uint64_t{p} << 32 | par)) continue;
    if (n_visited_ > kMaxStepWork) {
      overflowed_ = true;
      work_.clear();
      return;
    }
    const Element& e = elements[p];
    switch (e.kind) {
      case ElementKind::kBytes:
        out->tops.push_back(pool_->intern(p, par));
        break;
      case ElementKind::kEnd:
        if (par == kBottom) {
          out->can_end = true;
        } else {
          const StackNode& up = (*pool_)[par];
          work_.push_back({up.pos, up.parent});
        }
        break;
      case ElementKind::kRule: {
        const uint32_t ret =
            elements[p + 1].kind == ElementKind::kEnd ? par : pool_->intern(p + 1, par);
        for (uint32_t alt : grammar_.rules()[e.value].alternatives) work_.push_back({alt, ret});
        break;
      }
    }
  }
}

static void begin_step(StackSet* out) {
  out->tops.clear();
  out->can_end = false;
  out->remembered = 0;
}

static void finish_step(StackSet* out) {
  std::sort(out->tops.begin(), out->tops.end());
  out->tops.erase(std::unique(out->tops.begin(), out->tops.end()), out->tops.end());
}

void Advancer::start_rule(uint32_t rule, StackSet* out) {
  begin_step(out);
  new_visit_generation();
  for (uint32_t alt : grammar_.rules()[rule].alternatives) closure(alt, kBottom, out);
  finish_step(out);
}

void Advancer::start_at(uint32_t pos, StackSet* out) {
  begin_step(out);
  out->tops.push_back(pool_->intern(pos, kBottom));
}

void Advancer::forget_steps() {
  steps_.clear();
  step_tops_.clear();
  union_seen_.clear();
  forget_sets();
}

void Advancer::forget_sets() {
  sets_.clear();
  set_tops_.clear();
  set_ids_.clear();
  transitions_.clear();
  ++sets_generation_;
}

Advancer::Step Advancer::keep(std::span<const uint32_t> tops, bool can_end,
                              std::vector<uint32_t>* arena) {
  Step kept;
  kept.begin = static_cast<uint32_t>(arena->size());
  arena->insert(arena->end(), tops.begin(), tops.end());
  kept.end = static_cast<uint32_t>(arena->size());
  kept.can_end = can_end;
  kept.known = true;
  return kept;
}

const Advancer::Step& Advancer::step_of(uint32_t top) {
  if (top >= steps_.size()) steps_.resize(std::max<size_t>(top + 1, 2 * steps_.size()));
  if (steps_[top].known) return steps_[top];
  begin_step(&scratch_);
  new_visit_generation();
  const StackNode node = (*pool_)[top];
  closure(node.pos + 1, node.parent, &scratch_);
  finish_step(&scratch_);
  return steps_[top] = keep(scratch_.tops, scratch_.can_end, &step_tops_);
}

// Deduplicated by a stamp per node rather than sorted: an ambiguous parse has thousands of
// tops, and sorting them was a third of a compile.
void Advancer::union_of_steps(const StackSet& in, uint8_t byte, StackSet* out) {
  begin_step(out);
  if (++union_stamp_ == 0) {
    std::fill(union_seen_.begin(), union_seen_.end(), 0);
    union_stamp_ = 1;
  }
  const auto& elements = grammar_.elements();
  for (uint32_t top : in.tops) {
    if (!grammar_.byte_set(elements[(*pool_)[top].pos].value).test(byte)) continue;
    const Step& step = step_of(top);
    if (union_seen_.size() < pool_->size()) union_seen_.resize(2 * pool_->size());
    for (uint32_t i = step.begin; i < step.end; ++i) {
      const uint32_t id = step_tops_[i];
      if (union_seen_[id] == union_stamp_) continue;
      union_seen_[id] = union_stamp_;
      out->tops.push_back(id);
    }
    out->can_end = out->can_end || step.can_end;
  }
  // Each node's step was bounded on its own; their union is bounded here.
  if (out->tops.size() > kMaxStepWork) overflowed_ = true;
}

uint32_t Advancer::set_id(const StackSet& set) {
  if (set.remembered >> 32 == sets_generation_) {
    return static_cast<uint32_t>(set.remembered) - 1;
  }
  set_key_.assign(set.tops.begin(), set.tops.end());
  set_key_.push_back(set.can_end ? 1 : 0);
  uint32_t id = set_ids_.find(set_key_);
  if (id == kNoId) {
    id = static_cast<uint32_t>(sets_.size());
    set_ids_.add(set_key_, id);
    sets_.push_back(keep(set.tops, set.can_end, &set_tops_));
  }
  return id;
}

void Advancer::advance_remembered(const StackSet& in, uint8_t byte, StackSet* out) {
  // Bounds the sets' memory (4 bytes a top); past it they are remembered anew.
  constexpr size_t kMaxRememberedTops = size_t{1} << 24;
  if (set_tops_.size() > kMaxRememberedTops) forget_sets();
  const uint32_t from = set_id(in);
  const uint64_t transition = uint64_t{from} << 8 | byte;
  uint32_t to = transitions_.find(transition);
  if (to != kNoId) {
    const Step& kept = sets_[to];
    out->tops.assign(set_tops_.begin() + kept.begin, set_tops_.begin() + kept.end);
    out->can_end = kept.can_end;
  } else {
    union_of_steps(in, byte, out);
    if (overflowed_) return;
    to = set_id(*out);
    transitions_.add(transition, to);
  }
  out->remembered = uint64_t{sets_generation_} << 32 | (to + 1);
}

void Advancer::advance(const StackSet& in, uint8_t byte, StackSet* out) {
  if (remember_) {
    advance_remembered(in, byte, out);
    return;
  }
  begin_step(out);
  const auto& elements = grammar_.elements();
  new_visit_generation();
  for (uint32_t top : in.tops) {
    const StackNode node = (*pool_)[top];
    if (grammar_.byte_set(elements[node.pos].value).test(byte)) {
      closure(node.pos + 1, node.parent, out);
    }
  }
  finish_step(out);
}

void Advancer::pop_frame(uint32_t top, StackSet* out) {
  begin_step(out);
  new_visit_generation();
  const uint32_t parent = (*pool_)[top].parent;
  if (parent == kBottom) {
    out->can_end = true;
    return;
  }
  const StackNode up = (*pool_)[parent];
  closure(up.pos, up.parent, out);
  finish_step(out);
}

ByteSet Advancer::next_bytes(const StackSet& state) const {
  ByteSet all;
  for (uint32_t top : state.tops) {
    const ByteSet& s = grammar_.byte_set(grammar_.element((*pool_)[top].pos).value);
    for (int w = 0; w < 4; ++w) all.bits[w] |= s.bits[w];
  }
  return all;
}

}  // namespace strata::grammar
