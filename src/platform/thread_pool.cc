#include "platform/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace strata {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spin this many rounds before sleeping: long enough to bridge the gap between two kernels of
// one forward pass, short enough not to burn a core while the engine is idle.
constexpr int kSpinRounds = 1 << 14;

}  // namespace

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(num_threads - 1);
  for (size_t t = 1; t < num_threads; ++t) {
    workers_.emplace_back([this, t] { worker_loop(t); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::drain(size_t thread_id) {
  const size_t n = task_count_;
  for (size_t i = next_index_.fetch_add(1); i < n; i = next_index_.fetch_add(1)) {
    task_fn_(task_ctx_, i, thread_id);
  }
}

void ThreadPool::run(size_t n, TaskFn fn, void* ctx) {
  task_fn_ = fn;
  task_ctx_ = ctx;
  task_count_ = n;
  next_index_.store(0);
  busy_workers_.store(workers_.size());
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  drain(0);
  while (busy_workers_.load(std::memory_order_acquire) != 0) cpu_relax();
}

void ThreadPool::worker_loop(size_t thread_id) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinRounds; ++spin) {
      cpu_relax();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      generation_.wait(seen);
      continue;
    }
    seen = gen;
    if (stop_.load()) return;
    drain(thread_id);
    busy_workers_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace strata
