#include "platform/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

namespace strata {

AlignedPtr<unsigned char> allocate_huge_page_backed(size_t bytes) {
  const size_t alloc = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(kHugePageBytes, alloc));
#ifdef MADV_HUGEPAGE
  if (p != nullptr) madvise(p, alloc, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return AlignedPtr<unsigned char>(p);
}

}  // namespace strata
