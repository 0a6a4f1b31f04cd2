// HttpTransport on Boost.Beast and Asio. One I/O thread runs every socket operation
// asynchronously, so a slow or silent client costs a socket and a timer, never a thread; complete
// requests go to a pool of handler threads (handler_pool.h), whose writes are posted back to the
// connection's strand and waited for. Why each limit exists is said in http_transport.h.
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "server/handler_pool.h"
#include "server/http_transport.h"

namespace strata::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

// A refused client gets this long to take its error response, and the bytes it was still sending
// are read and dropped for at most this long and this much, so that it sees the response instead
// of a connection reset (nginx's lingering close).
constexpr auto kRefusalTimeout = 2s;
constexpr size_t kLingerBytes = 16u << 20;
// Between accept() failures (out of file descriptors): retry soon, without spinning.
constexpr auto kAcceptRetry = 50ms;
// Room in the read buffer beyond the head: what one read may bring of the body or a pipelined
// request.
constexpr size_t kReadBufferBytes = 1u << 20;

bool equals_ignoring_case(std::string_view a, std::string_view b) { return beast::iequals(a, b); }

// Counted again when the request is complete: a chunked body's trailer adds fields after the head.
bool too_many_fields(const http::fields& fields, const TransportOptions& options) {
  return static_cast<size_t>(std::distance(fields.begin(), fields.end())) >
         options.max_header_fields;
}

// The status that refuses a request whose head was read (0: go on and read the body).
int check_head(const http::request_parser<http::string_body>& parser,
               const TransportOptions& options) {
  const auto& head = parser.get();
  if (head.target().size() > options.max_target_bytes) return 414;
  if (too_many_fields(head, options)) return 431;
  // Two Content-Length fields, even equal ones, are how request smuggling begins.
  if (head.count(http::field::content_length) > 1) return 400;
  const std::string_view encoding = head[http::field::content_encoding];
  if (!encoding.empty() && !equals_ignoring_case(encoding, "identity")) return 415;
  if (head.count(http::field::transfer_encoding) > 0 && !parser.chunked()) return 501;
  const bool has_body_method = head.method() == http::verb::post ||
                               head.method() == http::verb::put ||
                               head.method() == http::verb::patch;
  if (has_body_method && !parser.content_length() && !parser.chunked()) return 411;
  return 0;
}

// The status that answers a failed read (0: nobody to answer: the client closed mid-request or
// the server is stopping).
int status_for_read_error(beast::error_code ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) return 431;
  if (ec == http::error::body_limit) return 413;
  if (ec == beast::error::timeout) return 408;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == http::error::need_more ||
      ec.category() != http::make_error_code(http::error::end_of_stream).category()) {
    return 0;
  }
  return 400;
}

HttpRequest to_request(http::request<http::string_body>&& message) {
  HttpRequest request;
  const std::string_view target = message.target();
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
  request.method = std::string(message.method_string());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  return request;
}

// A whole response as Beast writes it: status, Content-Type, the handler's headers, the body and
// its Content-Length.
std::shared_ptr<http::response<http::string_body>> to_message(HttpResponse&& r, unsigned version,
                                                              bool keep_alive) {
  auto res = std::make_shared<http::response<http::string_body>>(
      static_cast<http::status>(r.status), version);
  res->set(http::field::content_type, r.content_type);
  for (const auto& [name, value] : r.headers) res->set(name, value);
  res->body() = std::move(r.body);
  res->keep_alive(keep_alive);
  res->prepare_payload();
  return res;
}

class BeastTransport;

// One client connection: reads requests one after another (pipelined ones in order), hands each
// complete one to a handler thread, and is the HttpExchange that handler answers through. Every
// socket operation runs on the connection's strand.
class Connection final : public std::enable_shared_from_this<Connection>, public HttpExchange {
 public:
  Connection(tcp::socket socket, BeastTransport& transport);
  ~Connection() override;

  void start();
  void refuse_at_once(int status) { refuse(status); }
  // Any thread: handlers see client_gone() at once; the socket closes on the strand.
  void close();

  const HttpRequest& request() const override { return request_; }
  bool respond(HttpResponse response) override;
  bool begin_stream(const HttpResponse& head) override;
  bool write(std::string_view data) override;
  bool end_stream() override;
  bool client_gone() const override { return gone_.load(); }
  const std::atomic<bool>* gone_flag() const override { return &gone_; }
  int status() const override { return status_.load(); }

 private:
  using Done = std::function<void(beast::error_code)>;

  void wait_for_request(bool first);
  void read_head();
  void on_head(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void serve();
  void after_exchange();
  void watch_for_close();
  void refuse_for(beast::error_code ec);
  void refuse(int status);
  void linger_then_close();
  void shutdown();
  // Runs `start` (which begins one write and calls its Done) on the strand and waits for it; false
  // when it failed or the client is gone. Handler threads only.
  bool blocking(std::function<void(Done)> start);

  BeastTransport& transport_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{kReadBufferBytes};
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool chunked_ = false;    // the open stream frames its writes as chunks
  bool streaming_ = false;  // begin_stream() was called and end_stream() not yet
  std::atomic<bool> gone_{false};
  std::atomic<int> status_{0};
  std::vector<char> linger_;
};

class BeastTransport final : public HttpTransport {
 public:
  BeastTransport(TransportOptions options, TransportHooks hooks)
      : options_(options), hooks_(std::move(hooks)), pool_(options.handler_threads) {}
  ~BeastTransport() override {
    try {
      stop();
    } catch (const std::exception&) {
      // Joining a thread failed at exit: nothing is left to serve, and nothing to tell.
    }
  }

  Status bind(const std::string& host, int port) override;
  int port() const override { return port_; }
  void run() override;
  void stop() override;

  const TransportOptions& options() const { return options_; }
  const TransportHooks& hooks() const { return hooks_; }
  HandlerPool& pool() { return pool_; }
  bool stopping() const { return stopping_.load(); }
  bool io_stopped() const { return ioc_.stopped(); }

  void opened(Connection* c, const std::shared_ptr<Connection>& shared) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_[c] = shared;
  }
  void closed(Connection* c) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(c);
    --connections_;
  }

 private:
  void accept();

  const TransportOptions options_;
  const TransportHooks hooks_;
  // Declared before the I/O context: connections that context still holds when it is destroyed
  // unregister themselves here.
  std::mutex mutex_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> live_;
  std::atomic<size_t> connections_{0};
  std::atomic<bool> stopping_{false};
  std::once_flag stop_once_;

  net::io_context ioc_{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{
      net::make_work_guard(ioc_)};
  tcp::acceptor acceptor_{ioc_};
  net::steady_timer accept_retry_{ioc_};
  int port_ = 0;
  HandlerPool pool_;
};

Connection::Connection(tcp::socket socket, BeastTransport& transport)
    : transport_(transport), stream_(std::move(socket)) {}

Connection::~Connection() { transport_.closed(this); }

void Connection::start() {
  transport_.opened(this, shared_from_this());
  if (transport_.stopping()) return shutdown();
  wait_for_request(/*first=*/true);
}

void Connection::close() {
  gone_ = true;
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->shutdown(); });
}

// Waits for the first byte of a request: the idle timeout applies between kept-alive requests,
// the head's own deadline from the first byte on.
void Connection::wait_for_request(bool first) {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(transport_.options().max_header_bytes));
  parser_->body_limit(transport_.options().max_body_bytes);
  if (buffer_.size() > 0) return read_head();
  stream_.expires_after(first ? transport_.options().header_timeout
                              : transport_.options().idle_timeout);
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this()](beast::error_code ec, size_t n) {
                            self->stream_.expires_never();
                            if (ec) return self->shutdown();  // idle, or the client left
                            self->buffer_.commit(n);
                            self->read_head();
                          });
}

void Connection::read_head() {
  stream_.expires_after(transport_.options().header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            self->stream_.expires_never();
                            self->on_head(ec);
                          });
}

void Connection::on_head(beast::error_code ec) {
  if (ec) return refuse_for(ec);
  const auto& head = parser_->get();
  request_ = HttpRequest{};
  request_.path = std::string(head.target().substr(0, head.target().find('?')));  // for metrics
  version_ = head.version();

  const TransportOptions& o = transport_.options();
  if (const int refused = check_head(*parser_, o); refused != 0) return refuse(refused);

  if (equals_ignoring_case(head[http::field::expect], "100-continue")) {
    auto interim =
        std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
    stream_.expires_after(o.write_timeout);
    return http::async_write(stream_, *interim,
                             [self = shared_from_this(), interim](beast::error_code ec, size_t) {
                               self->stream_.expires_never();
                               if (ec) return self->shutdown();
                               self->read_body();
                             });
  }
  read_body();
}

void Connection::read_body() {
  stream_.expires_after(transport_.options().body_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     self->stream_.expires_never();
                     self->on_body(ec);
                   });
}

void Connection::on_body(beast::error_code ec) {
  if (ec) return refuse_for(ec);
  if (too_many_fields(parser_->get(), transport_.options())) return refuse(431);
  http::request<http::string_body> message = parser_->release();
  parser_.reset();
  keep_alive_ = message.keep_alive();
  request_ = to_request(std::move(message));
  status_ = 0;
  streaming_ = false;
  watch_for_close();
  transport_.pool().post([self = shared_from_this()] { self->serve(); });
}

// On a handler thread: the handler answers, then the connection goes back to reading.
void Connection::serve() {
  transport_.hooks().handle(*this);
  if (status_ == 0) {
    HttpResponse fallback = transport_.hooks().refusal(500, request_.path);
    respond(std::move(fallback));
  } else if (streaming_) {
    end_stream();
  }
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->after_exchange(); });
}

void Connection::after_exchange() {
  beast::error_code ignored;
  stream_.socket().cancel(ignored);  // ends watch_for_close()
  request_ = HttpRequest{};
  if (gone_ || !keep_alive_ || transport_.stopping()) return shutdown();
  wait_for_request(/*first=*/false);
}

// While a handler works, a readable socket means either the client closed it (recv() peeks 0
// bytes, or fails) or its next pipelined request arrived (which stays in the socket for
// wait_for_request()).
void Connection::watch_for_close() {
  stream_.socket().async_wait(
      tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
        if (ec == net::error::operation_aborted) return;
        if (ec) {
          self->gone_ = true;
          return;
        }
        char byte = 0;
        const ssize_t n =
            ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) self->gone_ = true;
      });
}

void Connection::refuse_for(beast::error_code ec) {
  const int status = status_for_read_error(ec);
  if (status == 0) return shutdown();
  refuse(status);
}

void Connection::refuse(int status) {
  HttpResponse r = transport_.hooks().refusal(status, request_.path);
  status_ = r.status;
  auto res = to_message(std::move(r), version_ >= 10 ? version_ : 11, /*keep_alive=*/false);
  stream_.expires_after(kRefusalTimeout);
  http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
    self->stream_.expires_never();
    if (ec) return self->shutdown();
    self->linger_then_close();
  });
}

void Connection::linger_then_close() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  linger_.resize(64u << 10);
  stream_.expires_after(kRefusalTimeout);
  auto drained = std::make_shared<size_t>(0);
  auto drain = std::make_shared<std::function<void()>>();
  *drain = [self = shared_from_this(), drained, drain] {
    self->stream_.async_read_some(
        net::buffer(self->linger_), [self, drained, drain](beast::error_code ec, size_t n) {
          *drained += n;
          if (ec || *drained > kLingerBytes) {
            *drain = nullptr;  // breaks the cycle drain -> lambda -> drain
            return self->shutdown();
          }
          (*drain)();
        });
  };
  (*drain)();
}

void Connection::shutdown() {
  gone_ = true;
  stream_.expires_never();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

bool Connection::blocking(std::function<void(Done)> start) {
  if (gone_) return false;
  auto result = std::make_shared<std::promise<bool>>();
  std::future<bool> done = result->get_future();
  net::post(stream_.get_executor(), [self = shared_from_this(), start = std::move(start), result] {
    if (self->gone_) return result->set_value(false);
    self->stream_.expires_after(self->transport_.options().write_timeout);
    start([self, result](beast::error_code ec) {
      self->stream_.expires_never();
      if (ec) self->gone_ = true;
      result->set_value(!ec);
    });
  });
  while (done.wait_for(100ms) != std::future_status::ready) {
    if (transport_.io_stopped()) return false;
  }
  return done.get();
}

bool Connection::respond(HttpResponse r) {
  status_ = r.status;
  auto res = to_message(std::move(r), version_, keep_alive_ && !transport_.stopping());
  return blocking([this, res](const Done& done) {
    http::async_write(stream_, *res, [res, done](beast::error_code ec, size_t) { done(ec); });
  });
}

bool Connection::begin_stream(const HttpResponse& head) {
  auto res = std::make_shared<http::response<http::empty_body>>(
      static_cast<http::status>(head.status), version_);
  res->set(http::field::content_type, head.content_type);
  for (const auto& [name, value] : head.headers) res->set(name, value);
  // HTTP/1.0 has no chunks: the body then ends when the connection closes.
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;
  res->keep_alive(keep_alive_);
  if (chunked_) res->chunked(true);
  streaming_ = true;
  status_ = head.status;
  auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*res);
  return blocking([this, res, serializer](const Done& done) {
    http::async_write_header(stream_, *serializer,
                             [res, serializer, done](beast::error_code ec, size_t) { done(ec); });
  });
}

bool Connection::write(std::string_view data) {
  if (data.empty()) return !gone_;
  auto bytes = std::make_shared<std::string>(data);
  return blocking([this, bytes](const Done& done) {
    auto on_written = [bytes, done](beast::error_code ec, size_t) { done(ec); };
    if (chunked_) {
      net::async_write(stream_, http::make_chunk(net::buffer(*bytes)), on_written);
    } else {
      net::async_write(stream_, net::buffer(*bytes), on_written);
    }
  });
}

bool Connection::end_stream() {
  if (!streaming_) return !gone_;
  streaming_ = false;
  if (!chunked_) return !gone_;
  return blocking([this](const Done& done) {
    net::async_write(stream_, http::make_chunk_last(),
                     [done](beast::error_code ec, size_t) { done(ec); });
  });
}

Status BeastTransport::bind(const std::string& host, int port) {
  beast::error_code ec;
  const net::ip::address address =
      net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  const auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::kIo,
                      "cannot listen on " + host + ":" + std::to_string(port) + " (" + why + ")");
  };
  if (ec) return fail("not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  // A deep backlog: a burst of clients connecting at once gets a quick answer (a 503 at worst),
  // not a stalled or reset connection.
  if (!ec) acceptor_.listen(1024, ec);
  if (ec) return fail(ec.message() + ": in use, or not an address of this machine");
  port_ = acceptor_.local_endpoint().port();
  return ok_status();
}

void BeastTransport::accept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_ || ec == net::error::operation_aborted) return;
    if (ec) {  // EMFILE and the like: try again shortly
      accept_retry_.expires_after(kAcceptRetry);
      accept_retry_.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    // Streamed chunks are small writes that must leave at once, not wait for the previous one's
    // acknowledgement (Nagle's algorithm).
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    const bool over = ++connections_ > options_.max_connections;
    auto connection = std::make_shared<Connection>(std::move(socket), *this);
    if (over) {
      opened(connection.get(), connection);
      connection->refuse_at_once(503);
    } else {
      connection->start();
    }
    accept();
  });
}

void BeastTransport::run() {
  net::post(ioc_, [this] {
    if (acceptor_.is_open()) accept();
  });
  ioc_.run();
}

void BeastTransport::stop() {
  std::call_once(stop_once_, [this] {
    stopping_ = true;
    net::post(ioc_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      accept_retry_.cancel();
    });
    std::vector<std::shared_ptr<Connection>> open;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [raw, weak] : live_) {
        if (auto c = weak.lock()) open.push_back(std::move(c));
      }
    }
    for (auto& c : open) c->close();
    open.clear();
    pool_.stop();  // handlers see client_gone() and failed writes, and return
    work_.reset();
    ioc_.stop();
  });
}

}  // namespace

int parse_requests(std::string_view bytes, const TransportOptions& options,
                   const std::function<void(HttpRequest&&)>& on_request) {
  size_t offset = 0;
  while (offset < bytes.size()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    parser.body_limit(options.max_body_bytes);
    bool head_checked = false;
    while (!parser.is_done()) {
      beast::error_code ec;
      const size_t used = parser.put(net::buffer(bytes.data() + offset, bytes.size() - offset), ec);
      offset += used;
      if (ec && ec != http::error::need_more) {
        const int status = status_for_read_error(ec);
        return status != 0 ? status : 400;
      }
      if (!head_checked && parser.is_header_done()) {
        head_checked = true;
        if (const int status = check_head(parser, options); status != 0) return status;
      }
      if (used == 0 && !parser.is_done()) return 0;  // the input ends inside a request
    }
    if (too_many_fields(parser.get(), options)) return 431;
    on_request(to_request(parser.release()));
  }
  return 0;
}

std::unique_ptr<HttpTransport> make_beast_transport(TransportOptions options,
                                                    TransportHooks hooks) {
  return std::make_unique<BeastTransport>(options, std::move(hooks));
}

}  // namespace strata::server
