// The pushdown automaton the matcher runs, over the byte-level Grammar.
//
// A parse stack is a chain of nodes (position, parent): the top node stands at a kBytes element
// (the byte the parse expects next); every node below holds the position to return to after the
// rule above it ends. Nodes are hash-consed in a StackPool, so equal stacks are the same node id
// and a set of stacks (an ambiguous parse) deduplicates by id, as in a graph-structured stack.
// A reference that is the last symbol of its alternative pushes no return node (the callee
// returns straight to the caller's caller), so right recursion — every x* — keeps the stack flat.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/interned_ids.h"

namespace strata::grammar {

inline constexpr uint32_t kBottom = UINT32_MAX;  // parent of the outermost node

struct StackNode {
  uint32_t pos;
  uint32_t parent;  // node id or kBottom
};

class StackPool {
 public:
  StackPool();
  uint32_t intern(uint32_t pos, uint32_t parent);
  const StackNode& operator[](uint32_t id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  // Forgets the nodes interned after the pool had `size` nodes (scratch work on top of a
  // matcher's live stacks).
  void truncate(size_t size);
  void clear();

 private:
  void rehash(size_t capacity);
  size_t slot_for(uint32_t pos, uint32_t parent) const;

  std::vector<StackNode> nodes_;
  std::vector<uint32_t> node_slot_;  // per node, its slot in table_
  std::vector<uint32_t> table_;      // node ids, kEmpty where free (linear probing)
  size_t mask_ = 0;
};

// The state between two bytes: the live stacks (their top node ids, unique, and sorted except
// after a remembered step) and whether the whole input so far is a sentence of the grammar (a
// stack was popped empty).
struct StackSet {
  std::vector<uint32_t> tops;
  bool can_end = false;
  bool finished = false;  // an end-of-generation token was accepted
  // In an Advancer that remembers steps: the set's id there (its generation and index), 0 when
  // not known. Not part of the set's value.
  uint64_t remembered = 0;
  bool alive() const { return can_end || !tops.empty(); }
  bool operator==(const StackSet& other) const {
    return tops == other.tops && can_end == other.can_end && finished == other.finished;
  }
};

class Advancer {
 public:
  Advancer(const Grammar& grammar, StackPool* pool) : grammar_(grammar), pool_(pool) {}
  // Stacks at the start of `rule`.
  void start_rule(uint32_t rule, StackSet* out);
  // One stack standing at `pos` (a kBytes element) with nothing below it.
  void start_at(uint32_t pos, StackSet* out);
  // The stacks after `byte`; out must not alias in.
  void advance(const StackSet& in, uint8_t byte, StackSet* out);
  // The stacks after the rule of node `top` ends: its parent's continuation (can_end alone when
  // the parent is the bottom).
  void pop_frame(uint32_t top, StackSet* out);
  // True once a step expanded more than kMaxStepWork (position, parent) pairs and was cut
  // short: grammars ambiguous at every level (repetitions of repetitions nested dozens deep)
  // have exponentially many parse stacks, and such a step's result is incomplete.
  bool overflowed() const { return overflowed_; }
  static constexpr size_t kMaxStepWork = size_t{1} << 16;
  // The union of the byte sets the stacks expect next.
  ByteSet next_bytes(const StackSet& state) const;

  // Remembered steps, for walks that reach the same stacks again and again (compiling a grammar
  // against a vocabulary: inside a string body every character leaves the same stacks). Two
  // levels: the stacks after a top node takes a byte depend on the node alone, not on which
  // byte of its set was taken (the closure of pos + 1 over its parent), so each node's closure
  // is expanded once; and a whole set's step on a byte is a transition between remembered sets,
  // as in a DFA built on the fly. Node ids must keep their meaning while steps are remembered:
  // call forget_steps() whenever the pool is cleared or truncated. The tops of a remembered
  // step are unique but not sorted.
  void remember_steps() { remember_ = true; }
  void forget_steps();
  void stop_remembering() {
    forget_steps();
    remember_ = false;
  }

 private:
  // A node's step (kept per node id, in step_tops_) or a remembered set (in set_tops_): where
  // its tops lie.
  struct Step {
    uint32_t begin = 0, end = 0;
    bool can_end = false;
    bool known = false;
  };
  // `tops` appended to `arena`, and where they lie there.
  static Step keep(std::span<const uint32_t> tops, bool can_end, std::vector<uint32_t>* arena);
  const Step& step_of(uint32_t top);
  void advance_remembered(const StackSet& in, uint8_t byte, StackSet* out);
  // The union of the steps of in's tops that take `byte`.
  void union_of_steps(const StackSet& in, uint8_t byte, StackSet* out);
  // The remembered id of `set`, interned on first sight.
  uint32_t set_id(const StackSet& set);
  void forget_sets();
  void closure(uint32_t pos, uint32_t parent, StackSet* out);
  bool mark_visited(uint64_t key);
  void new_visit_generation();

  const Grammar& grammar_;
  StackPool* pool_;
  std::vector<std::pair<uint32_t, uint32_t>> work_;
  // (pos, parent) pairs expanded in the current step: open addressing, cleared by generation.
  std::vector<uint64_t> visited_keys_;
  std::vector<uint32_t> visited_gen_;
  uint32_t generation_ = 0;
  size_t n_visited_ = 0;
  bool overflowed_ = false;
  bool remember_ = false;
  std::vector<Step> steps_;  // per node id
  std::vector<uint32_t> step_tops_;
  std::vector<uint32_t> union_seen_;  // per node id: the stamp of the last step that took it
  uint32_t union_stamp_ = 0;
  // Remembered sets: their tops in set_tops_, interned by content (tops, then can_end), and
  // the transitions between them (set id << 8 | byte -> set id). StackSet::remembered holds
  // sets_generation_ << 32 | (id + 1), so a set from before forget_sets() reads as unknown.
  std::vector<Step> sets_;
  std::vector<uint32_t> set_tops_;
  WordIds set_ids_;
  std::vector<uint32_t> set_key_;  // set_id()'s buffer
  KeyIds transitions_;
  uint32_t sets_generation_ = 1;
  StackSet scratch_;
};

}  // namespace strata::grammar
