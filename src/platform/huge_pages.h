// Memory that a hot loop streams through every token: resident weights (each read once per
// decoded token) and the KV cache's arenas (a head's blocks of consecutive pages lie a whole
// page apart, so at depth every block is a fresh 4 KiB page). Backing them with 2 MiB pages
// spares a TLB miss per 4 KiB read.
#pragma once

#include <cstddef>

#include "base/aligned.h"

namespace strata {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` rounded up to whole 2 MiB pages (at least one), aligned to one, with transparent huge
// pages asked for (madvise: the kernel setting this targets grants them on request; where it
// refuses, the memory works the same with 4 KiB pages). Uninitialized; nullptr when there is no
// memory.
AlignedPtr<unsigned char> allocate_huge_page_backed(size_t bytes);

}  // namespace strata
