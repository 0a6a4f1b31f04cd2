// Aligned heap buffers for SIMD kernels (64 bytes: one cache line, one AVX-512 vector).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace strata {

inline constexpr size_t kCacheLine = 64;

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
using AlignedPtr = std::unique_ptr<T[], AlignedFree>;

// Allocates n default-initialized (for floats: uninitialized) elements aligned to kCacheLine.
template <typename T>
AlignedPtr<T> aligned_alloc_array(size_t n) {
  size_t bytes = (n * sizeof(T) + kCacheLine - 1) / kCacheLine * kCacheLine;
  if (bytes == 0) bytes = kCacheLine;
  void* p = std::aligned_alloc(kCacheLine, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return AlignedPtr<T>(static_cast<T*>(p));
}

// A fixed-size aligned array of floats with its length; moves but never copies implicitly.
template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t n) : data_(aligned_alloc_array<T>(n)), size_(n) {}
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  AlignedPtr<T> data_;
  size_t size_ = 0;
};

}  // namespace strata
