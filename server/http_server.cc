#include "server/http_server.h"

#include <malloc.h>
#include <strings.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "server/chat_page.h"
#include "server/completion_handler.h"
#include "server/embeddings_handler.h"
#include "server/http_errors.h"
#include "server/json_fields.h"
#include "server/ollama_handler.h"
#include "server/openai_request.h"
#include "strata/log.h"

namespace strata::server {
namespace {

using nlohmann::json;

// Compares without an early exit, so the time taken says nothing about how much matched.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
  return diff == 0 && !b.empty();
}

TransportOptions transport_options(TransportOptions t, size_t expected_streams) {
  // Each open stream holds a handler thread for its whole life; leave room beyond them for
  // scrapes, health checks and refused requests so that none of these waits behind the streams.
  if (t.handler_threads == 0) t.handler_threads = std::min<size_t>(expected_streams + 32, 1024);
  // Connections cost a socket and a timer until their deadlines close them; a cap well above the
  // handler threads keeps kept-alive clients and a burst of refused ones from crowding out new
  // clients, while bounding what a flood of idle connections can hold.
  if (t.max_connections == 0) t.max_connections = std::max<size_t>(4 * t.handler_threads, 256);
  return t;
}

}  // namespace

HttpServer::HttpServer(ServerOptions options, EngineWorker& worker, Metrics& metrics,
                       size_t expected_streams)
    : options_(std::move(options)),
      worker_(worker),
      metrics_(metrics),
      chat_template_(load_chat_template(options_.model_path, options_.chat_template)),
      cors_(options_.cors_origins),
      created_(static_cast<int64_t>(std::time(nullptr))) {
  options_.transport = transport_options(options_.transport, expected_streams);
  install_routes();
  transport_ = make_beast_transport(
      options_.transport,
      {[this](HttpExchange& exchange) { dispatch(exchange); },
       [this](int status, const std::string& target) { return refusal(status, target); }});
}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::bind() { return transport_->bind(options_.host, options_.port); }

void HttpServer::listen() { transport_->run(); }

void HttpServer::stop() { transport_->stop(); }

HttpResponse HttpServer::refusal(int status, const std::string& target) {
  metrics_.count_request(routes_.count(target) > 0 ? target : "other", status);
  HttpError e = refusal_error(status, options_.transport.max_body_bytes);
  HttpResponse response{e.status, "application/json", {}, std::move(e.body)};
  if (e.retry_after_s > 0)
    response.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return response;
}

bool HttpServer::authorized(const HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  // RFC 9110 §11.1: the scheme name is case-insensitive ("bearer" is as good as "Bearer").
  const std::string auth = request.header("Authorization");
  constexpr std::string_view kScheme = "bearer ";
  if (auth.size() < kScheme.size() ||
      strncasecmp(auth.data(), kScheme.data(), kScheme.size()) != 0) {
    return false;
  }
  return same_secret(auth.substr(kScheme.size()), options_.api_key);
}

void HttpServer::add(const std::string& method, const std::vector<std::string>& paths,
                     const HttpHandler& handler, bool needs_key) {
  for (const std::string& path : paths) routes_[path].push_back({method, needs_key, handler});
}

void HttpServer::dispatch(HttpExchange& transport_exchange) {
  const HttpRequest& request = transport_exchange.request();
  RoutedExchange exchange(transport_exchange, cors_.headers(request.header("Origin")));
  if (request.method == "OPTIONS" && cors_.enabled()) {
    exchange.respond(cors_.preflight(request));  // a browser's preflight: no key, no route
  } else {
    route(exchange);
  }
  if (exchange.status() == 0) {
    send(exchange, http_error(make_error(ErrorCode::kInternal, "the handler sent no response")));
  }
  log_line(LogLevel::kInfo, exchange.log_line(options_.log_format));
#ifdef __GLIBC__
  // The parse of a large body freed many small blocks that glibc keeps in its arenas; hand them
  // back so that RSS after a burst returns to where it was, not to the burst's peak.
  if (request.body.size() >= LargeBodyGate::kLargeBodyBytes) malloc_trim(0);
#endif
}

void HttpServer::route(HttpExchange& exchange) {
  const HttpRequest& request = exchange.request();
  for (std::string_view prefix : {"/v1/models/", "/models/"}) {
    if (!request.path.starts_with(prefix) || request.method != "GET") continue;
    if (!authorized(request)) {
      send(exchange, unauthorized_error());
    } else {
      answer_model(exchange, std::string_view(request.path).substr(prefix.size()));
    }
    metrics_.count_request("/v1/models/{id}", exchange.status());
    return;
  }
  const auto found = routes_.find(request.path);
  if (found == routes_.end()) {
    send(exchange, not_found_error(request.path));
  } else {
    const std::vector<Route>& routes = found->second;
    const auto route = std::find_if(routes.begin(), routes.end(),
                                    [&](const Route& r) { return r.method == request.method; });
    if (route == routes.end()) {
      std::string allowed;
      for (const Route& r : routes) allowed += (allowed.empty() ? "" : ", ") + r.method;
      HttpError e = method_not_allowed_error(request.method, request.path, allowed);
      exchange.respond({e.status, "application/json", {{"Allow", allowed}}, std::move(e.body)});
    } else if (route->needs_key && !authorized(request)) {
      send(exchange, unauthorized_error());
    } else {
      route->handler(exchange);
    }
  }
  metrics_.count_request(found != routes_.end() ? request.path : "other",
                         exchange.status() == 0 ? 500 : exchange.status());
}

void HttpServer::install_routes() {
  add(
      "GET", {"/health"}, [this](HttpExchange& ex) { answer_health(ex); }, /*needs_key=*/false);
  add(
      "GET", {"/metrics"}, [this](HttpExchange& ex) { answer_metrics(ex); },
      /*needs_key=*/false);
  add("GET", {"/v1/models", "/models"}, [this](HttpExchange& ex) { answer_models(ex); });
  add("POST", {"/v1/chat/completions", "/chat/completions"},
      [this](HttpExchange& ex) { answer_completion(ex, /*chat=*/true); });
  add("POST", {"/v1/completions", "/completions"},
      [this](HttpExchange& ex) { answer_completion(ex, /*chat=*/false); });
  add("POST", {"/v1/embeddings", "/embeddings"},
      [this](HttpExchange& ex) { handle_embeddings(worker_, options_.model_id, ex); });
  add("GET", {"/props"}, [this](HttpExchange& ex) { answer_props(ex); });
  add("GET", {"/slots"}, [this](HttpExchange& ex) { answer_slots(ex); });
  // ollama's API, for clients that speak it (server/ollama_handler.h).
  add("GET", {"/api/version"}, answer_ollama_version);
  add("GET", {"/api/tags"}, [this](HttpExchange& ex) { answer_ollama_tags(ollama(), ex); });
  add("POST", {"/api/show"}, [this](HttpExchange& ex) { answer_ollama_show(ollama(), ex); });
  add("POST", {"/api/generate"},
      [this](HttpExchange& ex) { handle_ollama_generate(ollama(), /*chat=*/false, ex); });
  add("POST", {"/api/chat"},
      [this](HttpExchange& ex) { handle_ollama_generate(ollama(), /*chat=*/true, ex); });
  add("POST", {"/api/embed"}, [this](HttpExchange& ex) { handle_ollama_embed(ollama(), ex); });
  add("POST", {"/tokenize"}, [this](HttpExchange& ex) { answer_tokenize(ex); });
  add("POST", {"/detokenize"}, [this](HttpExchange& ex) { answer_detokenize(ex); });
  add("GET", {"/", "/index.html"}, serve_chat_page, /*needs_key=*/false);
}

void HttpServer::answer_health(HttpExchange& ex) {
  switch (worker_.state()) {
    case EngineWorker::State::kReady:
      return respond_json(ex, {{"status", "ok"}});
    case EngineWorker::State::kLoading:
      return send(ex, http_error(make_error(ErrorCode::kUnavailable, "the model is loading")));
    default:
      return send(ex, http_error(make_error(ErrorCode::kUnavailable, "the server is not serving")));
  }
}

void HttpServer::answer_metrics(HttpExchange& ex) {
  ex.respond(
      {200, "text/plain; version=0.0.4; charset=utf-8", {}, metrics_.render(worker_.load())});
}

json HttpServer::model_object() const {
  json model = {{"id", options_.model_id},
                {"object", "model"},
                {"created", created_},
                {"owned_by", "strata"}};
  if (const Engine* e = worker_.engine()) {
    model["meta"] = {{"n_ctx", e->model().context},
                     {"n_vocab", e->model().n_vocab},
                     {"architecture", e->model().architecture}};
  }
  return model;
}

void HttpServer::answer_props(HttpExchange& ex) {
  const Engine* engine = worker_.engine();
  if (!engine) return send_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  const SamplingOptions& defaults = options_.sampling;  // what a request that sets nothing gets
  json props = {{"default_generation_settings",
                 {{"n_ctx", engine->model().context},
                  {"params",
                   {{"temperature", defaults.temperature},
                    {"top_k", defaults.top_k},
                    {"top_p", defaults.top_p},
                    {"min_p", defaults.min_p},
                    {"repeat_penalty", defaults.repeat_penalty},
                    {"repeat_last_n", defaults.repeat_last_n},
                    {"presence_penalty", defaults.presence_penalty},
                    {"frequency_penalty", defaults.frequency_penalty}}}}},
                {"total_slots", options_.total_slots},
                {"model_path", options_.model_path},
                {"modalities", {{"vision", false}, {"audio", false}}},
                {"build_info", "strata"}};
  if (chat_template_.ok()) {
    props["chat_template"] = chat_template_->source;
    props["bos_token"] = chat_template_->bos_token.value_or("");
    props["eos_token"] = chat_template_->eos_token.value_or("");
  }
  respond_json(ex, props);
}

void HttpServer::answer_slots(HttpExchange& ex) {
  const Engine* engine = worker_.engine();
  if (!engine) return send_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  // The worker's snapshot from its last step: admitted sequences fill the slots in the order
  // they started; the others are idle (requests still queued are not in a slot yet).
  const EngineLoad load = worker_.load();
  json slots = json::array();
  size_t next = 0;
  for (int id = 0; id < options_.total_slots; ++id) {
    while (next < load.sequences.size() &&
           std::string_view(load.sequences[next].state) == "waiting") {
      ++next;
    }
    json slot = {{"id", id}, {"n_ctx", engine->model().context}, {"speculative", false}};
    if (next == load.sequences.size()) {
      slot.update({{"id_task", -1}, {"is_processing", false}});
    } else {
      const EngineLoad::Sequence& s = load.sequences[next++];
      const size_t remain =
          s.max_length - std::min(s.max_length, s.prompt_tokens + s.generated_tokens);
      slot.update({{"id_task", s.id},
                   {"is_processing", true},
                   {"state", s.state},
                   {"embedding", s.embedding},
                   {"n_prompt_tokens", s.prompt_tokens},
                   {"n_prompt_tokens_cache", s.cached_tokens},
                   {"n_prompt_tokens_processed", std::min(s.computed_tokens, s.prompt_tokens)},
                   {"next_token",
                    {{"has_next_token", remain > 0},
                     {"n_decoded", s.generated_tokens},
                     {"n_remain", remain}}}});
    }
    slots.push_back(std::move(slot));
  }
  respond_json(ex, slots);
}

void HttpServer::answer_models(HttpExchange& ex) {
  respond_json(ex, {{"object", "list"}, {"data", json::array({model_object()})}});
}

void HttpServer::answer_model(HttpExchange& ex, std::string_view id) {
  if (id != options_.model_id) {
    return send_error(
        ex,
        make_error(ErrorCode::kNotFound, "the model '" + std::string(id) +
                                             "' does not exist; this server serves '" +
                                             options_.model_id + "'"),
        "model");
  }
  respond_json(ex, model_object());
}

void HttpServer::answer_completion(HttpExchange& ex, bool chat) {
  if (draining_.load()) {
    return send(ex, http_error(make_error(ErrorCode::kUnavailable, "the server is shutting down")));
  }
  ++in_flight_;
  handle_completion({worker_, chat_template_, options_.model_id, large_bodies_, options_.sampling},
                    chat, ex);
  --in_flight_;
}

void HttpServer::answer_tokenize(HttpExchange& ex) {
  std::variant<TokenizeRequest, RequestError> parsed = parse_tokenize_request(ex.request().body);
  if (auto* e = std::get_if<RequestError>(&parsed)) return send_error(ex, e->error, e->param);
  const Engine* engine = worker_.engine();
  if (!engine) return send_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
  json tokens = json::array();
  for (TokenId id : engine->tokenize(r.content, r.add_special, r.parse_special)) {
    if (r.with_pieces) {
      tokens.push_back({{"id", id}, {"piece", engine->token_piece(id)}});
    } else {
      tokens.push_back(id);
    }
  }
  respond_json(ex, {{"tokens", tokens}});
}

void HttpServer::answer_detokenize(HttpExchange& ex) {
  std::variant<DetokenizeRequest, RequestError> parsed =
      parse_detokenize_request(ex.request().body);
  if (auto* e = std::get_if<RequestError>(&parsed)) return send_error(ex, e->error, e->param);
  const Engine* engine = worker_.engine();
  if (!engine) return send_error(ex, make_error(ErrorCode::kUnavailable, "the model is loading"));
  const DetokenizeRequest& r = std::get<DetokenizeRequest>(parsed);
  for (TokenId id : r.tokens) {
    if (static_cast<size_t>(id) >= engine->model().n_vocab) {
      return send_error(
          ex,
          make_error(ErrorCode::kInvalidArgument,
                     "'tokens' holds " + std::to_string(id) + ", outside the vocabulary of " +
                         std::to_string(engine->model().n_vocab) + " tokens"),
          "tokens");
    }
  }
  respond_json(ex, {{"content", engine->detokenize(r.tokens)}});
}

void HttpServer::serve_chat_page(HttpExchange& ex) {
  ex.respond({200,
              "text/html; charset=utf-8",
              {},
              std::string(reinterpret_cast<const char*>(kChatPage), sizeof(kChatPage))});
}

}  // namespace strata::server
