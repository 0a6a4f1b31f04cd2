// Memory backed by a file that nobody else can open (an unlinked file in a folder the user
// names, --kv-offload): the kernel may write its pages out and drop them under memory pressure,
// and reads them back when they are touched, so it does not count against the machine's memory
// the way anonymous memory does. Its disk space is reserved when it is made (a full disk is an
// error then, never a SIGBUS on a later write).
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace strata {

class ScratchMapping {
 public:
  ScratchMapping() = default;
  // `bytes` (at least one byte) of zeroed memory backed by an unlinked file in `dir`.
  static Result<ScratchMapping> create(const std::string& dir, size_t bytes);
  ScratchMapping(ScratchMapping&& other) noexcept { *this = std::move(other); }
  ScratchMapping& operator=(ScratchMapping&& other) noexcept;
  ScratchMapping(const ScratchMapping&) = delete;
  ScratchMapping& operator=(const ScratchMapping&) = delete;
  ~ScratchMapping();

  unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata
