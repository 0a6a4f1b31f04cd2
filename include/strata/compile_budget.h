// A time budget for compiling an output constraint (JSON Schema or GBNF to a grammar, then the
// grammar against the vocabulary). Compilation is CPU-bound and a large schema takes seconds, so
// a caller that serves requests passes the request's deadline and a flag its client's
// disconnection sets; the compiler looks at both every few thousand units of work and stops with
// kDeadlineExceeded or kCancelled. Independently of any budget, one constraint may not take more
// than a fixed amount of work (kOutOfRange past it), so that no schema compiles for minutes.
#pragma once

#include <atomic>
#include <chrono>

namespace strata {

struct CompileBudget {
  // Past this, compilation stops with ErrorCode::kDeadlineExceeded.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // When set and it becomes true, compilation stops with ErrorCode::kCancelled. Read with relaxed
  // loads; it must outlive the call.
  const std::atomic<bool>* cancelled = nullptr;
};

}  // namespace strata
