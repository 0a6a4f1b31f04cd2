// Block layouts of the GGUF/ggml quantization formats, field for field as the format defines
// them (ggml-common.h: block_q4_0 ... block_q8_K), plus the 8-bit activation blocks strata's
// integer dot products multiply against. A row of n weights is n / block_size consecutive blocks.
// All multi-byte fields are little-endian; `d`/`dmin`/`m` are IEEE half unless noted.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::kernels {

inline constexpr size_t kQK32 = 32;   // elements per block of the Q4_0 ... Q8_0 family
inline constexpr size_t kQK_K = 256;  // elements per super-block of the K formats

// x[j] = d * ((qs[j] & 0xF) - 8), x[j + 16] = d * ((qs[j] >> 4) - 8).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK32 / 2];
};

// x[j] = d * (qs[j] & 0xF) + m, x[j + 16] = d * (qs[j] >> 4) + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK32 / 2];
};

// 5-bit quants: the low 4 bits as in Q4_0, bit 4 of element j is bit j of the 32-bit qh;
// x = d * (q - 16).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK32 / 2];
};

// As Q5_0 with a min instead of the -16 offset: x = d * q + m.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK32 / 2];
};

// x[j] = d * qs[j].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK32];
};

// 16 sub-blocks of 16 with 2-bit quants; scales[i] holds the sub-block's 4-bit scale (low
// nibble) and 4-bit min (high nibble): x = d * scale * q - dmin * min.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16 with 3-bit quants: 2 low bits in qs, the high bit in hmask (set means no
// -4 offset); 16 signed 6-bit scales packed in 12 bytes: x = d * (scale - 32) * q.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32 with 4-bit quants; 8 6-bit scales and 8 6-bit mins packed in 12 bytes:
// x = d * scale * q - dmin * min.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// As Q4_K with a fifth bit per quant in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16 with 6-bit quants: 4 low bits in ql, 2 high bits in qh; int8 scales:
// x = d * scale * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// Activation super-block for the K formats: x ~= d * qs (d is f32 here), with bsums[i] the sum of
// qs over the i-th group of 16, so that min terms cost one multiply per group.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// Activation block for the 32-element formats: x ~= d * qs with an f32 scale (more precise than
// Q8_0's f16), and sum = the sum of qs, for the min term of Q4_1/Q5_1.
struct ActBlockQ8 {
  int8_t qs[kQK32];
  float d;
  int32_t sum;
};

// One K-format activation super-block as the tiled AVX-512 kernels read it (tile_k-inl.h):
// cache-line aligned, quants in the order the weight format unpacks them into 64-byte registers,
// and the sums each format's offset or min term needs, precomputed once per token.
struct alignas(64) ActBlockQ8KTiled {
  int8_t qs[kQK_K];    // Q4_K/Q5_K: 32-element sub-blocks in the order 0,2,1,3,4,6,5,7; Q6_K: as is
  float sub_sums[16];  // d * (bsums[2s] + bsums[2s + 1]) for sub-block s < 8; lanes 8-15 zero
  int16_t bsums[16];   // BlockQ8_K::bsums (Q6_K's -32 offset)
  float d;
  float zero[7];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(ActBlockQ8) == 40);
static_assert(sizeof(ActBlockQ8KTiled) == 384);

}  // namespace strata::kernels
