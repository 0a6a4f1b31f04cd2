#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "server/chat_page.h"
#include "server/completion_handler.h"
#include "server/http_errors.h"
#include "server/openai_request.h"

namespace strata::server {
namespace {

using nlohmann::json;

const std::set<std::string>& known_routes() {
  static const std::set<std::string> routes = {
      "/",         "/index.html",          "/health",           "/metrics",        "/v1/models",
      "/models",   "/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions",
      "/tokenize", "/detokenize"};
  return routes;
}

// Compares without an early exit, so the time taken says nothing about how much matched.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
  return diff == 0 && !b.empty();
}

void send(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  res.set_content(e.body, "application/json");
}

constexpr int kListenBacklog = 1024;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

HttpServer::HttpServer(ServerOptions options, EngineWorker& worker, Metrics& metrics,
                       size_t expected_streams)
    : options_(std::move(options)),
      worker_(worker),
      metrics_(metrics),
      chat_template_(load_chat_template(options_.model_path)),
      http_(std::make_unique<httplib::Server>()) {
  // Each open stream holds a thread for its whole life; leave room beyond them for scrapes,
  // health checks and refused requests so that none of these waits behind the streams.
  const size_t threads = options_.http_threads > 0 ? static_cast<size_t>(options_.http_threads)
                                                   : std::min<size_t>(expected_streams + 32, 1024);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  // httplib's own options (SO_REUSEADDR) plus noting the socket, whose listen backlog bind()
  // raises.
  http_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket_ = sock;
  });
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::bind() {
  const int port = options_.port == 0
                       ? http_->bind_to_any_port(options_.host)
                       : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port <= 0) {
    return make_error(ErrorCode::kIo, "cannot listen on " + options_.host + ":" +
                                          std::to_string(options_.port) +
                                          " (in use, or not an address of this machine)");
  }
  port_ = port;
  // httplib listens with a backlog of 5: a burst of clients connecting at once would overflow
  // it and see stalled or reset connections instead of a quick answer (a 503 at worst).
  if (listen_socket_ >= 0) ::listen(listen_socket_, kListenBacklog);
  return ok_status();
}

void HttpServer::listen() { http_->listen_after_bind(); }

void HttpServer::stop() {
  if (http_) http_->stop();
}

bool HttpServer::authorized(const httplib::Request& req, httplib::Response& res) const {
  if (options_.api_key.empty()) return true;
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (auth.rfind(prefix, 0) == 0 && same_secret(auth.substr(prefix.size()), options_.api_key)) {
    return true;
  }
  send(res, unauthorized_error());
  return false;
}

void HttpServer::install_routes() {
  httplib::Server& s = *http_;
  // The key is checked inside each protected handler, after httplib has read the body: a
  // request refused before that would leave its body in a kept-alive connection.
  auto guarded = [this](httplib::Server::Handler handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      if (authorized(req, res)) handler(req, res);
    };
  };

  // Statuses httplib sets itself (unknown route, body too large) get OpenAI-shaped bodies.
  s.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404) {
          send(res, not_found_error(req.path));
        } else if (res.status == 413) {
          send(res, payload_too_large_error(options_.max_body_bytes));
        } else {
          send(res, status_error(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));

  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const bool known = known_routes().count(req.path) > 0;
    metrics_.count_request(known ? req.path : "other", res.status);
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    switch (worker_.state()) {
      case EngineWorker::State::kReady:
        res.set_content(R"({"status":"ok"})", "application/json");
        return;
      case EngineWorker::State::kLoading:
        send(res, http_error(make_error(ErrorCode::kUnavailable, "the model is loading")));
        return;
      default:
        send(res, http_error(make_error(ErrorCode::kUnavailable, "the server is not serving")));
    }
  });

  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(worker_.load()), "text/plain; version=0.0.4; charset=utf-8");
  });

  auto models = [this](const httplib::Request&, httplib::Response& res) {
    json model = {
        {"id", options_.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "strata"}};
    if (const Engine* e = worker_.engine()) {
      model["meta"] = {{"n_ctx", e->model().context},
                       {"n_vocab", e->model().n_vocab},
                       {"architecture", e->model().architecture}};
    }
    res.set_content(dump({{"object", "list"}, {"data", json::array({model})}}), "application/json");
  };
  s.Get("/v1/models", guarded(models));
  s.Get("/models", guarded(models));

  auto completion = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      if (draining_.load()) {
        return send(res,
                    http_error(make_error(ErrorCode::kUnavailable, "the server is shutting down")));
      }
      ++in_flight_;
      std::shared_ptr<void> guard(nullptr, [this](void*) { --in_flight_; });
      handle_completion({worker_, chat_template_, options_.model_id, std::move(guard)}, chat, req,
                        res);
    };
  };
  s.Post("/v1/chat/completions", guarded(completion(true)));
  s.Post("/chat/completions", guarded(completion(true)));
  s.Post("/v1/completions", guarded(completion(false)));
  s.Post("/completions", guarded(completion(false)));

  s.Post("/tokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
           std::variant<TokenizeRequest, RequestError> parsed = parse_tokenize_request(req.body);
           if (auto* e = std::get_if<RequestError>(&parsed))
             return send_error(res, e->error, e->param);
           const Engine* engine = worker_.engine();
           if (!engine)
             return send_error(res, make_error(ErrorCode::kUnavailable, "the model is loading"));
           const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
           json tokens = json::array();
           for (TokenId id : engine->tokenize(r.content, r.add_special, r.parse_special)) {
             if (r.with_pieces) {
               tokens.push_back({{"id", id}, {"piece", engine->token_piece(id)}});
             } else {
               tokens.push_back(id);
             }
           }
           res.set_content(dump({{"tokens", tokens}}), "application/json");
         }));

  s.Post(
      "/detokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
        std::variant<DetokenizeRequest, RequestError> parsed = parse_detokenize_request(req.body);
        if (auto* e = std::get_if<RequestError>(&parsed))
          return send_error(res, e->error, e->param);
        const Engine* engine = worker_.engine();
        if (!engine)
          return send_error(res, make_error(ErrorCode::kUnavailable, "the model is loading"));
        const DetokenizeRequest& r = std::get<DetokenizeRequest>(parsed);
        for (TokenId id : r.tokens) {
          if (static_cast<size_t>(id) >= engine->model().n_vocab) {
            return send_error(
                res,
                make_error(ErrorCode::kInvalidArgument,
                           "'tokens' holds " + std::to_string(id) + ", outside the vocabulary of " +
                               std::to_string(engine->model().n_vocab) + " tokens"),
                "tokens");
          }
        }
        res.set_content(dump({{"content", engine->detokenize(r.tokens)}}), "application/json");
      }));

  auto page = [](const httplib::Request&, httplib::Response& res) {
    res.set_content(reinterpret_cast<const char*>(kChatPage), sizeof(kChatPage),
                    "text/html; charset=utf-8");
  };
  s.Get("/", page);
  s.Get("/index.html", page);
}

}  // namespace strata::server
