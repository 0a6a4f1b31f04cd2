// Speculative decoding's draft-model proposer: a small model with the target's vocabulary
// guesses greedily, several tokens ahead, for every speculating sequence at once.
//
// The draft keeps its own KV cache, one sequence per target sequence. At each step it first
// catches up on the tokens the sequence confirmed since its last draft (at first the whole prompt),
// then decodes one token per step of the draft, all sequences in one batch. Its guesses are its
// argmax, a proposer sure of its guess: the target's verification (Sampler::verify) keeps the
// output exactly the target's whatever the draft proposes, so a weak draft costs speed, never
// correctness. At the next draft its cache keeps the positions whose tokens the sequence
// confirmed and drops the rest.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "engine/speculation.h"
#include "kv/kv_manager.h"
#include "model/model.h"
#include "platform/thread_pool.h"
#include "strata/engine.h"
#include "tokenizer/tokenizer.h"

namespace strata::engine {

// A sequence asking for guesses: its tokens (confirmed ones only) and how many it wants.
struct DraftRequest {
  uint64_t seq = 0;
  std::span<const TokenId> tokens;
  size_t max_guesses = 0;
};

class DraftModel {
 public:
  // Loads the draft and checks its vocabulary against the target's: every id the draft can
  // propose must be the same token in both (kInvalidArgument naming the first that differs).
  static Result<std::unique_ptr<DraftModel>> load(const std::string& path,
                                                  const tokenizer::Tokenizer& target,
                                                  size_t context, size_t max_sequences,
                                                  ThreadPool& pool);

  // Guesses for each request, in its order (possibly fewer than asked, or none).
  Result<std::vector<std::vector<TokenId>>> propose(std::span<const DraftRequest> requests);
  // The target computed these tokens of a sequence's prompt: the draft computes them too, in the
  // same step, so that the prompt's cost shows in the time to first token and the first draft
  // finds its cache ready. A draft that cannot follow is left behind without an error.
  Status prefill(uint64_t seq, std::span<const TokenId> tokens);
  // The sequence ended: its pages go back.
  void forget(uint64_t seq);
  const std::string& name() const { return name_; }
  // Seconds of one draft pass at decode (the median of the latest passes of a few positions;
  // catching up on a prompt is not one): what each guess costs to propose. 0 until one ran.
  double pass_seconds() const { return pass_seconds_.value(); }

 private:
  DraftModel(std::unique_ptr<model::Model> model, size_t context, size_t max_sequences,
             ThreadPool& pool);
  // Runs a batch and appends the argmax of each row that wants logits to `out`.
  Status forward(const model::Batch& batch, std::vector<TokenId>& out);
  // Brings the draft's cache of a sequence to `tokens`, dropping what differs; with `guess` the
  // last token runs again if it was cached and its argmax (the first guess) goes to `out`. False
  // when the draft cannot follow (a token it does not know, no room in its cache).
  Result<bool> extend(uint64_t seq, std::span<const TokenId> tokens, bool guess,
                      std::vector<TokenId>& out);

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<kv::KvManager> kv_;
  ThreadPool& pool_;
  size_t context_;
  std::string name_;
  // Per sequence: the tokens the draft's cache holds, position by position.
  std::unordered_map<uint64_t, std::vector<TokenId>> cached_;
  std::vector<float> logits_;
  RecentMedian pass_seconds_;
};

}  // namespace strata::engine
