#include "platform/thread_pool.h"

#include <algorithm>
#include <string>
#include <system_error>

#include "base/log.h"

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

constexpr uint64_t kFieldBits = 24;
constexpr uint64_t kFieldMask = (uint64_t{1} << kFieldBits) - 1;
constexpr size_t kMaxJobSize = kFieldMask;  // indices per job; larger loops run in rounds

constexpr uint64_t pack(uint64_t job, uint64_t count, uint64_t next) {
  return (job << (2 * kFieldBits)) | (count << kFieldBits) | next;
}
constexpr uint64_t job_of(uint64_t s) { return s >> (2 * kFieldBits); }
constexpr uint64_t count_of(uint64_t s) { return (s >> kFieldBits) & kFieldMask; }
constexpr uint64_t next_of(uint64_t s) { return s & kFieldMask; }

}  // namespace

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(num_threads - 1);
  for (size_t t = 1; t < num_threads; ++t) {
    try {
      workers_.emplace_back([this, t] { worker_loop(t); });
    } catch (const std::system_error& e) {
      // The system refused a thread (a container's process limit, RLIMIT_NPROC): run with the
      // workers already started, which num_threads() then reports, rather than abort.
      log_warn("started " + std::to_string(t) + " of " + std::to_string(num_threads) +
               " threads: " + e.what());
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  job_ = (job_ + 1) & 0xFFFF;
  state_.store(pack(job_, 0, 0));
  state_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::drain(size_t thread_id) {
  uint64_t s = state_.load(std::memory_order_acquire);
  while (next_of(s) < count_of(s)) {
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
      task_fn_(task_ctx_, next_of(s), thread_id);
      done_.fetch_add(1, std::memory_order_release);
      s = state_.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::run(size_t n, TaskFn fn, void* ctx) {
  for (size_t base = 0; base < n; base += kMaxJobSize) {
    const size_t count = std::min(kMaxJobSize, n - base);
    // Larger loops are split into rounds; the wrapper shifts indices back into place.
    struct Round {
      TaskFn fn;
      void* ctx;
      size_t base;
    } round{fn, ctx, base};
    task_fn_ = base == 0 ? fn : [](void* c, size_t i, size_t t) {
      auto* r = static_cast<Round*>(c);
      r->fn(r->ctx, r->base + i, t);
    };
    task_ctx_ = base == 0 ? ctx : &round;
    done_.store(0, std::memory_order_relaxed);
    job_ = (job_ + 1) & 0xFFFF;
    state_.store(pack(job_, count, 0), std::memory_order_release);
    state_.notify_all();
    drain(0);
    while (done_.load(std::memory_order_acquire) != count) cpu_relax();
  }
}

void ThreadPool::worker_loop(size_t thread_id) {
  uint64_t seen_job = 0;
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    for (int spin = 0; job_of(s) == seen_job && spin < kSpinRounds; ++spin) {
      cpu_relax();
      s = state_.load(std::memory_order_acquire);
    }
    if (job_of(s) == seen_job) {
      state_.wait(s, std::memory_order_acquire);
      continue;
    }
    if (stop_.load()) return;
    seen_job = job_of(s);
    drain(thread_id);
  }
}

}  // namespace strata
