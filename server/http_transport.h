// The thin adapter between the server and the library that speaks HTTP/1.1 (Boost.Beast on Asio,
// in beast_transport.cc, the only file that includes it). The transport owns sockets, framing and
// every limit that protects the process before a request reaches a handler:
//  - connections: at most `max_connections` open; past it a new one gets a fast 503 and is closed;
//  - time: the request head must arrive within `header_timeout` of its first byte, the body within
//    `body_timeout`, an idle kept-alive connection is closed after `idle_timeout`, and a client
//    that stops reading a response fails the handler's writes after `write_timeout` (so slow
//    clients hold a socket for a bounded time, never a handler thread);
//  - size: the head at most `max_header_bytes` and `max_header_fields` (431), the body at most
//    `max_body_bytes` whether sized or chunked (413);
//  - framing: a body needs Content-Length or chunked (411), one Content-Length only, no
//    Content-Encoding (415: a small compressed body must not inflate past the limit), no other
//    Transfer-Encoding (501).
// Pipelined requests are answered in order. Handlers run on a pool of `handler_threads`.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/http_exchange.h"
#include "strata/result.h"

namespace strata::server {

struct TransportOptions {
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 32u << 10;
  size_t max_header_fields = 100;
  size_t max_target_bytes = 8u << 10;
  size_t max_connections = 512;
  size_t handler_threads = 32;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{30'000};
  std::chrono::milliseconds write_timeout{30'000};
};

struct TransportHooks {
  // Answers a complete request (on a handler thread).
  HttpHandler handle;
  // The response for a request the transport refuses itself (status 400, 408, 411, 413, 415, 431,
  // 501, 503); `target` is the request's path when its head was read, else "".
  std::function<HttpResponse(int status, const std::string& target)> refusal;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Binds and listens; port 0 takes any free port, which port() then tells.
  virtual Status bind(const std::string& host, int port) = 0;
  virtual int port() const = 0;
  // Serves until stop(); blocks the calling thread.
  virtual void run() = 0;
  // Closes the listening socket and every connection (handlers see client_gone() and failed
  // writes), waits for the handlers to return, then ends run(). Idempotent; any thread.
  virtual void stop() = 0;
};

std::unique_ptr<HttpTransport> make_beast_transport(TransportOptions options, TransportHooks hooks);

// Reads the requests in `bytes` with the limits and refusals a connection applies (no deadlines:
// there is no clock in a buffer), passing each complete one to `on_request`. Returns the status
// that refused the input, or 0 when it was all taken (it may end inside a request). The fuzz
// target and the framing tests drive the parser through this.
int parse_requests(std::string_view bytes, const TransportOptions& options,
                   const std::function<void(HttpRequest&&)>& on_request);

}  // namespace strata::server
