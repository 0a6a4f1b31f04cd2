// Products of a weight matrix stored in its GGUF block format with f32 activations.
//
// A weight matrix W has `rows` rows of `cols` elements (GGUF dims = {cols, rows}); row r starts at
// w + r * row_bytes(type, cols). Weights are never dequantized as a whole: each dot product
// dequantizes (or integer-multiplies) block by block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/dtype.h"
#include "kernels/quantize_act.h"
#include "platform/thread_pool.h"

namespace strata::kernels {

// Name of the SIMD target the kernels dispatch to on this CPU (e.g. "AVX3_DL", "AVX2", "NEON").
const char* active_simd_target();

// How a weight matrix's blocks lie in memory.
enum class WeightLayout : uint8_t {
  kRows,         // GGUF order: each row's blocks one after another
  kInterleaved,  // groups of 16 rows rearranged for the interleaved kernels (interleave.h)
};

// The kernel that multiplies one weight matrix: chosen once per (weight type, layout, SIMD
// target, row length) by select_matmul_kernel, which is the one place the choice is made, and
// kept with the matrix (model::Matrix) so that a product switches on the type once, not per
// tile. Its functions belong to the SIMD target that was dispatched when it was chosen.
struct MatmulKernel {
  // Y[t][r] for r in [row_begin, row_end) (whole groups of an interleaved matrix) and every
  // token, from the input rows the kernel reads (act_stride bytes per token).
  using RowsFn = void (*)(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end,
                          size_t cols, const uint8_t* act, size_t act_stride, size_t n_tokens,
                          float* y, size_t y_stride);
  // One token's quantized activation row (`format`) into the layout `rows` reads.
  using PackFn = void (*)(const uint8_t* act, size_t cols, uint8_t* dst);

  DType type = DType::kF32;
  WeightLayout layout = WeightLayout::kRows;
  ActivationFormat format = ActivationFormat::kNone;  // what X is quantized to (kF32: X as is)
  RowsFn rows = nullptr;                              // null: an unsupported type
  PackFn pack = nullptr;  // null: `rows` reads the quantized rows themselves
  // A packed row is cols / pack_unit_elements units of pack_unit_bytes.
  uint32_t pack_unit_elements = 0, pack_unit_bytes = 0;
  // An interleaved matrix on a target without an interleaved kernel for its type: each group is
  // read back into GGUF rows, which `rows` multiplies.
  bool read_back_groups = false;

  size_t packed_row_bytes(size_t cols) const { return cols / pack_unit_elements * pack_unit_bytes; }
};

// The kernel for matrices of this type, layout and row length on the dispatched SIMD target
// (rows null for an unsupported type).
MatmulKernel select_matmul_kernel(DType type, WeightLayout layout, size_t cols);

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

// The layout matmul runs fastest from on this CPU: kInterleaved where the dispatched target has
// an interleaved kernel for the type and can_interleave(type, rows, cols) holds.
WeightLayout preferred_layout(DType type, size_t rows, size_t cols);

// matmul of a matrix in either layout. Every target computes both (an interleaved matrix on a
// target without its kernel is read back group by group), with the same result per (row,
// token) whatever the number of tokens or threads.
void matmul(DType type, WeightLayout layout, const void* w, size_t rows, size_t cols,
            const float* x, size_t n_tokens, float* y, ThreadPool& pool);

// One weight matrix (either layout) of a product that shares its input with others, and where
// its result goes: y is [n_tokens][rows].
struct MatmulProduct {
  DType type = DType::kF32;
  WeightLayout layout = WeightLayout::kRows;
  const void* w = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  float* y = nullptr;
  // The matrix's kernel (select_matmul_kernel for this type, layout and cols); null: chosen for
  // this call.
  const MatmulKernel* kernel = nullptr;
};

// Y_i = W_i X for every product i, all of one input X [n_tokens][cols] (every product has that
// cols): attention's q, k, v or the feed-forward's gate and up. X is quantized once per
// activation format, and the rows of all the matrices are one job of the thread pool, so the
// threads meet once instead of once per matrix. Each product's Y is exactly what matmul gives.
void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, size_t n_tokens,
                         ThreadPool& pool);

// dst[0..n) = the first n elements of a row stored as `type` (n a multiple of the block size).
void dequantize_row(DType type, const void* src, float* dst, size_t n);

// dst[0..cols) = row r of a matrix (rows x cols) in the given layout.
void dequantize_matrix_row(DType type, WeightLayout layout, const void* w, size_t cols, size_t r,
                           float* dst);

}  // namespace strata::kernels
