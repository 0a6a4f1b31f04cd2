// POST /v1/embeddings (OpenAI's shape): each input becomes one embedding request of the engine
// (GenerationRequest::embed), run through the worker's step loop with the other work, and the
// answer lists their L2-normalized vectors as floats or base64 (the official clients' default).
#pragma once

#include <string>

#include "server/engine_worker.h"
#include "server/http_exchange.h"

namespace strata::server {

void handle_embeddings(EngineWorker& worker, const std::string& model_id, HttpExchange& exchange);

}  // namespace strata::server
