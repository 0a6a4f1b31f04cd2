// Decides the work of one engine step within a token budget, the shape vLLM's scheduler uses:
// every running sequence's next token first (decode), then chunks of prompts still being
// processed, then newly admitted requests. A long prompt is split into chunks across steps so it
// never stalls the sequences already generating. The scheduler sees the KV cache only through
// reserve() results.
#pragma once

#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "kv/kv_cache.h"

namespace strata::engine {

struct ScheduledChunk {
  Sequence* seq;
  size_t n_tokens;  // tokens[n_computed, n_computed + n_tokens) run this step
};

class Scheduler {
 public:
  Scheduler(kv::KvCache& cache, size_t max_running, size_t token_budget);

  void add(Sequence* seq) { waiting_.push_back(seq); }
  // Removes a finished sequence wherever it is and frees its KV pages.
  void remove(Sequence* seq);

  // The chunks to run now. Sequences that cannot get KV pages to continue are returned in
  // `starved` (the caller finishes them); waiting ones simply wait.
  std::vector<ScheduledChunk> schedule(std::vector<Sequence*>& starved);

  size_t n_running() const { return running_.size(); }
  size_t n_waiting() const { return waiting_.size(); }

 private:
  kv::KvCache& cache_;
  size_t max_running_;
  size_t token_budget_;
  std::vector<Sequence*> running_;  // admitted: have KV pages
  std::deque<Sequence*> waiting_;   // first come, first served
};

}  // namespace strata::engine
