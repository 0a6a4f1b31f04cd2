// POST /v1/embeddings (OpenAI's shape): each input becomes one embedding request of the engine
// (GenerationRequest::embed), run through the worker's step loop with the other work, and the
// answer lists their L2-normalized vectors as floats or base64 (the official clients' default).
#pragma once

#include <string>
#include <vector>

#include "server/engine_worker.h"
#include "server/http_exchange.h"
#include "server/openai_request.h"

namespace strata::server {

void handle_embeddings(EngineWorker& worker, const std::string& model_id, HttpExchange& exchange);

// The embeddings of `inputs` in input order, each input one embedding request of the worker's
// engine; what /v1/embeddings and ollama's /api/embed both run. Errors are the engine's (not
// loaded, busy, a refused or failed request), or kCancelled when the client left (the job is
// cancelled then; there is no one to answer).
struct Embeddings {
  std::vector<std::vector<float>> vectors;
  size_t prompt_tokens = 0;
};
Result<Embeddings> run_embeddings(EngineWorker& worker, const std::vector<PromptInput>& inputs,
                                  HttpExchange& exchange);

}  // namespace strata::server
