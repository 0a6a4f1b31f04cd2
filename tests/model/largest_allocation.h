// The largest single operator-new request since the last reset, for tests that must show a
// hostile count is refused before anything is sized from it. The test binary that links
// largest_allocation.cc replaces the global operator new to record it.
#pragma once

#include <cstddef>

namespace strata::testing {

void reset_largest_allocation();
size_t largest_allocation();

}  // namespace strata::testing
