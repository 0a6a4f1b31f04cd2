#include "engine/scheduler.h"

#include <algorithm>

namespace strata::engine {

Scheduler::Scheduler(kv::KvCache& cache, size_t max_running, size_t token_budget)
    : cache_(cache), max_running_(max_running), token_budget_(token_budget) {}

void Scheduler::remove(Sequence* seq) {
  std::erase(running_, seq);
  std::erase(waiting_, seq);
  cache_.remove(seq->id);
}

std::vector<ScheduledChunk> Scheduler::schedule(std::vector<Sequence*>& starved) {
  std::vector<ScheduledChunk> chunks;
  size_t budget = token_budget_;

  // Decode tokens first (one each), then prompt chunks of admitted sequences, oldest first.
  std::vector<Sequence*> decoding, prefilling;
  for (Sequence* s : running_) (s->n_pending() == 1 ? decoding : prefilling).push_back(s);
  for (Sequence* s : decoding) {
    if (budget == 0) break;
    if (!cache_.reserve(s->id, s->n_computed + 1).ok()) {
      starved.push_back(s);
      continue;
    }
    chunks.push_back({s, 1});
    --budget;
  }
  for (Sequence* s : prefilling) {
    if (budget == 0) break;
    const size_t n = std::min(budget, s->n_pending());
    if (!cache_.reserve(s->id, s->n_computed + n).ok()) {
      starved.push_back(s);
      continue;
    }
    chunks.push_back({s, n});
    budget -= n;
  }
  // Admit waiting requests while there is room; one that cannot get pages waits for the next step.
  while (!waiting_.empty() && budget > 0 && running_.size() < max_running_) {
    Sequence* s = waiting_.front();
    const size_t n = std::min(budget, s->n_pending());
    if (!cache_.reserve(s->id, s->n_computed + n).ok()) break;
    waiting_.pop_front();
    running_.push_back(s);
    chunks.push_back({s, n});
    budget -= n;
  }
  return chunks;
}

}  // namespace strata::engine
