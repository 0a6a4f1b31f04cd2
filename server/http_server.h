// The routes of the server: which handler answers which method and path, the API key, and
// OpenAI-shaped errors for everything the transport or a route refuses. It holds no engine
// state (requests go to the EngineWorker, events come back from it) and no socket (the
// transport, server/http_transport.h, owns connections and their limits).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/completion_handler.h"
#include "server/engine_worker.h"
#include "server/http_exchange.h"
#include "server/http_transport.h"
#include "server/metrics.h"
#include "server/ollama_handler.h"
#include "server/request_log.h"
#include "strata/chat.h"
#include "strata/result.h"

namespace strata::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port (see port())
  std::string api_key;     // empty: no authentication
  std::string model_id;    // the id /v1/models lists and responses carry
  std::string model_path;  // for the chat template
  // Browser origins allowed to call the API (--cors-origins; "*" for any); empty for none.
  std::vector<std::string> cors_origins;
  LogFormat log_format = LogFormat::kText;  // of the access log (info level: --log-level)
  int total_slots = 1;                      // sequences decoded at once (--parallel), for /props
  // What requests get for the sampling fields they do not set (--temp, --top-k, ...).
  SamplingOptions sampling;
  // --chat-template: "chatml" or a Jinja file replacing the model's template; empty: the model's.
  std::string chat_template;
  // Connection limits and deadlines; handler_threads 0 means enough for every running and queued
  // stream plus scrapes, max_connections 0 means four times the handler threads (at least 256).
  TransportOptions transport = [] {
    TransportOptions t;
    t.handler_threads = 0;
    t.max_connections = 0;
    return t;
  }();
};

class HttpServer {
 public:
  // `worker` and `metrics` must outlive the server. `expected_streams` sizes the handler pool:
  // each open stream holds one handler thread.
  HttpServer(ServerOptions options, EngineWorker& worker, Metrics& metrics,
             size_t expected_streams);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; afterwards port() is the real port.
  Status bind();
  int port() const { return transport_->port(); }
  // Serves until stop(); blocks the calling thread.
  void listen();
  // New generation requests get 503 from now on; requests in flight go on.
  void begin_drain() { draining_.store(true); }
  // Closes the socket and ends listen(); streams still open are cut.
  void stop();
  // Generation requests being answered (streams count until their last chunk is written).
  size_t in_flight() const { return in_flight_.load(); }

 private:
  struct Route {
    std::string method;
    bool needs_key = true;
    HttpHandler handler;
  };
  void install_routes();
  // The routes' handlers, one per endpoint.
  void answer_health(HttpExchange& ex);
  void answer_metrics(HttpExchange& ex);
  void answer_models(HttpExchange& ex);
  // GET /props, llama-server's: the context, slots, default sampling and chat template.
  void answer_props(HttpExchange& ex);
  // GET /slots, llama-server's: per slot (--parallel), the request it runs and its progress.
  void answer_slots(HttpExchange& ex);
  // GET /v1/models/{id}: the model when id is the served one, else 404.
  void answer_model(HttpExchange& ex, std::string_view id);
  nlohmann::json model_object() const;
  // Routes by exact path, and /v1/models/{id}.
  void route(HttpExchange& exchange);
  // Both completion endpoints: `chat` for /v1/chat/completions. 503 once draining.
  void answer_completion(HttpExchange& ex, bool chat);
  void answer_tokenize(HttpExchange& ex);
  void answer_detokenize(HttpExchange& ex);
  static void serve_chat_page(HttpExchange& ex);
  void add(const std::string& method, const std::vector<std::string>& paths,
           const HttpHandler& handler, bool needs_key = true);
  // Routes one request: 404, 405, 401 or the route's handler; counts it in the metrics.
  void dispatch(HttpExchange& exchange);
  // The response for a request the transport refused before routing (too large, too slow, ...).
  HttpResponse refusal(int status, const std::string& target);
  bool authorized(const HttpRequest& request) const;

  ServerOptions options_;
  EngineWorker& worker_;
  Metrics& metrics_;
  Result<ChatTemplateSource> chat_template_;
  OllamaContext ollama() {
    return {worker_, chat_template_, options_.model_id, options_.model_path, options_.sampling};
  }
  std::unordered_map<std::string, std::vector<Route>> routes_;  // by path
  LargeBodyGate large_bodies_;
  std::unique_ptr<HttpTransport> transport_;
  std::atomic<bool> draining_{false};
  std::atomic<size_t> in_flight_{0};
  CorsPolicy cors_;
  int64_t created_;  // the models' `created`: when the server started, in Unix seconds
};

}  // namespace strata::server
