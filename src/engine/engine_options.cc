// Checks of the engine's option groups, made where the options enter: each message names the
// flag to change.
#include <algorithm>
#include <string>
#include <thread>

#include "strata/engine.h"
#include "strata/threads.h"

namespace strata {

Status check_sparse_attention(const SparseAttentionPolicy& p) {
  if (p.budget <= 0 || p.window <= 0 || p.sinks < 0 || p.dense_layers < 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sparse attention needs a positive budget (--attn-budget) and window "
                      "(--attn-window, which holds the position being decoded), and sinks and "
                      "dense layers of 0 or more");
  }
  if (p.sinks + p.window > p.budget) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the sparse attention budget (" + std::to_string(p.budget) +
                          " positions) must hold the sinks and the window (" +
                          std::to_string(p.sinks) + " + " + std::to_string(p.window) +
                          "): raise --attn-budget or lower --attn-sinks / --attn-window");
  }
  return ok_status();
}

Status check_speculative(const SpeculativeOptions& o) {
  if (o.max_draft < 0 || o.max_draft > kMaxDraft || o.min_draft < 0 || o.min_draft > o.max_draft ||
      o.ngram_min < 1 || o.ngram_max < o.ngram_min) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative decoding needs a draft length of 0 to " +
                          std::to_string(kMaxDraft) +
                          " (--draft-max), a --draft-min no larger, and n-gram sizes with 1 <= "
                          "min <= max");
  }
  if (o.draft_threads < 0 || o.draft_threads > kMaxThreads) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--draft-threads " + std::to_string(o.draft_threads) +
                          " is out of range: use 0 (the model's threads) to " +
                          std::to_string(kMaxThreads));
  }
  if (o.kind == SpeculationKind::kDraft && o.draft_model.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative decoding with a draft model needs its file (--draft FILE)");
  }
  return ok_status();
}

Status check_thread_count(int threads) {
  if (threads >= 0 && threads <= kMaxThreads) return ok_status();
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return make_error(ErrorCode::kInvalidArgument,
                    "thread count " + std::to_string(threads) +
                        " is out of range: use 0 (one per hardware thread, " +
                        std::to_string(hardware) + " here) to " + std::to_string(kMaxThreads) +
                        " (strata's limit, as llama.cpp's)");
}

}  // namespace strata
