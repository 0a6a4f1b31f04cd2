#include "bench/eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <sstream>

#include "bench/bench.h"

namespace strata::bench {
namespace {

// Log of sum_i exp(x_i), around the maximum so that no term overflows.
double log_sum_exp(std::span<const float> x) {
  const float max = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum);
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Error not_a_token_id(const std::string& path, size_t line_number, const std::string& field) {
  return make_error(ErrorCode::kInvalidArgument, path + " line " + std::to_string(line_number) +
                                                     ": '" + field + "' is not a token id");
}

Error one_token_line(const std::string& path, size_t line_number) {
  return make_error(ErrorCode::kInvalidArgument,
                    path + " line " + std::to_string(line_number) +
                        " has one token: a sequence needs a second one for the first to predict");
}

// One sequence per non-empty line, ids separated by spaces; at least two per sequence.
Result<std::vector<std::vector<TokenId>>> read_token_lines(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_file(path));
  std::vector<std::vector<TokenId>> sequences;
  std::istringstream lines(text);
  size_t line_number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_number;
    std::istringstream fields(line);
    std::vector<TokenId> tokens;
    for (std::string field; fields >> field;) {
      char* end = nullptr;
      const long id = std::strtol(field.c_str(), &end, 10);
      if (*end != '\0' || id < 0 || id > std::numeric_limits<TokenId>::max()) {
        return not_a_token_id(path, line_number, field);
      }
      tokens.push_back(static_cast<TokenId>(id));
    }
    if (tokens.size() == 1) return one_token_line(path, line_number);
    if (!tokens.empty()) sequences.push_back(std::move(tokens));
  }
  if (sequences.empty()) {
    return make_error(ErrorCode::kInvalidArgument, path + " holds no token ids");
  }
  return sequences;
}

// The sequences to evaluate and their scored positions [first_scored, size - last_unscored): a
// text chunk's first half is context only and its last position predicts nothing in the chunk
// (llama-perplexity's choice); a token sequence is scored everywhere.
struct EvalInput {
  std::vector<std::vector<TokenId>> sequences;
  size_t first_scored = 0, last_unscored = 0;
};

// Token sequences come ready; a text is tokenized by the loaded model and cut into chunks.
Result<EvalInput> text_input(const EvalOptions& o, const Engine& engine) {
  EvalInput input;
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_file(o.text_path));
  const std::vector<TokenId> tokens = engine.tokenize(text, true, false);
  // BOS, where the model's tokenizer adds one.
  const std::vector<TokenId> prefix = engine.tokenize("", true, false);
  std::optional<TokenId> bos;
  if (!prefix.empty()) bos = prefix[0];
  const size_t chunk = static_cast<size_t>(o.chunk_tokens);
  input.sequences = chunk_text(tokens, bos, chunk, static_cast<size_t>(o.max_chunks));
  if (input.sequences.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      o.text_path + " has " + std::to_string(tokens.size()) +
                          " tokens, fewer than one chunk of " + std::to_string(chunk) +
                          ": give a longer text or a smaller --chunk");
  }
  input.first_scored = chunk / 2;
  input.last_unscored = 1;
  return input;
}

Status check_token_ids(const EvalInput& input, size_t n_vocab, const std::string& path) {
  for (const std::vector<TokenId>& s : input.sequences) {
    for (TokenId t : s) {
      if (static_cast<size_t>(t) >= n_vocab) {
        return make_error(ErrorCode::kInvalidArgument, path + ": token id " + std::to_string(t) +
                                                           " is past the model's vocabulary of " +
                                                           std::to_string(n_vocab));
      }
    }
  }
  return ok_status();
}

Result<std::unique_ptr<Engine>> load_for(EngineOptions options, const std::string& path,
                                         size_t context) {
  options.model_path = path;
  options.context = static_cast<int>(context);
  options.max_sequences = 1;
  return Engine::create(options);
}

// exp(mean NLL), and the standard error of the mean (stddev / sqrt(n)) carried through exp.
Perplexity perplexity_of(const std::vector<double>& nll) {
  if (nll.empty()) return {};
  const Stat s = mean_stddev(nll);
  const double value = std::exp(s.mean);
  return {value, value * s.stddev / std::sqrt(static_cast<double>(nll.size()))};
}

}  // namespace

double negative_log_likelihood(std::span<const float> logits, TokenId token) {
  return log_sum_exp(logits) - logits[static_cast<size_t>(token)];
}

double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  // KL = sum_i p_i (log p_i - log q_i), with log p_i = p_logit_i - lse(p) and likewise for q.
  const double lse_p = log_sum_exp(p_logits), lse_q = log_sum_exp(q_logits);
  double kl = 0;
  for (size_t i = 0; i < p_logits.size(); ++i) {
    const double log_p = p_logits[i] - lse_p;
    kl += std::exp(log_p) * (log_p - (q_logits[i] - lse_q));
  }
  return std::max(kl, 0.0);  // rounding can leave -1e-17 for identical distributions
}

Interval wilson_interval(size_t successes, size_t n) {
  if (n == 0) return {};
  constexpr double z = 1.959963984540054;  // the normal 97.5% quantile
  const double nd = static_cast<double>(n), p = static_cast<double>(successes) / nd;
  const double center = (p + z * z / (2 * nd)) / (1 + z * z / nd);
  const double half = z / (1 + z * z / nd) * std::sqrt(p * (1 - p) / nd + z * z / (4 * nd * nd));
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

std::vector<std::vector<TokenId>> chunk_text(std::span<const TokenId> tokens,
                                             std::optional<TokenId> bos, size_t chunk_tokens,
                                             size_t max_chunks) {
  std::vector<std::vector<TokenId>> chunks;
  if (chunk_tokens == 0) return chunks;
  for (size_t start = 0; start + chunk_tokens <= tokens.size(); start += chunk_tokens) {
    if (max_chunks != 0 && chunks.size() == max_chunks) break;
    std::vector<TokenId>& c =
        chunks.emplace_back(tokens.begin() + start, tokens.begin() + start + chunk_tokens);
    if (bos) c[0] = *bos;
  }
  return chunks;
}

Result<EvalReport> run_eval(const EvalOptions& o) {
  if (o.text_path.empty() == o.tokens_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "give exactly one input: a text (-f) or a token-id file (--tokens)");
  }
  if (o.chunk_tokens < 4) {
    return make_error(ErrorCode::kInvalidArgument, "--chunk must be at least 4 tokens");
  }
  if (o.max_chunks < 0) {
    return make_error(ErrorCode::kInvalidArgument, "--chunks must not be negative");
  }
  // The context each sequence needs: a text's chunk, or the longest line of a token file.
  EvalInput input;
  size_t context = static_cast<size_t>(o.chunk_tokens);
  if (!o.tokens_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(input.sequences, read_token_lines(o.tokens_path));
    context = 0;
    for (const std::vector<TokenId>& s : input.sequences) context = std::max(context, s.size());
  }
  // Teacher forcing scores every position of a chunk in one prompt pass; with sparse attention
  // each of them then chooses its pages as the decode step at that position would.
  EngineOptions engine = o.engine;
  engine.kv.sparse.prefill = engine.kv.sparse.enabled;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> model,
                          load_for(engine, o.engine.model_path, context));
  if (o.tokens_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(input, text_input(o, *model));
  } else {
    STRATA_RETURN_IF_ERROR(check_token_ids(input, model->model().n_vocab, o.tokens_path));
  }
  std::unique_ptr<Engine> reference;
  if (!o.reference_path.empty()) {
    EngineOptions reference_options = engine;
    if (o.reference_sparse) {
      reference_options.kv.sparse.enabled = reference_options.kv.sparse.prefill =
          *o.reference_sparse;
    }
    if (o.reference_kv_type) {  // that precision for every page: no tiers
      reference_options.kv.hot = *o.reference_kv_type;
      reference_options.kv.tiers = KvTierPolicy{};
    }
    if (o.reference_attention) reference_options.kv.attention = *o.reference_attention;
    STRATA_ASSIGN_OR_RETURN(reference, load_for(reference_options, o.reference_path, context));
    if (reference->model().n_vocab != model->model().n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "the reference has " + std::to_string(reference->model().n_vocab) +
                            " vocabulary entries and the model " +
                            std::to_string(model->model().n_vocab) +
                            ": compare files of the same model");
    }
  }

  EvalReport r;
  r.model = model->model();
  r.has_reference = reference != nullptr;
  r.model_path = o.engine.model_path;
  r.reference_path = o.reference_path;
  r.sequences = input.sequences.size();
  const size_t n_vocab = r.model.n_vocab;
  std::vector<double> nll, reference_nll, kld;
  double abs_diff_sum = 0, model_seconds = 0;
  size_t evaluated_tokens = 0;
  for (const std::vector<TokenId>& tokens : input.sequences) {
    const auto start = std::chrono::steady_clock::now();
    STRATA_ASSIGN_OR_RETURN(const std::vector<float> logits, model->evaluate(tokens, true));
    model_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    evaluated_tokens += tokens.size();
    std::vector<float> reference_logits;
    if (reference) {
      STRATA_ASSIGN_OR_RETURN(reference_logits, reference->evaluate(tokens, true));
    }
    const size_t end = tokens.size() - input.last_unscored;
    for (size_t pos = input.first_scored; pos < end; ++pos) {
      const std::span<const float> q(logits.data() + pos * n_vocab, n_vocab);
      ++r.positions;
      if (pos + 1 < tokens.size()) nll.push_back(negative_log_likelihood(q, tokens[pos + 1]));
      if (!reference) continue;
      const std::span<const float> p(reference_logits.data() + pos * n_vocab, n_vocab);
      if (pos + 1 < tokens.size()) {
        reference_nll.push_back(negative_log_likelihood(p, tokens[pos + 1]));
      }
      kld.push_back(kl_divergence(p, q));
      r.fidelity.top1_same += std::max_element(p.begin(), p.end()) - p.begin() ==
                              std::max_element(q.begin(), q.end()) - q.begin();
      for (size_t i = 0; i < n_vocab; ++i) abs_diff_sum += std::abs(q[i] - p[i]);
    }
  }
  r.perplexity = perplexity_of(nll);
  r.tokens_per_s = model_seconds > 0 ? static_cast<double>(evaluated_tokens) / model_seconds : 0;
  if (reference && r.positions > 0) {
    r.reference_perplexity = perplexity_of(reference_nll);
    const Interval ci = wilson_interval(r.fidelity.top1_same, r.positions);
    r.fidelity.top1_ci_low = ci.low;
    r.fidelity.top1_ci_high = ci.high;
    double sum = 0;
    for (double k : kld) sum += k;
    r.fidelity.kld_mean = sum / static_cast<double>(kld.size());
    r.fidelity.kld_p99 = percentile(kld, 0.99);
    r.fidelity.kld_max = *std::max_element(kld.begin(), kld.end());
    r.fidelity.mean_abs_logit_diff = abs_diff_sum / static_cast<double>(r.positions * n_vocab);
  }
  return r;
}

}  // namespace strata::bench
