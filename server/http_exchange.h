// One HTTP request and its answer as the server's handlers see them, independent of the library
// that speaks HTTP (server/http_transport.h). A handler reads the request and either answers it
// whole with respond() or opens a chunked stream; it runs on a thread of its own and may block.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string path;    // the target without its query
  std::string query;   // after '?', undecoded
  HttpHeaders headers;
  std::string body;  // de-chunked; at most the transport's body limit

  // The first value of the header `name` (compared without case), or "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HttpHeaders headers;  // beyond Content-Type and the framing the transport adds
  std::string body;
};

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest& request() const = 0;

  // Sends the whole response. False when the client is gone or stopped reading.
  virtual bool respond(HttpResponse response) = 0;
  // Sends the status line and headers of a response whose body follows in write() calls (chunked
  // in HTTP/1.1) and ends with end_stream(). `head.body` is ignored.
  virtual bool begin_stream(const HttpResponse& head) = 0;
  // False when the client is gone or stopped reading: stop producing.
  virtual bool write(std::string_view data) = 0;
  virtual bool end_stream() = 0;

  // True once the client has closed its connection (or the server is stopping), noticed without
  // writing: a handler that waits long before its first byte (a non-streamed completion) polls it
  // so that its work ends when nobody will read the answer.
  virtual bool client_gone() const = 0;
  // The flag behind client_gone(), for work that checks a flag instead of calling back (a
  // constraint's CompileBudget). Lives as long as the exchange.
  virtual const std::atomic<bool>* gone_flag() const = 0;
  // The status sent, or 0 while nothing has been sent.
  virtual int status() const = 0;

  // Fields a handler adds to the request's access-log line (server/request_log.h), e.g. token
  // counts; in the order added.
  void annotate(std::string key, std::string value) {
    annotations_.emplace_back(std::move(key), std::move(value));
  }
  const std::vector<std::pair<std::string, std::string>>& annotations() const {
    return annotations_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> annotations_;
};

using HttpHandler = std::function<void(HttpExchange&)>;

}  // namespace strata::server
