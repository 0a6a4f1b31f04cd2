// The Engine's state, shared by engine.cc (the public API) and engine_step.cc (the step).
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/draft_model.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_manager.h"
#include "model/model.h"
#include "platform/thread_pool.h"
#include "strata/engine.h"
#include "tokenizer/tokenizer.h"

namespace strata {

// Where one sequence's rows of the step's logits are.
struct LogitRows {
  engine::Sequence* seq;
  size_t first;  // row index in Engine::Impl::logits
  size_t n;      // rows (1 today; the guesses plus one with speculative decoding)
};

// Where an embedding request's rows of the step's hidden states are (n may be 0: its pooling
// reads no position of this chunk).
struct HiddenRows {
  engine::Sequence* seq;
  size_t first;  // row index in Engine::Impl::hidden
  size_t n;
};

struct Engine::Impl {
  EngineOptions options;
  ModelSummary summary;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<ThreadPool> draft_pool;  // the draft's own threads (--draft-threads), if any
  std::unique_ptr<kv::KvManager> kv;
  std::unique_ptr<engine::Scheduler> scheduler;
  std::unique_ptr<engine::ConstraintCompiler> constraints;
  std::unique_ptr<engine::DraftModel> draft;  // with SpeculativeOptions::draft_model
  std::list<engine::Sequence> sequences;      // stable addresses; the scheduler holds pointers
  uint64_t next_id = 1;
  std::vector<float> logits;  // [n_logits][n_vocab] of the current step
  std::vector<float> hidden;  // [n_hidden][n_embd] of the current step's embedding requests
  // Speculative decoding's counters (EngineLoad::spec_*).
  struct SpecCounters {
    uint64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0;
    std::vector<uint64_t> accepted_per_position;
  } spec;
  engine::StepCost step_cost;  // what steps and proposals cost, for the draft lengths
  // What each proposer's guesses kept over all sequences ([SpeculationKind]): where a new
  // sequence's estimate starts.
  std::array<engine::AcceptanceCounts, static_cast<size_t>(SpeculationKind::kDraft) + 1>
      acceptance_history;
  bool in_step = false;  // callbacks may cancel; sequences are then dropped after the step

  size_t n_vocab() const { return model->config().n_vocab; }

  // engine.cc
  // Checks the tokens of one sequence (a prompt, or what evaluate() runs): not empty, ids inside
  // the vocabulary, at most max_tokens of them (else kOutOfRange with the message too_long).
  Status check_tokens(std::span<const TokenId> tokens, size_t max_tokens,
                      const std::string& too_long) const;
  // kUnavailable when EngineOptions::max_waiting requests already wait.
  Status check_queue() const;
  // Loads SpeculativeOptions::draft_model, on its own pool when it has a thread budget.
  Status load_draft(size_t context);
  // The KV policy of a request that asks for its own sparse attention, checked.
  Result<kv::SparsePolicy> request_sparse(const SparseAttentionOverride& o) const;

  // embedding.cc
  // Engine::submit of an embedding request: checked, queued like a prompt that samples nothing.
  Result<uint64_t> submit_embedding(const GenerationRequest& request, TokenCallback on_token);
  // Appends an embedding request's chunk of n_tokens positions, wanting the hidden states its
  // pooling reads; records the chunk in `rows` (n_hidden counts the step's hidden rows so far).
  void append_embedding_chunk(model::Batch& batch, engine::Sequence& s, size_t n_tokens,
                              std::vector<HiddenRows>& rows, size_t& n_hidden);
  // Pools each of the step's embedding chunks (its rows of `hidden`); a request whose prompt is
  // done finishes with its embedding.
  void pool_embeddings(std::span<const HiddenRows> rows);

  // engine_step.cc
  Status step();
  // Ends a sequence: its final event, then its pages go back.
  void finish(engine::Sequence& s, FinishReason reason, const Error& error = {});
  // Takes an ended sequence out of the scheduler, its KV pages (the draft's too) and policies.
  void release(engine::Sequence& s);
  void drop_finished();

 private:
  Status run_step();
  // Appends each decoding sequence's guesses to its tokens (speculative decoding).
  Status propose();
  // Fills the masks of a constrained sequence's rows, one per guess it verifies.
  void fill_guess_masks(engine::Sequence& s, const LogitRows& rows);
  // The tokens a sequence keeps from its rows: the guesses confirmed, then one of the model's.
  Status verify(engine::Sequence& s, const LogitRows& rows,
                std::vector<sampling::SampledToken>& accepted);
  void report_admissions(const engine::SchedulerOutput& plan);
  std::vector<LogitRows> execute(const engine::SchedulerOutput& plan, Status& status);
  Status prefill_draft(const engine::SchedulerOutput& plan);
  void fill_masks(std::span<const LogitRows> rows);
  void sample_and_update(std::span<const LogitRows> rows);
  void record_step_cost(const engine::SchedulerOutput& plan, double seconds);
  // Appends the accepted tokens in order (one today; with speculative decoding, the prefix of the
  // guesses the model confirmed plus its own next token) and reports them, until one finishes
  // the sequence; keys and values computed past them (rejected guesses) are dropped.
  void update(engine::Sequence& s, std::span<const sampling::SampledToken> accepted);
  // Appends one token and reports it; true when the sequence finished with it.
  bool accept(engine::Sequence& s, const sampling::SampledToken& sampled);
  FinishReason stop_reason(engine::Sequence& s, TokenId token, TokenEvent& event);
};

// Appends positions [start, start + n) of one sequence to a batch; the last n_logits of them
// want logits, and those from first_generated on are generated text (BatchEntry::generated).
// The one place batches are built (the step and evaluate()).
void append_positions(model::Batch& batch, kv::SeqId seq, std::span<const TokenId> tokens,
                      size_t start, size_t n, size_t n_logits, size_t first_generated = SIZE_MAX);

}  // namespace strata
