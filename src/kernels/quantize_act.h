// Quantization of f32 activations to the 8-bit blocks the integer dot products consume. One
// scalar implementation serves every SIMD target and the reference, so they see identical input.
#pragma once

#include <cstddef>

#include "base/dtype.h"
#include "kernels/quant_blocks.h"

namespace strata::kernels {

enum class ActivationFormat {
  kF32,    // float weights multiply f32 activations directly
  kQ8_32,  // ActBlockQ8 per 32 elements (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0)
  kQ8_K,   // BlockQ8_K per 256 elements (Q2_K ... Q6_K)
  kNone,   // unsupported weight type
};

ActivationFormat activation_format(DType weight_type);

// Bytes of one quantized activation row of n elements (n a multiple of the format's block).
size_t activation_row_bytes(ActivationFormat format, size_t n);

// The SIMD quantizer matvec/matmul use (runtime dispatch), bit-identical to the scalar ones
// below; format kQ8_32 or kQ8_K, n a multiple of its block size.
void quantize_activations(ActivationFormat format, const float* x, void* dst, size_t n);

// Scalar reference. Symmetric round-to-nearest-even: d = max|x| / 127, qs = round(x * (1 / d));
// n a multiple of 32.
void quantize_act_q8(const float* x, ActBlockQ8* dst, size_t n);
// The same per 256 elements, with bsums; n a multiple of 256.
void quantize_act_q8_k(const float* x, BlockQ8_K* dst, size_t n);

}  // namespace strata::kernels
