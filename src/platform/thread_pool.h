// A fixed set of worker threads created once and passed to every kernel that parallelizes.
// parallel_for is the only primitive: the calling thread works too, and the call returns when
// every index has run. Workers spin briefly before sleeping, because a decode step issues
// hundreds of short parallel_for calls and a sleep/wake per call would dominate.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  // num_threads counts the caller; 0 means one per hardware thread.
  explicit ThreadPool(size_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t num_threads() const { return workers_.size() + 1; }

  // Calls fn(index, thread_id) for every index in [0, n); thread_id < num_threads(). Indices are
  // handed out dynamically, so uneven work balances itself. Not reentrant: fn must not call
  // parallel_for on the same pool.
  template <typename Fn>
  void parallel_for(size_t n, Fn&& fn) {
    if (n == 0) return;
    if (workers_.empty() || n == 1) {
      for (size_t i = 0; i < n; ++i) fn(i, size_t{0});
      return;
    }
    run(n, &invoke<std::remove_reference_t<Fn>>, &fn);
  }

 private:
  using TaskFn = void (*)(void* ctx, size_t index, size_t thread_id);
  template <typename Fn>
  static void invoke(void* ctx, size_t index, size_t thread_id) {
    (*static_cast<Fn*>(ctx))(index, thread_id);
  }

  void run(size_t n, TaskFn fn, void* ctx);
  void worker_loop(size_t thread_id);
  // Claims and runs indices of the current job until none is left.
  void drain(size_t thread_id);

  std::vector<std::thread> workers_;
  // The current job as one word: [job id:16][index count:24][next index:24]. Claiming an index
  // is a compare-and-swap on the whole word, so a worker that wakes late can never claim an
  // index of a job that has moved on, and the caller never waits for workers that found nothing.
  std::atomic<uint64_t> state_{0};
  std::atomic<size_t> done_{0};  // indices of the current job that have finished
  TaskFn task_fn_ = nullptr;     // written only between jobs
  void* task_ctx_ = nullptr;
  uint64_t job_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace strata
