// The per-target kernels that matmul (matmul.cc) plans over, compiled for every SIMD target in
// matmul_kernels.cc; each call runs the best target this CPU supports (Highway's dynamic
// dispatch). Internal to strata_kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace strata::kernels::dispatch {

// Y[t][r] for r in [row_begin, row_end) and every token, rows in GGUF order. `act` holds the
// quantized activation rows (act_stride bytes per token; f32 for float weights); with `packed`
// (pack_tiled_activations' rows, where has_tiled_kernel) the register-tiled kernel runs instead.
void matmul_rows(DType type, const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end,
                 size_t cols, const uint8_t* act, size_t act_stride, const uint8_t* packed,
                 size_t n_tokens, float* y, size_t y_stride);

// The same for whole groups of an interleaved matrix (interleave.h), where
// has_interleaved_kernel: `act` is the ActBlockQ8 rows (Q4_0, Q8_0) or
// pack_interleaved_activations' rows (K types).
void matmul_interleaved(DType type, const uint8_t* w, size_t w_stride, size_t row_begin,
                        size_t row_end, size_t cols, const uint8_t* act, size_t act_stride,
                        size_t n_tokens, float* y, size_t y_stride);

bool has_interleaved_kernel(DType type);
// One token's BlockQ8_K row in the layout the interleaved K kernels read.
void pack_interleaved_activations(const uint8_t* act, size_t cols, uint8_t* dst);

bool has_tiled_kernel(DType type, size_t cols);
// One token's quantized row (ActBlockQ8 or BlockQ8_K) in the layout the type's tiled kernel
// reads.
void pack_tiled_activations(DType type, const uint8_t* act, size_t cols, uint8_t* dst);

}  // namespace strata::kernels::dispatch
