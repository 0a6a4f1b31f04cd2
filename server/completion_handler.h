// POST /v1/chat/completions and /v1/completions: validate, build the prompts, queue one engine
// sequence per choice, and answer with the whole response or a stream of SSE chunks.
#pragma once

#include <memory>
#include <string>

#include "server/engine_worker.h"
#include "strata/chat.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace strata::server {

struct CompletionContext {
  EngineWorker& worker;
  const Result<ChatTemplateSource>& chat_template;
  const std::string& model_id;
  // Released when the response is complete: a stream holds it until its last chunk.
  std::shared_ptr<void> in_flight;
};

void handle_completion(const CompletionContext& context, bool chat, const httplib::Request& req,
                       httplib::Response& res);

// Writes `error` as the response (status, OpenAI body, Retry-After for 503).
void send_error(httplib::Response& res, const Error& error, const std::string& param = "");

}  // namespace strata::server
