#include "server/http_errors.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace strata::server {
namespace {

using nlohmann::json;

struct Mapping {
  int status;
  const char* type;
  const char* code;
};

// OpenAI's error types: invalid_request_error (4xx the client can fix), authentication_error,
// server_error (5xx). `code` is a finer machine-readable reason.
Mapping mapping_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return {400, "invalid_request_error", "invalid_value"};
    case ErrorCode::kOutOfRange:
      return {400, "invalid_request_error", "context_length_exceeded"};
    case ErrorCode::kUnsupported:
      return {400, "invalid_request_error", "unsupported_value"};
    case ErrorCode::kNotFound:
      return {404, "invalid_request_error", "not_found"};
    case ErrorCode::kUnavailable:
      return {503, "server_error", "server_overloaded"};
    case ErrorCode::kDeadlineExceeded:
      return {503, "server_error", "timeout"};
    case ErrorCode::kCancelled:
      // nginx's 499: nobody reads it, but logs and metrics see why the request ended.
      return {499, "server_error", "cancelled"};
    case ErrorCode::kInvalidFile:
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      break;
  }
  return {500, "server_error", "internal_error"};
}

std::string body(const std::string& message, const char* type, const std::string& param,
                 const char* code) {
  json error = {{"message", message},
                {"type", type},
                {"param", param.empty() ? json(nullptr) : json(param)},
                {"code", code}};
  // Messages may quote client bytes that are not UTF-8; replace them rather than fail.
  return json{{"error", error}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

HttpError http_error(const Error& error, const std::string& param) {
  const Mapping m = mapping_for(error.code);
  HttpError out;
  out.status = m.status;
  out.body = body(error.message, m.type, param, m.code);
  if (m.status == 503) out.retry_after_s = kRetryAfterSeconds;
  return out;
}

HttpError unauthorized_error() {
  return {401,
          body("invalid or missing API key: send the header 'Authorization: Bearer <key>'",
               "authentication_error", "", "invalid_api_key"),
          0};
}

HttpError not_found_error(const std::string& path) {
  // llama-server's native routes, which clients written for it call: where strata has the same.
  static constexpr std::pair<const char*, const char*> kNative[] = {
      {"/completion", "/v1/completions"},
      {"/embedding", "/v1/embeddings"},
      {"/infill", "/v1/completions (no fill-in-the-middle)"},
      {"/v1/rerank", "/v1/embeddings (no reranking)"},
      {"/rerank", "/v1/embeddings (no reranking)"},
  };
  std::string message = "no such route: " + path;
  for (const auto& [native, instead] : kNative) {
    if (path == native) message += "; strata serves the OpenAI API: use " + std::string(instead);
  }
  return {404, body(message, "invalid_request_error", "", "not_found"), 0};
}

HttpError method_not_allowed_error(const std::string& method, const std::string& path,
                                   const std::string& allowed) {
  return {405,
          body(path + " does not take " + method + "; use " + allowed, "invalid_request_error", "",
               "method_not_allowed"),
          0};
}

HttpError refusal_error(int status, size_t max_body_bytes) {
  std::string message;
  switch (status) {
    case 408:
      message = "the request did not arrive in time; send the head and body without pausing";
      break;
    case 411:
      message = "a request body needs a Content-Length header or chunked Transfer-Encoding";
      break;
    case 413:
      message = "the request body is larger than the limit of " + std::to_string(max_body_bytes) +
                " bytes";
      break;
    case 414:
      message = "the request target is too long";
      break;
    case 415:
      message =
          "compressed request bodies (Content-Encoding) are not accepted; send the JSON as "
          "it is";
      break;
    case 431:
      message = "the request head has too many or too large header fields";
      break;
    case 501:
      message = "the only Transfer-Encoding accepted is chunked";
      break;
    case 503:
      message = "the server has too many open connections; retry shortly";
      break;
    default:
      message = "the request failed with HTTP status " + std::to_string(status);
  }
  const bool client = status < 500;
  const char* code = status == 413   ? "payload_too_large"
                     : status == 503 ? "server_overloaded"
                     : client        ? "bad_request"
                                     : "server_error";
  return {status, body(message, client ? "invalid_request_error" : "server_error", "", code),
          status == 503 ? kRetryAfterSeconds : 0};
}

void send(HttpExchange& exchange, const HttpError& error) {
  HttpResponse response{error.status, "application/json", {}, error.body};
  if (error.retry_after_s > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(error.retry_after_s));
  }
  exchange.respond(std::move(response));
}

void send_error(HttpExchange& exchange, const Error& error, const std::string& param) {
  send(exchange, http_error(error, param));
}

std::string error_json(const Error& error) {
  const Mapping m = mapping_for(error.code);
  return body(error.message, m.type, "", m.code);
}

}  // namespace strata::server
