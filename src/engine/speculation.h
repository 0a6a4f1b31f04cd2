// Speculative decoding's proposer and its per-sequence draft length (the engine step verifies
// the guesses: engine_step.cc).
//
// Prompt lookup (n-gram) proposes the tokens that followed the latest earlier occurrence of the
// sequence's last n tokens, n from ngram_max down to ngram_min, as llama.cpp's lookup decoding
// and vLLM's n-gram proposer do: free to compute, and right whenever the output repeats or edits
// its input (code, JSON, quotes, lists). A continuation that reaches the end of the tokens goes
// on from its own start (the repetition it found, extended), so a loop of any period fills the
// whole draft.
//
// The draft length adapts to what the sequence's guesses achieved: it grows while whole drafts
// are accepted, shrinks to one more than the accepted run otherwise, and after a few drafts in a
// row with nothing accepted, speculation pauses for a number of steps that doubles each time
// (up to kMaxPause), so that text where guesses fail costs a draft in kMaxPause steps at most.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "strata/engine.h"

namespace strata::engine {

// Positions one step may run for decoding sequences, their own tokens and guesses together.
// Decode reads every weight once per step whatever the batch, so guesses are nearly free while
// the step is bound by memory bandwidth; past a dozen or so positions per step the matrix
// kernels become bound by compute (16 rows share a weight block's unpacking in the interleaved
// kernels), and each guess costs about what a token does. Many streams at once then leave no
// room for guesses (vLLM turns speculation off past a batch size for the same reason).
inline constexpr size_t kSpeculativeStepPositions = 16;

// How many guesses each of `n_speculating` sequences may make in a step with `n_decoding`
// decoding sequences in all (the speculating ones among them).
inline size_t guesses_per_sequence(size_t n_decoding, size_t n_speculating) {
  if (n_speculating == 0 || n_decoding >= kSpeculativeStepPositions) return 0;
  return (kSpeculativeStepPositions - n_decoding) / n_speculating;
}

std::vector<TokenId> propose_ngram(std::span<const TokenId> tokens, size_t ngram_min,
                                   size_t ngram_max, size_t max_draft);

class DraftLength {
 public:
  static constexpr size_t kFailuresBeforePause = 3;
  static constexpr size_t kMaxPause = 64;

  explicit DraftLength(size_t max_draft = 0) : max_(max_draft), length_(max_draft) {}

  // Guesses to make this step: 0 while paused (the step counts towards the pause).
  size_t next();
  // A verification of `drafted` guesses kept the first `accepted`.
  void record(size_t drafted, size_t accepted);
  size_t max() const { return max_; }

 private:
  size_t max_;
  size_t length_;
  size_t failures_ = 0;  // drafts in a row with nothing accepted
  size_t pause_ = 0;     // steps left without speculation
  size_t next_pause_ = 4;
};

}  // namespace strata::engine
