// The HTTP face of the server (cpp-httplib): routes, API key, body-size limit, OpenAI-shaped
// errors, and chunked server-sent events that stop generating when the client goes away. It
// holds no engine state: requests go to the EngineWorker and events come back from it.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "server/engine_worker.h"
#include "server/metrics.h"
#include "strata/chat.h"
#include "strata/result.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace strata::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port (see port())
  std::string api_key;     // empty: no authentication
  std::string model_id;    // the id /v1/models lists and responses carry
  std::string model_path;  // for the chat template
  size_t max_body_bytes = 8u << 20;
  int http_threads = 0;  // 0: enough for every running and queued stream plus scrapes
};

class HttpServer {
 public:
  // `worker` and `metrics` must outlive the server. `expected_streams` sizes the thread pool:
  // each open stream holds one HTTP thread.
  HttpServer(ServerOptions options, EngineWorker& worker, Metrics& metrics,
             size_t expected_streams);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; afterwards port() is the real port.
  Status bind();
  int port() const { return port_; }
  // Serves until stop(); blocks the calling thread.
  void listen();
  // New generation requests get 503 from now on; requests in flight go on.
  void begin_drain() { draining_.store(true); }
  // Closes the socket and ends listen(); streams still open are cut.
  void stop();
  // Generation requests being answered (streams count until their last chunk is written).
  size_t in_flight() const { return in_flight_.load(); }

 private:
  void install_routes();
  // True when the request carries the API key (or none is set); else answers 401.
  bool authorized(const httplib::Request& req, httplib::Response& res) const;

  ServerOptions options_;
  EngineWorker& worker_;
  Metrics& metrics_;
  Result<ChatTemplateSource> chat_template_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  int listen_socket_ = -1;
  std::atomic<bool> draining_{false};
  std::atomic<size_t> in_flight_{0};
};

}  // namespace strata::server
