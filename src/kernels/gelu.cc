#include "kernels/gelu.h"

#include <array>
#include <cmath>
#include <cstdint>

#include "base/fp16.h"

namespace strata::kernels {
namespace {

// gelu_tanh of every f16 value, as f16 bits (128 KiB: it stays in L2 while a row is mapped).
// A table rather than tanhf per element: Gemma 3 1B maps 6912 gates per token and layer.
using GeluTable = std::array<uint16_t, 65536>;

GeluTable make_gelu_table() {
  GeluTable table;
  for (uint32_t h = 0; h < table.size(); ++h) {
    table[h] = fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(h))));
  }
  return table;
}

// A constant of the function, built on first use (thread-safe static initialisation).
const GeluTable& gelu_table() {
  static const GeluTable table = make_gelu_table();
  return table;
}

// gelu(g): 0 at or below -10, the identity at or above 10, else the table's f16 value.
float gelu_f16(const GeluTable& table, float g) {
  if (g <= -10.0f) return 0.0f;
  if (g >= 10.0f) return g;
  return fp16_to_fp32(table[fp32_to_fp16(g)]);
}

}  // namespace

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

void geglu(float* gate, const float* up, size_t n) {
  const GeluTable& table = gelu_table();
  for (size_t i = 0; i < n; ++i) gate[i] = gelu_f16(table, gate[i]) * up[i];
}

void gelu(float* x, size_t n) {
  const GeluTable& table = gelu_table();
  for (size_t i = 0; i < n; ++i) x[i] = gelu_f16(table, x[i]);
}

}  // namespace strata::kernels
