// A bounds-checked reader of little-endian GGUF primitives over a byte image. Every read checks
// the remaining length first, so a corrupt count or length can never move it past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::gguf {

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  size_t size() const { return size_; }

  // Reads an unsigned little-endian integer of sizeof(T) bytes; nullopt (and no move) when fewer
  // bytes remain. Decoding byte by byte keeps the reader independent of the host's byte order.
  template <typename T>
  std::optional<T> read_le() {
    if (remaining() < sizeof(T)) return std::nullopt;
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<T>(static_cast<T>(data_[pos_ + i]) << (8 * i));
    pos_ += sizeof(T);
    return v;
  }

  // A view of the next n bytes (n already checked against remaining() by the caller).
  std::string_view take(size_t n) {
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace strata::gguf
