// A client that speaks HTTP/1.1 byte by byte over a loopback socket, for the requests no
// well-behaved client library would send: slow, oversized, malformed, pipelined.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>

namespace strata::server::testing {

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends everything, or stops at the first failure (the server closed the connection).
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads what arrives within `wait` (until the server closes, or `until` appears in it).
  std::string receive(std::chrono::milliseconds wait, std::string_view until = "") {
    std::string out;
    const auto give_up = std::chrono::steady_clock::now() + wait;
    char buf[65536];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          give_up - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_by_server_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
      if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
  }

  // True once a receive() saw the server close the connection.
  bool closed_by_server() const { return closed_by_server_; }

 private:
  int fd_ = -1;
  bool closed_by_server_ = false;
};

// The status code of the first response in `bytes` ("HTTP/1.1 413 ..."), or 0.
inline int status_of(const std::string& bytes) {
  if (bytes.rfind("HTTP/1.", 0) != 0 || bytes.size() < 12) return 0;
  return std::stoi(bytes.substr(9, 3));
}

}  // namespace strata::server::testing
