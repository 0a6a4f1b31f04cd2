// A STREAM-like memory read test: the machine's sustainable read bandwidth, the ceiling of a
// decode step that reads every weight once. Measured in the same run as the model, with the same
// thread count, so the ratio of the two says how much of the memory system decode uses.
#pragma once

#include <cstddef>

namespace strata::bench {

// GB/s (1e9 bytes) of reading a buffer of `bytes` (rounded down to whole cache lines) split
// across `threads` threads, best of `repetitions` passes after one untimed pass.
double measure_read_bandwidth(size_t bytes, int threads, int repetitions = 5);

}  // namespace strata::bench
