#include "server/embeddings_handler.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "server/http_errors.h"
#include "server/openai_request.h"

namespace strata::server {

namespace {

using nlohmann::json;

constexpr std::chrono::milliseconds kEventWait{100};

// RFC 4648 base64 of the vector's little-endian float32 bytes, as OpenAI encodes embeddings.
std::string base64_floats(const std::vector<float>& v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t{bytes[i]} << 16 |
                       (i + 1 < bytes.size() ? uint32_t{bytes[i + 1]} << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t{bytes[i + 2]} : 0);
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace

void handle_embeddings(EngineWorker& worker, const std::string& model_id, HttpExchange& exchange) {
  const Clock::time_point arrival = Clock::now();
  std::variant<EmbeddingsRequest, RequestError> parsed =
      parse_embeddings_request(exchange.request().body);
  if (auto* e = std::get_if<RequestError>(&parsed)) return send_error(exchange, e->error, e->param);
  const EmbeddingsRequest& request = std::get<EmbeddingsRequest>(parsed);
  const Engine* engine = worker.engine();
  if (!engine) {
    return send_error(exchange, make_error(ErrorCode::kUnavailable, "the model is still loading"));
  }
  std::vector<GenerationRequest> inputs(request.inputs.size());
  size_t prompt_tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PromptInput& p = request.inputs[i];
    inputs[i].embed = true;
    inputs[i].prompt = p.is_tokens ? p.tokens
                                   : engine->tokenize(p.text, /*add_special=*/true,
                                                      /*parse_special=*/false);
    prompt_tokens += inputs[i].prompt.size();
  }
  Result<std::shared_ptr<Job>> job = worker.enqueue(std::move(inputs), arrival);
  if (!job.ok()) {
    const bool too_large = job.error().code == ErrorCode::kInvalidArgument;
    return send_error(exchange, job.error(), too_large ? "input" : "");
  }
  Status submitted = (*job)->wait_submitted();
  if (!submitted.ok()) return send_error(exchange, submitted.error(), "input");

  std::vector<std::vector<float>> vectors(request.inputs.size());
  size_t n_done = 0;
  ChoiceEvent e;
  while (n_done < vectors.size()) {
    if (exchange.client_gone()) return (*job)->cancel();
    if (!(*job)->next(e, kEventWait) || e.event.finish == FinishReason::kNone) continue;
    if (e.event.finish != FinishReason::kStop) {
      (*job)->cancel();
      const Error error =
          e.event.finish == FinishReason::kError
              ? make_error(e.event.error_code, e.event.error)
              : make_error(ErrorCode::kUnavailable, "the request was cancelled by the server");
      return send_error(exchange, error);
    }
    vectors[e.choice] = std::move(e.event.embedding);
    ++n_done;
  }
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    item["embedding"] = request.base64 ? json(base64_floats(vectors[i])) : json(vectors[i]);
    data.push_back(std::move(item));
  }
  const json body = {
      {"object", "list"},
      {"data", std::move(data)},
      {"model", request.model.empty() ? model_id : request.model},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  exchange.annotate("prompt_tokens", std::to_string(prompt_tokens));
  exchange.respond({200, "application/json", {}, body.dump()});
}

}  // namespace strata::server
