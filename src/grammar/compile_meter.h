// Counts the work of compiling one output constraint (JSON Schema -> GBNF -> byte-level grammar
// -> vocabulary token sets) against a CompileBudget and a fixed cap. Each stage charges units
// for what it produces or walks (a schema visited, a grammar item or rule, a fixpoint pass over
// the rules, a vocabulary position), so the count grows with the work actually done; every
// kCheckInterval units the meter reads the clock and the cancellation flag, which keeps the check
// off the hot paths (a clock read costs about as much as a few units).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "strata/compile_budget.h"

namespace strata::grammar {

// The most units one constraint may cost. Schemas of JSONSchemaBench cost under a million; a
// flat object of 100,000 string properties costs about 40 million (seconds on one core).
inline constexpr uint64_t kMaxCompileWork = uint64_t{400} << 20;

class CompileMeter {
 public:
  static constexpr uint64_t kCheckInterval = 1024;

  explicit CompileMeter(const CompileBudget& budget = {}, uint64_t max_work = kMaxCompileWork)
      : budget_(budget), max_work_(max_work) {}

  // What the messages call the thing compiled ("the JSON schema", "the grammar").
  void set_subject(std::string subject) { subject_ = std::move(subject); }

  // Adds `units` of work: kOutOfRange past the cap, and, at each check, kCancelled when the flag
  // is set or kDeadlineExceeded past the deadline. The first charge always checks, so a budget
  // that is already spent stops compilation before it starts. A failure is sticky: every later
  // charge and status() return it, so that code which treats some errors as "leave this part
  // out" (best effort, contradictory branches) cannot swallow it.
  Status charge(uint64_t units = 1) {
    used_ += units;
    if (used_ < next_check_) return ok_status();
    if (failure_) return *failure_;
    next_check_ = used_ + kCheckInterval;
    Status checked = check();
    if (!checked.ok()) {
      failure_ = checked.error();
      next_check_ = 0;
    }
    return checked;
  }

  // The failure of an earlier charge, if any.
  Status status() const {
    if (failure_) return *failure_;
    return ok_status();
  }

  uint64_t used() const { return used_; }

 private:
  Status check() const {
    if (budget_.cancelled && budget_.cancelled->load(std::memory_order_relaxed)) {
      return make_error(ErrorCode::kCancelled,
                        "compiling " + subject_ + " was cancelled: the request was abandoned");
    }
    if (budget_.deadline != std::chrono::steady_clock::time_point::max() &&
        std::chrono::steady_clock::now() >= budget_.deadline) {
      return make_error(ErrorCode::kDeadlineExceeded,
                        "compiling " + subject_ +
                            " took longer than the request's time budget; simplify it or raise "
                            "--timeout");
    }
    if (used_ > max_work_) {
      return make_error(ErrorCode::kOutOfRange,
                        subject_ + " is too large to compile: it needs more than " +
                            std::to_string(max_work_) +
                            " units of work (schemas visited, grammar rules and items, "
                            "vocabulary positions); split it or simplify it");
    }
    return ok_status();
  }

  CompileBudget budget_;
  uint64_t max_work_;
  uint64_t used_ = 0;
  uint64_t next_check_ = 0;
  std::optional<Error> failure_;
  std::string subject_ = "the output constraint";
};

}  // namespace strata::grammar
