// The one place where a strata Error becomes an HTTP status and an OpenAI-shaped error body:
// {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

#include "server/http_exchange.h"
#include "strata/result.h"

namespace strata::server {

struct HttpError {
  int status = 500;
  std::string body;       // JSON text
  int retry_after_s = 0;  // > 0: send a Retry-After header (503)
};

// Seconds a client told "busy" should wait before it tries again.
inline constexpr int kRetryAfterSeconds = 1;

// A request-level error for `error`, naming `param` (the request field at fault) when known.
HttpError http_error(const Error& error, const std::string& param = "");

// Errors that have no strata ErrorCode: authentication and routing.
HttpError unauthorized_error();
HttpError not_found_error(const std::string& path);
HttpError method_not_allowed_error(const std::string& method, const std::string& path,
                                   const std::string& allowed);
// A request the HTTP transport refused before routing (400, 408, 411, 413, 414, 415, 431, 501,
// 503 when every connection is taken), saying what the client should change.
HttpError refusal_error(int status, size_t max_body_bytes);

// Answers the exchange with `error` (its status, OpenAI body, and Retry-After for 503).
void send(HttpExchange& exchange, const HttpError& error);
void send_error(HttpExchange& exchange, const Error& error, const std::string& param = "");

// The error object alone ({"error": {...}}) for an SSE chunk sent after the stream has begun.
std::string error_json(const Error& error);

}  // namespace strata::server
