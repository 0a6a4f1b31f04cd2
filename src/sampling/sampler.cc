#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace strata::sampling {

Result<Sampler> Sampler::create(const SamplingParams& params) {
  STRATA_RETURN_IF_ERROR(params.validate());
  return Sampler(params);
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  if (params.repeat_penalty != 1.0f && params.repeat_last_n != 0) {
    chain_.add(std::make_unique<RepetitionPenalty>(params.repeat_penalty, params.repeat_last_n));
  }
  if (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) {
    chain_.add(std::make_unique<FrequencyPresencePenalty>(params.frequency_penalty,
                                                          params.presence_penalty));
  }
  if (!params.logit_bias.empty()) chain_.add(std::make_unique<LogitBias>(params.logit_bias));
}

void Sampler::add_processor(std::unique_ptr<LogitProcessor> processor) {
  chain_.add(std::move(processor));
}

Status Sampler::prepare(std::span<const float> logits, const SequenceHistory& history) {
  if (logits.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "sampler got an empty logits vector");
  }
  logits_.assign(logits.begin(), logits.end());
  chain_.apply(logits_, history);
  // Banned tokens (-infinity) drop out here; the rest stay in id order.
  candidates_.clear();
  for (size_t id = 0; id < logits_.size(); ++id) {
    const float logit = logits_[id];
    if (std::isnan(logit) || logit == INFINITY) {
      return make_error(ErrorCode::kInternal,
                        "logit of token " + std::to_string(id) +
                            " is NaN or +infinity after logit processing; the forward pass or a "
                            "processor produced invalid values");
    }
    if (logit != -INFINITY) candidates_.push_back({static_cast<int32_t>(id), logit});
  }
  if (candidates_.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "every token is banned by logit_bias or the allowed-token mask; relax the "
                      "constraints so at least one token can be sampled");
  }
  return ok_status();
}

void Sampler::truncate() {
  keep_top_k(candidates_, params_.top_k);
  keep_top_p(candidates_, params_.top_p);
  keep_min_p(candidates_, params_.min_p);
}

Result<SampledToken> Sampler::sample(std::span<const float> logits,
                                     const SequenceHistory& history) {
  STRATA_RETURN_IF_ERROR(prepare(logits, history));
  SampledToken out;
  if (params_.temperature == 0.0f) {
    // Candidates are in id order, so the first maximum is the lowest id among ties.
    auto best =
        std::max_element(candidates_.begin(), candidates_.end(),
                         [](const Candidate& a, const Candidate& b) { return a.logit < b.logit; });
    out.id = best->id;
  } else {
    truncate();
    out.id = draw(params_.temperature);
  }
  if (params_.logprobs) fill_logprobs(out.id, out);
  return out;
}

Result<SampledToken> Sampler::verify(std::span<const float> logits, const SequenceHistory& history,
                                     int32_t guess) {
  if (params_.temperature == 0.0f) return sample(logits, history);
  STRATA_RETURN_IF_ERROR(prepare(logits, history));
  truncate();
  const double total = fill_weights(params_.temperature);
  double p_guess = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (candidates_[i].id == guess) p_guess = weights_[i] / total;
  }
  SampledToken out;
  if (rng_.next_unit() < p_guess) {
    out.id = guess;
  } else {
    // The residual max(p - q, 0) with q one-hot on the guess: p without the guess.
    std::erase_if(candidates_, [guess](const Candidate& c) { return c.id == guess; });
    out.id = candidates_.empty() ? guess : draw(params_.temperature);
  }
  if (params_.logprobs) fill_logprobs(out.id, out);
  return out;
}

double Sampler::fill_weights(float temperature) {
  float max_logit = -INFINITY;
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  // softmax(logit / T): weights exp((logit - max) / T), normalised implicitly by the total.
  weights_.resize(candidates_.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    weights_[i] = std::exp((candidates_[i].logit - max_logit) / temperature);
    total += weights_[i];
  }
  return total;
}

int32_t Sampler::draw(float temperature) {
  const double total = fill_weights(temperature);
  // Inverse-CDF draw: the first candidate whose cumulative weight exceeds u * total.
  const double target = rng_.next_unit() * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += weights_[i];
    if (cumulative > target) return candidates_[i].id;
  }
  return candidates_.back().id;  // only reached through rounding in the running sum
}

void Sampler::fill_logprobs(int32_t chosen, SampledToken& out) {
  // log-softmax over all unbanned tokens: logit - max - ln(sum exp(logit - max)).
  float max_logit = -INFINITY;
  for (float logit : logits_) max_logit = std::max(max_logit, logit);
  double sum = 0.0;
  for (float logit : logits_) {
    if (logit != -INFINITY) sum += std::exp(logit - max_logit);
  }
  const double log_normalizer = static_cast<double>(max_logit) + std::log(sum);
  auto logprob_of = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(logits_[static_cast<size_t>(id)]) -
                              log_normalizer);
  };
  out.logprob = logprob_of(chosen);

  // Best tokens by processed logit; candidates_ may already be truncated, so rescan logits_.
  const auto wanted = static_cast<size_t>(params_.top_logprobs);
  if (wanted == 0) return;
  std::vector<Candidate> best;
  best.reserve(wanted + 1);
  for (size_t id = 0; id < logits_.size(); ++id) {
    const Candidate c{static_cast<int32_t>(id), logits_[id]};
    if (c.logit == -INFINITY) continue;
    if (best.size() == wanted && !ranks_before(c, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), c, ranks_before), c);
    if (best.size() > wanted) best.pop_back();
  }
  out.top_logprobs.reserve(best.size());
  for (const Candidate& c : best) out.top_logprobs.push_back({c.id, logprob_of(c.id)});
}

}  // namespace strata::sampling
