// The threads that run the server's request handlers: the transport's I/O thread queues each
// complete request here, so that a handler may block (on the engine, on a slow client's writes)
// without stalling any socket.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::server {

// Queued handler runs; stop() drops what has not started and joins the threads.
class HandlerPool {
 public:
  // Starts `threads` threads, or as many as the system allows (at least one, else it throws
  // std::system_error).
  explicit HandlerPool(size_t threads);
  ~HandlerPool() { stop(); }

  void post(std::function<void()> job);
  void stop();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strata::server
