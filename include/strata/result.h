// Result<T>: a value or an Error, checked where input enters strata. Part of the public API.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace strata {

// What went wrong, coarse enough to map onto exit codes and HTTP statuses in one place each.
enum class ErrorCode {
  kInvalidArgument,   // the caller passed something malformed (bad flag, bad request field)
  kInvalidFile,       // a file's contents are corrupt or inconsistent (truncated GGUF, bad offset)
  kUnsupported,       // well-formed, but strata does not implement it (unknown tensor type, arch)
  kNotFound,          // a named thing is missing (file, tensor, metadata key)
  kIo,                // the operating system refused (open, mmap, read)
  kOutOfRange,        // a size or count past a limit (context length, KV pages)
  kUnavailable,       // busy right now (queue full); the same call may succeed later
  kDeadlineExceeded,  // a time or work budget ran out (--timeout, a schema's compile budget)
  kCancelled,         // the caller went away or asked to stop (a client that disconnected)
  kInternal,          // an invariant broke: a bug in strata
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;  // one line, says what is wrong and, where possible, what to do
};

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

// Result<T> holds either a T or an Error. Callers test with ok() (or `if (!r)`), then take the
// value with value() / * / ->, or the error with error().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : data_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<T>(data_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(data_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(data_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<Error>(data_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> data_;
};

// Status is a Result without a value.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace strata

// Propagates an error from an expression returning Result/Status.
#define STRATA_RETURN_IF_ERROR(expr)                         \
  do {                                                       \
    auto strata_status_ = (expr);                            \
    if (!strata_status_.ok()) return strata_status_.error(); \
  } while (0)

#define STRATA_CONCAT_INNER_(a, b) a##b
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)
// Declares `lhs` from a Result's value, or returns its error. `lhs` is a declaration, so it
// cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_CONCAT_(strata_result_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.error();                  \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
