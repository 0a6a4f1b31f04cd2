#include "sampling/sampling_params.h"

#include <cmath>
#include <string>

namespace strata::sampling {
namespace {

Error invalid(const std::string& field, float value, const std::string& range) {
  return make_error(ErrorCode::kInvalidArgument, "sampling parameter " + field + " = " +
                                                     std::to_string(value) + " is out of range; " +
                                                     "it must be " + range);
}

}  // namespace

Status SamplingParams::validate(size_t vocab_size) const {
  // Comparisons are written so that NaN fails them.
  if (!(temperature >= 0.0f) || std::isinf(temperature)) {
    return invalid("temperature", temperature, "finite and >= 0 (0 = greedy)");
  }
  if (top_k < 0) return invalid("top_k", static_cast<float>(top_k), ">= 0 (0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) return invalid("top_p", top_p, "in (0, 1] (1 = off)");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return invalid("min_p", min_p, "in [0, 1] (0 = off)");
  if (!(repeat_penalty > 0.0f) || std::isinf(repeat_penalty)) {
    return invalid("repeat_penalty", repeat_penalty, "finite and > 0 (1 = off)");
  }
  if (repeat_last_n < -1) {
    return invalid("repeat_last_n", static_cast<float>(repeat_last_n),
                   ">= -1 (-1 = whole history, 0 = off)");
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return invalid("frequency_penalty", frequency_penalty, "in [-2, 2]");
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return invalid("presence_penalty", presence_penalty, "in [-2, 2]");
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return invalid("top_logprobs", static_cast<float>(top_logprobs),
                   "in [0, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || (vocab_size != 0 && static_cast<size_t>(id) >= vocab_size)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "logit_bias names token id " + std::to_string(id) +
                            ", which is outside the vocabulary [0, " +
                            (vocab_size != 0 ? std::to_string(vocab_size) : std::string("n")) +
                            "); remove it or use an id from this model's vocabulary");
    }
    // -infinity is the documented way to ban a token; +infinity or NaN would poison the softmax.
    if (std::isnan(bias) || bias == INFINITY) {
      return make_error(ErrorCode::kInvalidArgument,
                        "logit_bias for token " + std::to_string(id) + " is " +
                            std::to_string(bias) + "; it must be finite or -infinity (a ban)");
    }
  }
  return ok_status();
}

}  // namespace strata::sampling
