// Monotonic wall-clock timing.
#pragma once

#include <chrono>

namespace strata {

inline double now_seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

class Timer {
 public:
  Timer() : start_(now_seconds()) {}
  void reset() { start_ = now_seconds(); }
  double elapsed_seconds() const { return now_seconds() - start_; }
  double elapsed_ms() const { return elapsed_seconds() * 1e3; }

 private:
  double start_;
};

}  // namespace strata
