// One engine step, the shape of vLLM v1's EngineCore.step():
//   plan = scheduler.schedule()          // sequences, tokens each, which positions want logits
//   forward(batch of every plan entry)   // one batched pass; logits only where wanted, hidden
//                                        // states for embedding requests' pooling
//   fill grammar masks (thread pool)     // each sequence's own constraint
//   sample each logit row                // the sequence's sampler (penalties, bias, truncation)
//   update(sequence, accepted tokens)    // append, stream, stop checks, free finished pages
#include <algorithm>

#include "base/timer.h"
#include "engine/engine_impl.h"
#include "sampling/token_bitmask.h"

namespace strata {

void append_positions(model::Batch& batch, kv::SeqId seq, std::span<const TokenId> tokens,
                      size_t start, size_t n, size_t n_logits, size_t first_generated) {
  for (size_t p = start; p < start + n; ++p) {
    model::BatchEntry& e = batch.emplace_back();
    e.seq = seq;
    e.pos = static_cast<uint32_t>(p);
    e.token = tokens[p];
    e.want_logits = p + n_logits >= start + n;
    e.generated = p >= first_generated;
  }
}

void Engine::Impl::drop_finished() {
  std::erase_if(sequences, [](const engine::Sequence& s) { return s.finished(); });
}

void Engine::Impl::finish(engine::Sequence& s, FinishReason reason, const Error& error) {
  s.status = engine::SeqStatus::kFinished;
  s.finish = reason;
  TokenEvent event;
  event.finish = reason;
  if (reason == FinishReason::kError) {
    event.error = error.message;
    event.error_code = error.code;
  } else {
    event.text = s.detokenizer->finish() + s.stop->flush();
  }
  if (s.on_token) s.on_token(event);
  release(s);
}

void Engine::Impl::release(engine::Sequence& s) {
  scheduler->remove(&s);
  kv->cache().clear_sequence_sparse(s.id);
  if (draft) draft->forget(s.id);
}

Status Engine::Impl::step() {
  in_step = true;
  Status status = run_step();
  in_step = false;
  drop_finished();
  return status;
}

Status Engine::Impl::run_step() {
  STRATA_RETURN_IF_ERROR(propose());
  const engine::SchedulerOutput plan = scheduler->schedule();
  for (engine::Sequence* s : plan.failed) {
    finish(*s, FinishReason::kError,
           make_error(ErrorCode::kOutOfRange,
                      "the sequence needs more KV pages than the whole cache holds; raise the "
                      "context size or the KV pages"));
  }
  report_admissions(plan);
  const Timer timer;
  Status status = ok_status();
  const std::vector<LogitRows> rows = execute(plan, status);
  if (!status.ok()) return status;
  STRATA_RETURN_IF_ERROR(prefill_draft(plan));
  fill_masks(rows);
  sample_and_update(rows);
  record_step_cost(plan, timer.elapsed_seconds());
  return ok_status();
}

// A step that only decoded (every chunk a sequence's last token and its guesses, each wanting
// logits) tells the draft lengths what a position costs; prefill chunks would blur it.
void Engine::Impl::record_step_cost(const engine::SchedulerOutput& plan, double seconds) {
  const auto decodes = [](const engine::ScheduledSeq& c) { return !c.seq->embed && c.decodes(); };
  if (plan.scheduled.empty() ||
      !std::all_of(plan.scheduled.begin(), plan.scheduled.end(), decodes)) {
    return;
  }
  step_cost.record_step(plan.n_tokens, seconds);
}

void Engine::Impl::report_admissions(const engine::SchedulerOutput& plan) {
  for (engine::Sequence* s : plan.admitted) {
    if (s->admitted_once) continue;
    s->admitted_once = true;
    if (!s->report_admission || !s->on_token) continue;
    TokenEvent event;
    event.admitted = true;
    event.cached_tokens = s->n_cached;
    s->on_token(event);  // a request cancelled from here ends after the step
  }
}

// One batch of every scheduled chunk's tokens; logits where a chunk completes its pending tokens.
std::vector<LogitRows> Engine::Impl::execute(const engine::SchedulerOutput& plan, Status& status) {
  model::Batch batch;
  batch.reserve(plan.n_tokens);
  std::vector<LogitRows> rows;
  std::vector<HiddenRows> hidden_rows;
  size_t n_rows = 0, n_hidden = 0;
  for (const engine::ScheduledSeq& c : plan.scheduled) {
    engine::Sequence& s = *c.seq;
    if (s.finished()) continue;  // cancelled from an admission or error callback above
    if (s.embed) {
      append_embedding_chunk(batch, s, c.n_tokens, hidden_rows, n_hidden);
    } else {
      append_positions(batch, s.id, s.tokens, s.n_computed, c.n_tokens, c.n_logits, s.n_prompt);
    }
    s.n_computed += c.n_tokens;
    if (c.n_logits > 0) rows.push_back({&s, n_rows, c.n_logits});
    n_rows += c.n_logits;
  }
  if (batch.empty()) return {};
  logits.resize(n_rows * n_vocab());
  hidden.resize(n_hidden * model->config().n_embd);
  Status forward = model->forward(batch, kv->cache(), *pool, logits.data(),
                                  model::OutputKind::kLogits, hidden.data());
  if (!forward.ok()) {
    // The step's sequences cannot continue; end them so no caller waits on them forever.
    for (const engine::ScheduledSeq& c : plan.scheduled) {
      if (!c.seq->finished()) finish(*c.seq, FinishReason::kError, forward.error());
    }
    status = forward.error();
    return {};
  }
  // The pages just filled hold these tokens' keys and values now: later prompts may share them.
  for (const engine::ScheduledSeq& c : plan.scheduled) {
    if (!c.seq->finished()) kv->computed(c.seq->id, c.seq->tokens, c.seq->n_computed);
  }
  pool_embeddings(hidden_rows);
  return rows;
}

Status Engine::Impl::propose() {
  const SpeculativeOptions& o = options.speculative;
  size_t n_decoding = 0, n_speculating = 0;
  for (const engine::Sequence& s : sequences) {
    if (s.status != engine::SeqStatus::kDecoding) continue;
    ++n_decoding;
    n_speculating += s.speculation != SpeculationKind::kNone;
  }
  const size_t share = engine::guesses_per_sequence(n_decoding, n_speculating);
  if (share == 0) return ok_status();
  std::vector<engine::Sequence*> drafting;
  std::vector<engine::DraftRequest> requests;
  for (engine::Sequence& s : sequences) {
    if (s.speculation == SpeculationKind::kNone || s.status != engine::SeqStatus::kDecoding ||
        s.n_guesses > 0) {
      continue;
    }
    // Never past the sequence's length limit: each kept guess is one more token.
    const size_t room = s.max_length - s.tokens.size() - 1;
    const size_t length =
        s.draft_length.next(std::min(room, share), n_decoding, s.speculation, step_cost);
    if (length == 0) continue;
    if (s.speculation == SpeculationKind::kDraft) {
      drafting.push_back(&s);
      requests.push_back({s.id, s.tokens, length});
      continue;
    }
    const Timer lookup;
    std::vector<TokenId> guesses = engine::propose_ngram(s.tokens, static_cast<size_t>(o.ngram_min),
                                                         static_cast<size_t>(o.ngram_max), length);
    step_cost.record_lookup(lookup.elapsed_seconds());
    s.tokens.insert(s.tokens.end(), guesses.begin(), guesses.end());
    s.n_guesses = guesses.size();
  }
  if (requests.empty()) return ok_status();
  STRATA_ASSIGN_OR_RETURN(std::vector<std::vector<TokenId>> guesses, draft->propose(requests));
  step_cost.set_draft_pass(draft->pass_seconds());
  for (size_t i = 0; i < drafting.size(); ++i) {
    engine::Sequence& s = *drafting[i];
    s.tokens.insert(s.tokens.end(), guesses[i].begin(), guesses[i].end());
    s.n_guesses = guesses[i].size();
  }
  return ok_status();
}

// A draft model computes the prompt chunks of the sequences it guesses for in the same step as
// the target.
Status Engine::Impl::prefill_draft(const engine::SchedulerOutput& plan) {
  if (!draft) return ok_status();
  for (const engine::ScheduledSeq& c : plan.scheduled) {
    const engine::Sequence& s = *c.seq;
    if (s.finished() || s.speculation != SpeculationKind::kDraft || c.decodes()) {
      continue;
    }
    STRATA_RETURN_IF_ERROR(draft->prefill(s.id, std::span(s.tokens).first(s.n_computed)));
  }
  return ok_status();
}

// Each constrained sequence's grammar fills its allowed-token masks, on the thread pool when
// several do (they share only the immutable compiled grammar), and bans the rest in its rows.
void Engine::Impl::fill_masks(std::span<const LogitRows> rows) {
  std::vector<const LogitRows*> constrained;
  for (const LogitRows& r : rows) {
    if (r.seq->constraint && !r.seq->finished()) constrained.push_back(&r);
  }
  pool->parallel_for(constrained.size(), [&](size_t i, size_t) {
    fill_guess_masks(*constrained[i]->seq, *constrained[i]);
  });
}

// Row i's mask is the grammar's after guesses 0..i-1: the grammar advances through the guesses
// and rolls back. A guess the grammar forbids ends it: verification stops at that row anyway.
void Engine::Impl::fill_guess_masks(engine::Sequence& s, const LogitRows& r) {
  const std::span<const TokenId> guesses(s.tokens.data() + s.tokens.size() - s.n_guesses,
                                         s.n_guesses);
  size_t advanced = 0;
  for (size_t i = 0; i < r.n; ++i) {
    // Inactive (waiting for a trigger) it allows everything, but a guess may start it.
    if (s.constraint->fill_mask(s.n_generated() + i)) {
      std::span<float> row(logits.data() + (r.first + i) * n_vocab(), n_vocab());
      sampling::apply_token_bitmask(row, s.constraint->mask());
      if (i < guesses.size() && !s.constraint->mask().is_allowed(guesses[i])) break;
    }
    if (i == guesses.size() || !s.constraint->accept(guesses[i]).ok()) break;
    ++advanced;
  }
  s.constraint->rollback(advanced);
}

Status Engine::Impl::verify(engine::Sequence& s, const LogitRows& r,
                            std::vector<sampling::SampledToken>& accepted) {
  std::vector<TokenId> guesses(s.tokens.end() - static_cast<ptrdiff_t>(s.n_guesses),
                               s.tokens.end());
  s.drop_guesses();
  const size_t history_end = s.tokens.size();
  size_t kept = 0;  // guesses confirmed
  Status status = ok_status();
  for (size_t i = 0; i < r.n; ++i) {
    std::span<const float> row(logits.data() + (r.first + i) * n_vocab(), n_vocab());
    // The history of row i holds the guesses before it, as the output would.
    sampling::SequenceHistory history{
        std::span<const TokenId>(s.tokens.data(), s.n_prompt),
        std::span<const TokenId>(s.tokens.data() + s.n_prompt, s.tokens.size() - s.n_prompt)};
    Result<sampling::SampledToken> token = i < guesses.size()
                                               ? s.sampler->verify(row, history, guesses[i])
                                               : s.sampler->sample(row, history);
    if (!token.ok()) {
      status = token.error();
      break;
    }
    accepted.push_back(*token);
    if (i == guesses.size() || token->id != guesses[i]) break;
    s.tokens.push_back(guesses[i]);
    ++kept;
  }
  s.tokens.resize(history_end);
  if (!guesses.empty()) {
    s.draft_length.record(guesses.size(), kept);
    acceptance_history[static_cast<size_t>(s.speculation)].record(guesses.size(), kept);
    ++spec.drafts;
    spec.draft_tokens += guesses.size();
    spec.accepted_tokens += kept;
    if (spec.accepted_per_position.size() < guesses.size()) {
      spec.accepted_per_position.resize(guesses.size());
    }
    for (size_t i = 0; i < kept; ++i) ++spec.accepted_per_position[i];
  }
  return status;
}

void Engine::Impl::sample_and_update(std::span<const LogitRows> rows) {
  std::vector<sampling::SampledToken> accepted;
  for (const LogitRows& r : rows) {
    engine::Sequence& s = *r.seq;
    if (s.finished()) continue;  // cancelled by a callback this step
    accepted.clear();
    Status verified = verify(s, r, accepted);
    if (!verified.ok()) {
      finish(s, FinishReason::kError, verified.error());
      continue;
    }
    update(s, accepted);
  }
}

void Engine::Impl::update(engine::Sequence& s, std::span<const sampling::SampledToken> accepted) {
  for (const sampling::SampledToken& t : accepted) {
    if (accept(s, t)) return;
  }
  // The newest token is not computed yet; positions computed past it were rejected guesses.
  const size_t computed = s.tokens.size() - 1;
  if (s.n_computed > computed) {
    s.n_computed = computed;
    kv->truncate(s.id, computed);
  }
  s.status = s.n_pending() == 1 ? engine::SeqStatus::kDecoding : engine::SeqStatus::kPrefilling;
}

bool Engine::Impl::accept(engine::Sequence& s, const sampling::SampledToken& sampled) {
  const TokenId token = sampled.id;
  if (s.constraint) {
    Status accepted = s.constraint->accept(token);
    if (!accepted.ok()) {
      finish(s, FinishReason::kError, accepted.error());
      return true;
    }
  }
  s.tokens.push_back(token);
  TokenEvent event;
  event.token = token;
  if (s.sampler->params().logprobs) {
    event.logprob = sampled.logprob;
    event.top_logprobs.reserve(sampled.top_logprobs.size());
    for (const sampling::TokenLogprob& t : sampled.top_logprobs)
      event.top_logprobs.push_back({t.id, t.logprob});
  }
  event.finish = stop_reason(s, token, event);
  const bool keep_going = !s.on_token || s.on_token(event);
  if (event.finish == FinishReason::kNone && !keep_going) event.finish = FinishReason::kCancelled;
  if (event.finish == FinishReason::kNone) return false;
  s.status = engine::SeqStatus::kFinished;
  s.finish = event.finish;
  release(s);
  return true;
}

// Whether the token just appended ends the sequence; fills the event's text.
FinishReason Engine::Impl::stop_reason(engine::Sequence& s, TokenId token, TokenEvent& event) {
  FinishReason reason = FinishReason::kNone;
  bool stop_string = false;
  if (!s.ignore_eos && tokenizer->is_eog(token)) {
    reason = FinishReason::kStop;  // end-of-generation tokens are not shown
  } else {
    engine::StopMatcher::Output out = s.stop->push(s.detokenizer->push(token));
    event.text = std::move(out.text);
    stop_string = out.stopped;
    if (stop_string) reason = FinishReason::kStop;
  }
  // A grammar that is complete and allows nothing more ends the output, as an EOG would.
  if (reason == FinishReason::kNone && s.constraint && s.constraint->terminated()) {
    reason = FinishReason::kStop;
  }
  // At the token limit a constrained output the budget guard brought to a whole sentence was
  // not cut short: it stops rather than reporting length.
  if (reason == FinishReason::kNone && s.tokens.size() >= s.max_length) {
    const bool complete = s.constraint && s.constraint->complete();
    reason = complete ? FinishReason::kStop : FinishReason::kLength;
  }
  // At the end, release text held back for a possible stop string, unless one was found.
  if (reason != FinishReason::kNone && !stop_string) {
    event.text += s.detokenizer->finish() + s.stop->flush();
  }
  return reason;
}

}  // namespace strata
