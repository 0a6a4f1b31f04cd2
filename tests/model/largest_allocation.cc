#include "largest_allocation.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace strata::testing {
namespace {

std::atomic<size_t> g_largest{0};

void record(size_t size) {
  size_t seen = g_largest.load(std::memory_order_relaxed);
  while (size > seen && !g_largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}

void* allocate(size_t size) {
  record(size);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

}  // namespace

void reset_largest_allocation() { g_largest.store(0); }
size_t largest_allocation() { return g_largest.load(); }

}  // namespace strata::testing

// The plain forms only: every std::vector, std::string and std::make_unique of the model loader
// goes through them (the aligned forms and AlignedBuffer are sized from tensor shapes, which the
// reader has already checked against the file).
void* operator new(size_t size) { return strata::testing::allocate(size); }
void* operator new[](size_t size) { return strata::testing::allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
