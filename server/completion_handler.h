// POST /v1/chat/completions and /v1/completions: validate, build the prompts, queue one engine
// sequence per choice, and answer with the whole response or a stream of SSE chunks.
#pragma once

#include <chrono>
#include <memory>
#include <semaphore>
#include <string>

#include "server/engine_worker.h"
#include "server/http_exchange.h"
#include "strata/chat.h"

namespace strata::server {

// Turning a JSON body into prompts costs many times its size in heap (nlohmann's DOM, a node and
// a key string per value; then the chat template's values and the rendered prompt): twelve 4 MB
// bodies of 100k messages at once peaked at 2.2 GB. Bodies of at least kLargeBodyBytes go from
// parse to tokens a few at a time; small ones, the common case, never wait.
class LargeBodyGate {
 public:
  // Holds one slot (or none, for a small body) until release() or destruction.
  class Slot {
   public:
    explicit Slot(LargeBodyGate* gate) : gate_(gate) {}
    ~Slot() { release(); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    void release() {
      if (gate_) gate_->leave();
      gate_ = nullptr;
    }

   private:
    LargeBodyGate* gate_;
  };

  static constexpr size_t kLargeBodyBytes = 1u << 20;
  static constexpr int kAtOnce = 2;
  // False when no slot freed within `wait` (the caller answers 503).
  bool enter(std::chrono::milliseconds wait) { return slots_.try_acquire_for(wait); }
  void leave() { slots_.release(); }

 private:
  std::counting_semaphore<kAtOnce> slots_{kAtOnce};
};

struct CompletionContext {
  EngineWorker& worker;
  const Result<ChatTemplateSource>& chat_template;
  const std::string& model_id;
  LargeBodyGate& large_bodies;
  const SamplingOptions& sampling;  // what requests get for the fields they do not set
};

// Answers on the calling (handler) thread until the response is complete, the client is gone
// (the job is then cancelled, so its sequences free their KV pages at the worker's next
// iteration) or the job fails.
void handle_completion(const CompletionContext& context, bool chat, HttpExchange& exchange);

}  // namespace strata::server
