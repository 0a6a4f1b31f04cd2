#include "sampling/logit_processor.h"

#include <algorithm>
#include <cmath>

namespace strata::sampling {
namespace {

bool in_vocab(int32_t id, std::span<float> logits) {
  return id >= 0 && static_cast<size_t>(id) < logits.size();
}

}  // namespace

void LogitProcessorChain::add(std::unique_ptr<LogitProcessor> processor) {
  if (processor) processors_.push_back(std::move(processor));
}

void LogitProcessorChain::apply(std::span<float> logits, const SequenceHistory& history) {
  for (auto& processor : processors_) processor->apply(logits, history);
}

void RepetitionPenalty::apply(std::span<float> logits, const SequenceHistory& history) {
  if (last_n_ == 0 || penalty_ == 1.0f) return;
  const size_t total = history.prompt.size() + history.generated.size();
  const size_t want = last_n_ < 0 ? total : std::min(total, static_cast<size_t>(last_n_));
  // The window is the tail of prompt ++ generated: all of it from generated if that suffices.
  window_.clear();
  const size_t from_generated = std::min(want, history.generated.size());
  const size_t from_prompt = want - from_generated;
  window_.insert(window_.end(), history.prompt.end() - static_cast<std::ptrdiff_t>(from_prompt),
                 history.prompt.end());
  window_.insert(window_.end(),
                 history.generated.end() - static_cast<std::ptrdiff_t>(from_generated),
                 history.generated.end());
  std::sort(window_.begin(), window_.end());
  window_.erase(std::unique(window_.begin(), window_.end()), window_.end());
  for (int32_t id : window_) {
    if (!in_vocab(id, logits)) continue;
    float& logit = logits[static_cast<size_t>(id)];
    logit = logit > 0.0f ? logit / penalty_ : logit * penalty_;
  }
}

void FrequencyPresencePenalty::apply(std::span<float> logits, const SequenceHistory& history) {
  if (frequency_ == 0.0f && presence_ == 0.0f) return;
  sorted_.assign(history.generated.begin(), history.generated.end());
  std::sort(sorted_.begin(), sorted_.end());
  for (size_t run_start = 0; run_start < sorted_.size();) {
    const int32_t id = sorted_[run_start];
    size_t run_end = run_start + 1;
    while (run_end < sorted_.size() && sorted_[run_end] == id) ++run_end;
    if (in_vocab(id, logits)) {
      const auto count = static_cast<float>(run_end - run_start);
      logits[static_cast<size_t>(id)] -= frequency_ * count + presence_;
    }
    run_start = run_end;
  }
}

LogitBias::LogitBias(const std::map<int32_t, float>& bias) : bias_(bias.begin(), bias.end()) {}

void LogitBias::apply(std::span<float> logits, const SequenceHistory& history) {
  for (const auto& [id, bias] : bias_) {
    if (in_vocab(id, logits)) logits[static_cast<size_t>(id)] += bias;
  }
}

void TokenMask::apply(std::span<float> logits, const SequenceHistory& history) {
  apply_token_bitmask(logits, mask_);
}

}  // namespace strata::sampling
