// What the CPU offers, for logs and `strata info`; kernels choose their SIMD target through
// Highway's runtime dispatch, not through this.
#pragma once

#include <string>

namespace strata {

// Human-readable list of the SIMD targets Highway can use here, best first (e.g. "AVX3_ZEN4 AVX3
// AVX2").
std::string simd_targets_description();
// Number of hardware threads (logical cores).
unsigned hardware_threads();

}  // namespace strata
