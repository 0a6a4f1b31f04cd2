#include "server/handler_pool.h"

#include <system_error>
#include <utility>

namespace strata::server {

HandlerPool::HandlerPool(size_t threads) {
  for (size_t i = 0; i < threads; ++i) {
    try {
      threads_.emplace_back([this] { loop(); });
    } catch (const std::system_error&) {
      // The system refused a thread (a process limit): serve with those already started.
      if (threads_.empty()) throw;
      break;
    }
  }
}

void HandlerPool::post(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopping_) jobs_.push_back(std::move(job));
  cv_.notify_one();
}

void HandlerPool::stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(jobs_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void HandlerPool::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace strata::server
