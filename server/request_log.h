// What the server adds around every routed request: CORS headers for the browser origins it
// serves (--cors-origins) and one access-log line when the request ends (--log-format).
//
// Both wrap the transport's exchange (RoutedExchange) rather than living in each handler: CORS
// headers must be on every response, whole or streamed, and the log line needs the status and
// the duration, known only at the end. Handlers add fields to the log line (token counts, time to
// first token) through HttpExchange::annotate.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_exchange.h"

namespace strata::server {

// The origins allowed to call the API from a browser: exact origins ("https://app.example"), or
// "*" for any. Empty: no CORS headers (browsers refuse cross-origin reads).
class CorsPolicy {
 public:
  CorsPolicy() = default;
  explicit CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {}

  bool enabled() const { return !origins_.empty(); }
  // The headers of a response to a request from `origin` (none when it is not allowed).
  HttpHeaders headers(std::string_view origin) const;
  // The answer to a preflight (OPTIONS with Access-Control-Request-Method): 204 with the allowed
  // methods and headers for an allowed origin, 403 otherwise.
  HttpResponse preflight(const HttpRequest& request) const;

 private:
  bool allows(std::string_view origin) const;
  std::vector<std::string> origins_;
};

enum class LogFormat { kText, kJson };

// The transport's exchange with CORS headers on every response it sends and the log line when
// it is done.
class RoutedExchange : public HttpExchange {
 public:
  RoutedExchange(HttpExchange& inner, HttpHeaders extra_headers)
      : inner_(inner), extra_(std::move(extra_headers)), start_(std::chrono::steady_clock::now()) {}

  const HttpRequest& request() const override { return inner_.request(); }
  bool respond(HttpResponse response) override;
  bool begin_stream(const HttpResponse& head) override;
  bool write(std::string_view data) override { return inner_.write(data); }
  bool end_stream() override { return inner_.end_stream(); }
  bool client_gone() const override { return inner_.client_gone(); }
  const std::atomic<bool>* gone_flag() const override { return inner_.gone_flag(); }
  int status() const override { return inner_.status(); }

  // The access-log line: time, method, path, status, duration and the handler's annotations.
  std::string log_line(LogFormat format) const;

 private:
  HttpExchange& inner_;
  HttpHeaders extra_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace strata::server
