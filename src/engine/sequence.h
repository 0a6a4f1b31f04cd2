// The engine's state of one request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/speculation.h"
#include "engine/stop_matcher.h"
#include "kv/kv_cache.h"
#include "sampling/sampler.h"
#include "strata/engine.h"
#include "tokenizer/tokenizer.h"

namespace strata::engine {

// Where a sequence is in its life. The scheduler's queues only order sequences; this says what
// they are.
enum class SeqStatus {
  kWaiting,     // submitted, holds no KV pages
  kPrefilling,  // admitted: holds pages, tokens still to run before the next sample
  kDecoding,    // admitted: one token (the last sampled) to run per step
  kPreempted,   // its pages were taken for others; it waits to recompute its tokens' KV
  kFinished,    // done, for `finish` (stop, length, cancelled, error)
};

// "waiting", "prefilling", ...: as EngineLoad::Sequence::state reports it.
inline const char* status_name(SeqStatus status) {
  switch (status) {
    case SeqStatus::kWaiting:
      return "waiting";
    case SeqStatus::kPrefilling:
      return "prefilling";
    case SeqStatus::kDecoding:
      return "decoding";
    case SeqStatus::kPreempted:
      return "preempted";
    case SeqStatus::kFinished:
      break;
  }
  return "finished";
}

struct Sequence {
  uint64_t id = 0;              // also its KV sequence id
  std::vector<TokenId> tokens;  // prompt, then generated tokens
  size_t n_prompt = 0;
  size_t n_computed = 0;  // leading tokens whose keys/values are in the KV cache
  size_t max_length = 0;  // n_prompt + max_tokens, capped by the context
  bool ignore_eos = false;
  bool report_admission = false;  // GenerationRequest::report_admission
  bool admitted_once = false;
  std::string cache_salt;  // GenerationRequest::cache_salt
  size_t n_cached = 0;     // prompt tokens found in the prefix cache at the first admission
  // Speculative decoding: the proposer (kNone: off) and the draft length; the last n_guesses
  // tokens are guesses this step verifies, not yet the sequence's.
  SpeculationKind speculation = SpeculationKind::kNone;
  DraftLength draft_length;
  size_t n_guesses = 0;
  // An embedding request (GenerationRequest::embed): it never attaches cached prefix pages (its
  // pooling reads every position's hidden state) and ends when its prompt has run. `pooled`
  // accumulates the hidden states read so far ([n_embd]; a sum for mean pooling).
  bool embed = false;
  // An encoder's input attends both ways, so it runs in one batch, past the step's token budget
  // if it must (it is at most a context long).
  bool one_chunk = false;
  Pooling pooling = Pooling::kNone;
  std::vector<float> pooled;
  size_t n_pooled = 0;

  std::unique_ptr<sampling::Sampler> sampler;
  std::unique_ptr<SequenceConstraint> constraint;  // null when the output is free
  std::unique_ptr<tokenizer::StreamingDetokenizer> detokenizer;
  std::unique_ptr<StopMatcher> stop;
  TokenCallback on_token;

  SeqStatus status = SeqStatus::kWaiting;
  FinishReason finish = FinishReason::kNone;  // with kFinished

  bool finished() const { return status == SeqStatus::kFinished; }
  bool has_pages() const {
    return status == SeqStatus::kPrefilling || status == SeqStatus::kDecoding;
  }
  size_t n_generated() const { return tokens.size() - n_guesses - n_prompt; }
  // Tokens still to run through the model before the next sample (guesses included).
  size_t n_pending() const { return tokens.size() - n_computed; }
  // A decoding sequence runs its last token and its guesses in one step.
  bool decoding() const { return n_pending() == 1 + n_guesses; }
  // Drops all but the first `keep` guesses.
  void drop_guesses(size_t keep = 0) {
    if (keep >= n_guesses) return;
    tokens.resize(tokens.size() - (n_guesses - keep));
    n_guesses = keep;
  }
};

}  // namespace strata::engine
