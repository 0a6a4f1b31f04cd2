// The one place where a strata Error becomes an HTTP status and an OpenAI-shaped error body:
// {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

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

// Errors that have no strata ErrorCode: authentication, routing, body size.
HttpError unauthorized_error();
HttpError not_found_error(const std::string& path);
HttpError payload_too_large_error(size_t limit_bytes);
// Any other status the HTTP library set on its own (e.g. 400 for a malformed request line).
HttpError status_error(int status);

// The error object alone ({"error": {...}}) for an SSE chunk sent after the stream has begun.
std::string error_json(const Error& error);

}  // namespace strata::server
