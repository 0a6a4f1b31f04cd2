#include "server/embeddings_handler.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "server/http_errors.h"
#include "server/json_fields.h"

namespace strata::server {

namespace {

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

Result<Embeddings> run_embeddings(EngineWorker& worker, const std::vector<PromptInput>& inputs,
                                  HttpExchange& exchange) {
  const Clock::time_point arrival = Clock::now();
  const Engine* engine = worker.engine();
  if (!engine) return make_error(ErrorCode::kUnavailable, "the model is still loading");
  Embeddings out;
  std::vector<GenerationRequest> requests(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    requests[i].embed = true;
    requests[i].prompt = inputs[i].is_tokens
                             ? inputs[i].tokens
                             : engine->tokenize(inputs[i].text, /*add_special=*/true,
                                                /*parse_special=*/false);
    out.prompt_tokens += requests[i].prompt.size();
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Job> job, worker.enqueue(std::move(requests), arrival));
  STRATA_RETURN_IF_ERROR(job->wait_submitted());
  out.vectors.resize(inputs.size());
  ChoiceEvent e;
  for (size_t done = 0; done < inputs.size();) {
    if (exchange.client_gone()) {
      job->cancel();
      return make_error(ErrorCode::kCancelled, "the client left");
    }
    if (!job->next(e, kEventWait) || e.event.finish == FinishReason::kNone) continue;
    if (e.event.finish != FinishReason::kStop) {
      job->cancel();
      return e.event.finish == FinishReason::kError
                 ? make_error(e.event.error_code, e.event.error)
                 : make_error(ErrorCode::kUnavailable, "the request was cancelled by the server");
    }
    out.vectors[e.choice] = std::move(e.event.embedding);
    ++done;
  }
  return out;
}

void handle_embeddings(EngineWorker& worker, const std::string& model_id, HttpExchange& exchange) {
  std::variant<EmbeddingsRequest, RequestError> parsed =
      parse_embeddings_request(exchange.request().body);
  if (auto* e = std::get_if<RequestError>(&parsed)) return send_error(exchange, e->error, e->param);
  const EmbeddingsRequest& request = std::get<EmbeddingsRequest>(parsed);
  Result<Embeddings> embeddings = run_embeddings(worker, request.inputs, exchange);
  if (!embeddings.ok()) {
    if (embeddings.error().code == ErrorCode::kCancelled) return;
    // Refusals of the input itself (too many, too long) name it.
    const ErrorCode code = embeddings.error().code;
    const bool input = code == ErrorCode::kInvalidArgument || code == ErrorCode::kOutOfRange;
    return send_error(exchange, embeddings.error(), input ? "input" : "");
  }
  json data = json::array();
  for (size_t i = 0; i < embeddings->vectors.size(); ++i) {
    const std::vector<float>& v = embeddings->vectors[i];
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", request.base64 ? json(base64_floats(v)) : json(v)}});
  }
  const size_t tokens = embeddings->prompt_tokens;
  exchange.annotate("prompt_tokens", std::to_string(tokens));
  respond_json(exchange, {{"object", "list"},
                          {"data", std::move(data)},
                          {"model", request.model.empty() ? model_id : request.model},
                          {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

}  // namespace strata::server
