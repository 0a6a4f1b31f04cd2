// An in-process strata server on a free port, for the server tests, and small HTTP helpers.
#pragma once

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/engine_worker.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace strata::server::testing {

inline const char* kModel = "../shared/models/stories260K.gguf";

struct TestServerConfig {
  int parallel = 4;
  int max_queue = 0;
  int context = 256;
  double timeout_s = 0;
  std::string api_key;
  size_t max_body_bytes = 8u << 20;
  std::chrono::milliseconds header_timeout{10'000};
  size_t max_connections = 0;  // 0: the server's default
  bool start_worker = true;    // false: the model is not loaded until start_worker() is called
};

class TestServer {
 public:
  explicit TestServer(const TestServerConfig& c = {}) : metrics_(60) {
    signal(SIGPIPE, SIG_IGN);  // a test client that hangs up must not kill the test binary
    WorkerOptions w;
    w.engine.model_path = kModel;
    w.engine.threads = 1;
    w.engine.context = c.context;
    w.engine.max_sequences = c.parallel;
    w.max_queue = c.max_queue;
    w.timeout_s = c.timeout_s;
    worker_ = std::make_unique<EngineWorker>(w, &metrics_);
    ServerOptions s;
    s.host = "127.0.0.1";
    s.port = 0;
    s.api_key = c.api_key;
    s.model_id = "stories";
    s.model_path = kModel;
    s.transport.max_body_bytes = c.max_body_bytes;
    s.transport.header_timeout = c.header_timeout;
    s.transport.max_connections = c.max_connections;
    http_ = std::make_unique<HttpServer>(s, *worker_, metrics_,
                                         static_cast<size_t>(c.parallel + c.max_queue + 24));
    ok_ = http_->bind().ok();
    if (ok_) listener_ = std::thread([this] { http_->listen(); });
    if (c.start_worker) start_worker();
  }
  ~TestServer() {
    http_->stop();
    if (listener_.joinable()) listener_.join();
    worker_->stop();
  }
  void start_worker() {
    worker_->start();
    ok_ = ok_ && worker_->wait_ready();
  }
  bool ok() const { return ok_; }
  int port() const { return http_->port(); }
  EngineWorker& worker() { return *worker_; }

  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
    c->set_read_timeout(120, 0);
    c->set_write_timeout(120, 0);
    return c;
  }

 private:
  Metrics metrics_;
  std::unique_ptr<EngineWorker> worker_;
  std::unique_ptr<HttpServer> http_;
  std::thread listener_;
  bool ok_ = false;
};

// The data payloads of a server-sent-event body, in order ("[DONE]" included).
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

// The value of the first sample of `name` (any labels) in a Prometheus text, or -1.
inline double metric_value(const std::string& text, const std::string& name) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    if (line.substr(0, name_end) != name) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

// Polls /metrics until no sequence runs and every KV page is free (or a bounded wait passes, so
// that a broken server fails the test instead of hanging it); returns the last scrape.
inline std::string wait_until_idle(const TestServer& server) {
  auto client = server.client();
  std::string text;
  for (int i = 0; i < 6000; ++i) {
    auto m = client->Get("/metrics");
    if (m) text = m->body;
    if (metric_value(text, "strata:num_requests_running") == 0 &&
        metric_value(text, "strata:kv_pages_used") == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return text;
}

}  // namespace strata::server::testing
