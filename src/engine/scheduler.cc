#include "engine/scheduler.h"

#include <algorithm>

namespace strata::engine {

Scheduler::Scheduler(kv::KvManager& kv, size_t max_running, size_t token_budget)
    : kv_(kv), max_running_(max_running), token_budget_(token_budget) {}

void Scheduler::add(Sequence* seq) {
  seq->status = SeqStatus::kWaiting;
  waiting_.push_back(seq);
}

void Scheduler::remove(Sequence* seq) {
  std::erase(running_, seq);
  std::erase(waiting_, seq);
  kv_.free(seq->id);
}

void Scheduler::push(SchedulerOutput& out, Sequence* s, size_t n) {
  // Logits for the last token and each guess: row i verifies guess i.
  const size_t n_logits = !s->embed && s->n_computed + n == s->tokens.size() ? 1 + s->n_guesses : 0;
  out.scheduled.push_back({s, n, n_logits});
  out.n_tokens += n;
  out.n_logits += n_logits;
}

void Scheduler::preempt(Sequence* victim, SchedulerOutput& out, size_t& budget) {
  // A victim scheduled earlier in this step gives its tokens back.
  auto it = std::find_if(out.scheduled.begin(), out.scheduled.end(),
                         [victim](const ScheduledSeq& c) { return c.seq == victim; });
  if (it != out.scheduled.end()) {
    budget += it->n_tokens;
    out.n_tokens -= it->n_tokens;
    out.n_logits -= it->n_logits;
    out.scheduled.erase(it);
  }
  std::erase(out.admitted, victim);
  std::erase(running_, victim);
  kv_.free(victim->id);
  victim->drop_guesses();
  victim->n_computed = 0;
  victim->status = SeqStatus::kPreempted;
  waiting_.push_front(victim);
  out.preempted.push_back(victim);
  ++n_preemptions_;
}

bool Scheduler::make_room(Sequence* s, size_t n, SchedulerOutput& out, size_t& budget) {
  while (!kv_.allocate(s->id, n)) {
    Sequence* victim = running_.back();
    if (victim == s && running_.size() == 1 && !kv_.fits_alone(s->n_computed + n)) {
      std::erase(running_, s);
      kv_.free(s->id);
      out.failed.push_back(s);
      return false;
    }
    preempt(victim, out, budget);
    if (victim == s) return false;
  }
  return true;
}

void Scheduler::schedule_running(bool decode, SchedulerOutput& out, size_t& budget) {
  // A copy: preemption removes sequences from running_ while this walks it.
  const std::vector<Sequence*> running = running_;
  for (Sequence* s : running) {
    if (budget == 0) break;
    if (!s->has_pages() || s->decoding() != decode) continue;
    // A decode step runs the last token and as many guesses as the budget takes.
    if (decode) s->drop_guesses(budget - 1);
    const size_t n = decode ? 1 + s->n_guesses : std::min(budget, s->n_pending());
    if (!make_room(s, n, out, budget)) continue;
    push(out, s, n);
    budget -= n;
  }
}

void Scheduler::admit_waiting(SchedulerOutput& out, size_t& budget) {
  while (!waiting_.empty() && budget > 0 && running_.size() < max_running_) {
    Sequence* s = waiting_.front();
    // It starts after the longest cached prefix of its tokens (a preempted sequence finds its
    // own pages when nobody took them meanwhile).
    const size_t cached = s->embed ? 0 : kv_.attach_prefix(s->id, s->tokens, s->cache_salt);
    s->n_computed = cached;
    const size_t n = s->one_chunk ? s->n_pending() : std::min(budget, s->n_pending());
    if (!kv_.allocate(s->id, n)) {
      kv_.free(s->id);  // waiting sequences hold no pages, cached ones neither
      s->n_computed = 0;
      // With nothing running every page is free: it can never fit.
      if (!running_.empty() || kv_.fits_alone(cached + n)) break;
      waiting_.pop_front();
      out.failed.push_back(s);
      continue;
    }
    kv_.count_prefix_lookup(s->tokens.size(), cached);
    if (s->status == SeqStatus::kWaiting) s->n_cached = cached;
    waiting_.pop_front();
    running_.push_back(s);
    s->status = SeqStatus::kPrefilling;
    out.admitted.push_back(s);
    push(out, s, n);
    budget -= std::min(budget, n);
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  size_t budget = token_budget_;
  // Decode tokens first (one each), then prompt chunks of admitted sequences, oldest first.
  schedule_running(/*decode=*/true, out, budget);
  schedule_running(/*decode=*/false, out, budget);
  // Admit waiting requests while there is room; one that cannot get pages waits for the next step.
  admit_waiting(out, budget);
  return out;
}

}  // namespace strata::engine
