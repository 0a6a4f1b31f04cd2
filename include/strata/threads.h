// The thread count every strata tool takes (EngineOptions, QuantizeOptions, SynthOptions; the
// CLI's -t). Part of the public API.
#pragma once

#include "strata/result.h"

namespace strata {

// The most threads strata starts: ggml's GGML_MAX_N_THREADS, so a count llama.cpp accepts works
// here too. The kernels are compute- or bandwidth-bound and gain nothing past the hardware
// threads, while each thread costs a stack and the OS refuses thread creation long before a
// count like 100000, which would otherwise end the process instead of failing one call.
inline constexpr int kMaxThreads = 512;

// kInvalidArgument unless 0 <= threads <= kMaxThreads (0: one per hardware thread); the message
// names the limit and this machine's hardware thread count.
Status check_thread_count(int threads);

}  // namespace strata
