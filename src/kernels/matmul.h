// Products of a weight matrix stored in its GGUF block format with f32 activations.
//
// A weight matrix W has `rows` rows of `cols` elements (GGUF dims = {cols, rows}); row r starts at
// w + r * row_bytes(type, cols). Weights are never dequantized as a whole: each dot product
// dequantizes (or integer-multiplies) block by block.
#pragma once

#include <cstddef>

#include "base/dtype.h"
#include "platform/thread_pool.h"

namespace strata::kernels {

// Name of the SIMD target the kernels dispatch to on this CPU (e.g. "AVX3_DL", "AVX2", "NEON").
const char* active_simd_target();

// True if matvec/matmul support weights of this type: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool supports_weight_type(DType type);

// y[r] = sum_c W[r][c] * x[c] for r in [0, rows). cols must be a multiple of the type's block
// size; an unsupported type or shape fills y with NaN. Quantized types multiply x quantized to
// 8 bits per block (see quantize_act.h); float types use x as is.
void matvec(DType type, const void* w, size_t rows, size_t cols, const float* x, float* y,
            ThreadPool& pool);

// Y[t][r] = sum_c W[r][c] * X[t][c] for t in [0, n_tokens), r in [0, rows).
// X is [n_tokens][cols] and Y is [n_tokens][rows], both row-major and dense.
void matmul(DType type, const void* w, size_t rows, size_t cols, const float* x, size_t n_tokens,
            float* y, ThreadPool& pool);

// dst[0..n) = the first n elements of a row stored as `type` (n a multiple of the block size).
void dequantize_row(DType type, const void* src, float* dst, size_t n);

}  // namespace strata::kernels
