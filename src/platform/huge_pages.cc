#include "platform/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

namespace strata {

AlignedPtr<unsigned char> allocate_huge_page_backed(size_t bytes) {
  // At least one page: an empty arena still gets a pointer, as the allocation before this did.
  const size_t alloc =
      std::max<size_t>(1, (bytes + kHugePageBytes - 1) / kHugePageBytes) * kHugePageBytes;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(kHugePageBytes, alloc));
#ifdef MADV_HUGEPAGE
  if (p != nullptr) madvise(p, alloc, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return AlignedPtr<unsigned char>(p);
}

}  // namespace strata
