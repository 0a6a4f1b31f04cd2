// The unit of work of one forward pass: tokens of any sequences at any positions, mixed.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"

namespace strata::model {

struct BatchEntry {
  kv::SeqId seq = 0;
  uint32_t pos = 0;  // position in its sequence; earlier positions are cached or earlier here
  int32_t token = 0;
  bool want_logits = false;  // return this position's logits
  bool want_hidden = false;  // return this position's final-normed hidden state (embeddings)
  // A position of generated text (a decode step or a verified guess), not of the prompt: sparse
  // attention chooses its pages as a decode step does, however many share its sequence's run.
  bool generated = false;
};

using Batch = std::vector<BatchEntry>;

}  // namespace strata::model
