// ollama's API over the same engine worker, so tools that speak ollama work unchanged:
//   GET /api/version, GET /api/tags, POST /api/show   (what is served)
//   POST /api/generate, POST /api/chat               (streamed NDJSON by default, or one object)
//   POST /api/embed                                  (the model's pooled embeddings)
// Requests map onto the engine's GenerationRequest (options.temperature, top_k, top_p, min_p,
// seed, num_predict, stop, repeat_penalty, presence/frequency_penalty; `format` "json" or a JSON
// Schema constrains the output); errors are ollama's {"error": "..."} with the status the OpenAI
// routes would give.
#pragma once

#include <string>

#include "server/engine_worker.h"
#include "server/http_exchange.h"
#include "strata/chat.h"

namespace strata::server {

struct OllamaContext {
  EngineWorker& worker;
  const Result<ChatTemplateSource>& chat_template;
  const std::string& model_id;
  const std::string& model_path;
  const SamplingOptions& sampling;  // what requests get for the options they do not set
};

void answer_ollama_version(HttpExchange& exchange);
void answer_ollama_tags(const OllamaContext& context, HttpExchange& exchange);
void answer_ollama_show(const OllamaContext& context, HttpExchange& exchange);
void handle_ollama_generate(const OllamaContext& context, bool chat, HttpExchange& exchange);
void handle_ollama_embed(const OllamaContext& context, HttpExchange& exchange);

}  // namespace strata::server
