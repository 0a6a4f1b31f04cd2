// The per-target side of matmul (matmul.cc), compiled for every SIMD target in matmul_kernels.cc;
// each call runs the best target this CPU supports (Highway's dynamic dispatch). The kernels
// themselves are reached through select_matmul_kernel (matmul.h). Internal to strata_kernels.
#pragma once

#include "base/dtype.h"

namespace strata::kernels::dispatch {

// True if the dispatched target has an interleaved-layout kernel for the type (interleave.h).
bool has_interleaved_kernel(DType type);

}  // namespace strata::kernels::dispatch
