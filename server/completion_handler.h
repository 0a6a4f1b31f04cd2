// POST /v1/chat/completions and /v1/completions: validate, build the prompts, queue one engine
// sequence per choice, and answer with the whole response or a stream of SSE chunks.
#pragma once

#include <memory>
#include <string>

#include "server/engine_worker.h"
#include "server/http_exchange.h"
#include "strata/chat.h"

namespace strata::server {

struct CompletionContext {
  EngineWorker& worker;
  const Result<ChatTemplateSource>& chat_template;
  const std::string& model_id;
};

// Answers on the calling (handler) thread until the response is complete, the client is gone
// (the job is then cancelled, so its sequences free their KV pages at the worker's next
// iteration) or the job fails.
void handle_completion(const CompletionContext& context, bool chat, HttpExchange& exchange);

}  // namespace strata::server
