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
// The draft length weighs what guesses bring against what they cost, both measured as the
// engine runs. A sequence's guesses are kept one after another with probability α until the
// first miss, so k guesses yield (1 − α^(k+1)) / (1 − α) tokens per step (Leviathan et al.);
// they cost the step's extra positions (a forward pass is nearly flat in its positions while it
// is bound by memory bandwidth, and linear once bound by compute, as a small model's is) and the
// proposer's time (a draft model's pass per guess). The length is the one that maximises the
// step's tokens per second, none when no length beats plain decode: then the sequence pauses
// for a number of steps that doubles (up to kMaxPause) and probes again with its best non-zero
// length, so text where guesses fail costs a probe in kMaxPause steps at most, and none where
// even guesses that are always right would not pay (a draft model too slow for its target).
#pragma once

#include <array>
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

// The median of the latest kWindow samples: a proposer's cost per guess, robust to the first
// draft pass, which can take 20 times the others (its buffers and pages are touched for the first
// time). A mean that started there kept draft lengths at 0 for good, since with guessing stopped
// no pass runs to correct it.
class RecentMedian {
 public:
  static constexpr size_t kWindow = 8;

  void add(double sample) { samples_[n_++ % kWindow] = sample; }
  // 0 before the first sample; of an even count, the lower of the two middle samples.
  double value() const;
  // Samples added so far.
  size_t count() const { return n_; }

 private:
  std::array<double, kWindow> samples_{};  // a ring of the latest samples
  size_t n_ = 0;
};

// What decode steps and proposals cost on this machine and model, measured as the engine runs
// (seconds). A step of n positions costs the median of the latest steps of n positions, and
// where none ran, what a + b·n says, fit over all steps by least squares, each weighing kDecay of
// the one after it. The fit alone misprices lengths where steps are not linear in n (a
// compute-bound model's matrix kernels take tokens 4 at a time, so 4 positions cost about what 3
// do), and one slow step, such as the first draft's, cold, sets its slope until steps of other
// lengths outweigh it. A length that ran once costs the lower of its one step and the fit: one
// slow step (2.4 ms against 0.4 on the testbed, a busy machine or memory touched for the first
// time) priced its length out, and with that length never run again nothing corrected it. A
// lookup's cost is a running mean. Until a cost is measured it is taken as free, so that the
// first drafts measure it.
class StepCost {
 public:
  static constexpr double kDecay = 0.98;

  // A step of decoding sequences only ran `positions` positions (tokens and guesses).
  void record_step(size_t positions, double seconds);
  // What a draft model's pass costs (DraftModel::pass_seconds).
  void set_draft_pass(double seconds) { draft_pass_ = seconds; }
  // One prompt lookup took `seconds`.
  void record_lookup(double seconds);

  double step(size_t positions) const;
  // What `guesses` guesses of one sequence cost to propose.
  double proposal(SpeculationKind kind, size_t guesses) const;

 private:
  // Decayed sums of the fit: weight, n, n², t, n·t.
  double w_ = 0, n_ = 0, nn_ = 0, t_ = 0, nt_ = 0;
  double slope_ = 0;  // b, kept while the recent steps all ran the same n
  std::array<RecentMedian, kSpeculativeStepPositions + 1> by_positions_;  // [n]
  double draft_pass_ = 0, lookup_ = 0;
};

// How often guesses are kept: decayed counts of the guesses kept and of those verified (each
// verification weighing kDecay of the one after it), and from them α, the probability that a
// guess is kept once those before it were (a prior of 1/2, worth one miss and one hit, until
// verifications say otherwise).
class AcceptanceCounts {
 public:
  static constexpr double kDecay = 0.85;

  // A verification of `drafted` guesses kept the first `accepted`.
  void record(size_t drafted, size_t accepted);
  double acceptance() const { return (kept_ + 1) / (tried_ + 2); }
  // Whether any verification was counted.
  bool empty() const { return tried_ == 0; }
  // These counts scaled down to at most `weight` guesses verified.
  AcceptanceCounts at_most(double weight) const;

 private:
  double kept_ = 0, tried_ = 0;
};

class DraftLength {
 public:
  static constexpr size_t kFirstPause = 4;
  static constexpr size_t kMaxPause = 64;
  // What the sequences before a new one kept counts as this many of its own verified guesses:
  // enough to start where they left off (one miss in its first guesses, with a prior of 1/2,
  // paused a reply of the testbed pair for most of its 256 tokens), few enough that its own
  // verifications outweigh them within a few steps.
  static constexpr double kHistoryWeight = 4;
  // Verifications a sequence makes before pausing when no sequence before it guessed with this
  // proposer: one early miss (the first token after a prompt cut mid-word is a hard guess) took
  // α from 1/2 to 1/3 and paused it, and pauses that double left it few probes to learn more.
  static constexpr size_t kFirstVerifications = 3;

  // `history`: what the proposer's guesses kept in the sequences before this one.
  explicit DraftLength(size_t max_draft = 0, size_t min_draft = 0,
                       const AcceptanceCounts& history = {})
      : max_(max_draft),
        min_(min_draft),
        counts_(history.at_most(kHistoryWeight)),
        first_verifications_(history.empty() ? kFirstVerifications : 0) {}

  // Guesses to make this step, at most `cap`, for a sequence among `n_decoding` decoding ones:
  // 0 while paused (the step counts towards the pause) or when guessing does not pay, unless
  // min_draft asks for some.
  size_t next(size_t cap, size_t n_decoding, SpeculationKind kind, const StepCost& cost);
  // A verification of `drafted` guesses kept the first `accepted`.
  void record(size_t drafted, size_t accepted);
  double acceptance() const { return counts_.acceptance(); }
  size_t max() const { return max_; }

 private:
  size_t max_, min_;
  AcceptanceCounts counts_;
  size_t first_verifications_;  // left to make before a pause
  size_t pause_ = 0;            // steps left without speculation
  size_t next_pause_ = kFirstPause;
  bool probe_ = false;  // the pause ended: guess once whatever the estimate
};

// The draft length in [0, max_guesses] that maximises the step's expected tokens per second,
//   tokens(k)  = n_decoding − 1 + Σ_{i=0..k} α^i
//   seconds(k) = step(n_decoding + k) + proposal(k),
// or the best in [1, max_guesses] with `at_least_one`.
size_t best_draft_length(double acceptance, size_t max_guesses, size_t n_decoding,
                         SpeculationKind kind, const StepCost& cost, bool at_least_one);

}  // namespace strata::engine
