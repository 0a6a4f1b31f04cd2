#include "kernels/matmul.h"

#include <algorithm>
#include <cstdint>

#include "base/fp16.h"

namespace strata::kernels {
namespace {

float dot_row(DType type, const uint8_t* row, const float* x, size_t cols) {
  float sum = 0.0f;
  if (type == DType::kF32) {
    const float* w = reinterpret_cast<const float*>(row);
    for (size_t c = 0; c < cols; ++c) sum += w[c] * x[c];
  } else {
    const uint16_t* w = reinterpret_cast<const uint16_t*>(row);
    for (size_t c = 0; c < cols; ++c) sum += fp16_to_fp32(w[c]) * x[c];
  }
  return sum;
}

size_t rows_per_task(size_t rows, size_t threads) {
  return std::clamp<size_t>(rows / (threads * 8), 16, 64);
}

}  // namespace

bool supports_weight_type(DType type) { return type == DType::kF32 || type == DType::kF16; }

void matvec(DType type, const void* w, size_t rows, size_t cols, const float* x, float* y,
            ThreadPool& pool) {
  matmul(type, w, rows, cols, x, 1, y, pool);
}

void matmul(DType type, const void* w, size_t rows, size_t cols, const float* x, size_t n_tokens,
            float* y, ThreadPool& pool) {
  const size_t stride = row_bytes(type, cols);
  const size_t chunk = rows_per_task(rows, pool.num_threads());
  const size_t tasks = (rows + chunk - 1) / chunk;
  const uint8_t* base = static_cast<const uint8_t*>(w);
  pool.parallel_for(tasks, [&](size_t task, size_t) {
    const size_t end = std::min(rows, (task + 1) * chunk);
    for (size_t r = task * chunk; r < end; ++r) {
      for (size_t t = 0; t < n_tokens; ++t) {
        y[t * rows + r] = dot_row(type, base + r * stride, x + t * cols, cols);
      }
    }
  });
}

void dequantize_row(DType type, const void* src, float* dst, size_t n) {
  if (type == DType::kF32) {
    std::copy_n(static_cast<const float*>(src), n, dst);
  } else {
    const uint16_t* h = static_cast<const uint16_t*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
  }
}

}  // namespace strata::kernels
