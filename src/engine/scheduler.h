// Decides the work of one engine step within a token budget, the shape vLLM's v1 scheduler uses:
// every running sequence's next token first (decode), then chunks of prompts still being
// processed, then newly admitted requests. A long prompt is split into chunks across steps so it
// never stalls the sequences already generating.
//
// The scheduler sees the KV cache only through the KvManager (tokens, never pages). When a
// running sequence cannot get room, the most recently admitted running sequence is preempted
// (vLLM's recompute policy): its pages are freed and it waits at the head of the queue to
// recompute its tokens' keys and values. Only a sequence that cannot fit the pool even alone
// fails.
#pragma once

#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "kv/kv_manager.h"

namespace strata::engine {

struct ScheduledSeq {
  Sequence* seq;
  size_t n_tokens;  // tokens[n_computed, n_computed + n_tokens) run this step
  // Logit rows wanted: for the last n_logits of those positions (0 for a prompt chunk that does
  // not reach the end; more than 1 once guessed tokens are verified, for speculative decoding).
  size_t n_logits;
  // A decode chunk: the last token and its guesses, every position wanting logits (a prompt
  // chunk wants at most one; its last chunk of one position looks like a decode and is one, in
  // cost).
  bool decodes() const { return n_logits == n_tokens; }
};

struct SchedulerOutput {
  std::vector<ScheduledSeq> scheduled;  // in batch order
  std::vector<Sequence*> admitted;      // got pages this step (first time or after preemption)
  std::vector<Sequence*> preempted;     // lost their pages this step; they wait to recompute
  std::vector<Sequence*> failed;        // cannot fit the KV pool even alone: the caller ends them
  size_t n_tokens = 0;
  size_t n_logits = 0;
};

class Scheduler {
 public:
  Scheduler(kv::KvManager& kv, size_t max_running, size_t token_budget);

  void add(Sequence* seq);
  // Removes a sequence wherever it is and frees its KV pages.
  void remove(Sequence* seq);

  SchedulerOutput schedule();

  size_t n_running() const { return running_.size(); }
  size_t n_waiting() const { return waiting_.size(); }
  size_t n_preemptions() const { return n_preemptions_; }

 private:
  // Gets room for n more tokens of running sequence s, preempting the most recently admitted
  // running sequences as needed. False when s itself was preempted or failed.
  bool make_room(Sequence* s, size_t n, SchedulerOutput& out, size_t& budget);
  void preempt(Sequence* victim, SchedulerOutput& out, size_t& budget);
  void schedule_running(bool decode, SchedulerOutput& out, size_t& budget);
  void admit_waiting(SchedulerOutput& out, size_t& budget);
  static void push(SchedulerOutput& out, Sequence* s, size_t n);

  kv::KvManager& kv_;
  size_t max_running_;
  size_t token_budget_;
  std::vector<Sequence*> running_;  // hold KV pages, in admission order
  std::deque<Sequence*> waiting_;   // first come, first served; preempted ones at the front
  size_t n_preemptions_ = 0;
};

}  // namespace strata::engine
