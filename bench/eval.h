// `strata eval`: how well a model file predicts a text, and how far it strays from a reference
// file of the same model (usually the F16/F32 file it was quantized from), position by position.
// The measures are those llama.cpp's users know from llama-perplexity: perplexity with its
// standard error, and against a reference the KL divergence of the next-token distributions and
// how often the top-1 token is the same (teacher-forced: both models read the same tokens, so one
// disagreement does not steer the rest).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strata/engine.h"
#include "strata/result.h"

namespace strata::bench {

struct EvalOptions {
  EngineOptions engine;        // the model under test; its context is set from the chunks
  std::string reference_path;  // optional: the model to compare with (loaded alongside)
  // The reference's KV cache, where it differs from the model's. With the model file itself as
  // the reference, this measures what a KV precision or attention mode costs: e.g. the model
  // with fast attention against the same file with exact attention, in one run.
  std::optional<KvPrecision> reference_kv_type;
  std::optional<AttentionMode> reference_attention;
  // Whether the reference reads pages sparsely (SparseAttentionPolicy::enabled), where it
  // differs from the model's: the model with --attn sparse against the same file dense.
  std::optional<bool> reference_sparse;
  // The input, one of:
  std::string text_path;    // a text, cut into chunks of chunk_tokens (see chunk_text)
  std::string tokens_path;  // token sequences, one per line as space-separated ids (two or more)
  int chunk_tokens = 512;   // tokens per chunk of a text, BOS included
  int max_chunks = 0;       // 0: every whole chunk of the text
};

// Perplexity of next-token predictions: exp(mean negative log-likelihood), with the standard
// error of that mean carried through exp (ppl * sem, as llama-perplexity prints it).
struct Perplexity {
  double value = 0;
  double std_error = 0;
};

// The model against the reference over the scored positions.
struct Fidelity {
  size_t top1_same = 0;
  double top1_ci_low = 0, top1_ci_high = 0;  // 95% Wilson interval of top1_same / positions
  double kld_mean = 0, kld_p99 = 0, kld_max = 0;
  double mean_abs_logit_diff = 0;  // over every vocabulary entry of every scored position
};

struct EvalReport {
  ModelSummary model;
  std::string model_path, reference_path;  // reference_path empty without a reference
  size_t sequences = 0;                    // chunks of the text, or lines of the token file
  size_t positions = 0;                    // scored positions (each predicts the token after it)
  Perplexity perplexity;
  Perplexity reference_perplexity;  // with a reference
  bool has_reference = false;
  Fidelity fidelity;        // with a reference
  double tokens_per_s = 0;  // the model under test's evaluation speed
};

Result<EvalReport> run_eval(const EvalOptions& options);

std::string format_eval_table(const EvalReport& report);
std::string format_eval_json(const EvalReport& report);

// ---- the statistics, on one position's logits ----

// -log softmax(logits)[token], computed stably (log-sum-exp around the maximum).
double negative_log_likelihood(std::span<const float> logits, TokenId token);

// KL(P || Q) of the distributions softmax(p_logits) and softmax(q_logits), in nats: what is lost
// when the model's Q stands in for the reference's P.
double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits);

// The 95% Wilson score interval of a proportion successes / n (sound near 0 and 1, where the
// normal approximation is not). n = 0 gives [0, 1].
struct Interval {
  double low = 0, high = 1;
};
Interval wilson_interval(size_t successes, size_t n);

// Cuts a tokenized text (BOS first where the model has one) into floor(n / chunk_tokens) chunks
// of chunk_tokens, each starting with `bos` in place of its first token, as llama-perplexity
// does; at most max_chunks (0: all).
std::vector<std::vector<TokenId>> chunk_text(std::span<const TokenId> tokens,
                                             std::optional<TokenId> bos, size_t chunk_tokens,
                                             size_t max_chunks);

}  // namespace strata::bench
