// What the CPU (and the machine's memory) offers, for logs and limits and `strata info`; kernels
// choose their SIMD target through Highway's runtime dispatch, not through this.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

// Human-readable list of the SIMD targets Highway can use here, best first (e.g. "AVX3_ZEN4 AVX3
// AVX2").
std::string simd_targets_description();
// Caps the targets Highway dispatches to at `best` (a name simd_targets_description lists):
// every better one is disabled, for the whole process. False if this CPU offers no such target.
// Kernels choose layouts by the target at hand, so call it before loading a model.
bool disable_simd_targets_above(std::string_view best);
// Undoes disable_simd_targets_above: dispatch goes back to the best target the CPU offers.
void lift_simd_target_cap();

// Bytes of physical memory (RAM) in this machine; 0 if the system does not say.
size_t physical_memory_bytes();

// Number of hardware threads (logical cores).
unsigned hardware_threads();

}  // namespace strata
