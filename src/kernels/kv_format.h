// Storage formats of KV cache blocks: one block holds the keys (or the values) of `rows`
// consecutive positions of one KV head, [rows][head_dim] logically.
//
// Formats and their bits per element at head_dim 64, page rows 32:
//   f32, f16, bf16        32, 16, 16; rows of elements.
//   q8_0, q4_0            8.5, 4.5; GGML's block_q8_0 / block_q4_0 per 32 elements of a row
//                         (f16 d, then qs), the same semantics as llama.cpp's -ctk/-ctv types.
//   r4, r3 (rotated)      keys 4.52 / 3.52, values 4.25 / 3.25. Keys and values are stored in a
//                         rotated space (rotate_kv_head: a sign flip and a normalised Hadamard
//                         transform, orthogonal, so q·k and the softmax are unchanged when q is
//                         rotated too, and the output is rotated back). Rotation spreads outlier
//                         channels over all channels (QuaRot, TurboQuant), so a few bits suffice.
//     keys, per channel over the block's positions (KIVI, KVQuant): channel c has a minimum
//       m_c and a step s_c, x = m_c + s_c * code. Header: f16 d_step, f16 d_min, u8 sc[head_dim],
//       i8 mn[head_dim] (s_c = d_step * sc[c], m_c = d_min * mn[c]), then the codes channel by
//       channel, each channel's `rows` codes together. A query folds the steps into itself once
//       per block, q·k = sum_c (q_c s_c) code_c + sum_c q_c m_c, and the scores of 8 positions
//       are then 8 lanes of one multiply-add per channel (no horizontal sums).
//     values, per position: a row is f16 scale, then codes; x = scale * (code - (L - 1) / 2)
//       with L = 16 or 8 levels, the scale chosen for the least squared error.
//   r8 (rotated)          8.5; q8_0's rows (keys and values, per position) in the rotated space:
//                         the rotation shrinks each block's largest magnitude, the q8_0 step.
//   Runs of n codes (a value row: n = head_dim; a key channel: n = rows): r4 packs code i and
//   code i + n/2 in the low and high nibble of byte i; r3 has a 2-bit plane (code i's low bits in
//   byte i % (n/4) at bit 2 * (i / (n/4))) then a 1-bit plane (code i's high bit at bit i of the
//   plane, little-endian), so that 8 consecutive codes come from 8 consecutive bytes with one
//   shift plus one bit each from a 32-bit word, as SIMD decoding wants. Hence rows and head_dim
//   are multiples of 32 for the rotated formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/fp16.h"

namespace strata::kernels {

enum class KvFormat : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0, kR4, kR3, kR8 };

enum class KvRole : uint8_t { kKeys, kValues };

// Block reads (kernels/attention_block.h) take rows in vectors of up to this many elements, so
// every format but f16 and f32 needs heads of a multiple of it; the KV policy keeps other head
// sizes on the reference-rounding f16/f32 path.
inline constexpr size_t kBlockDimMultiple = 8;

// The command-line name ("f16", "q8_0", "r4", ...) and back; nullptr / false for none.
const char* kv_format_name(KvFormat f);
bool kv_format_from_name(const char* name, KvFormat* f);

// Whether a format stores keys and values rotated (rotate_kv_head).
constexpr bool kv_format_rotated(KvFormat f) {
  return f == KvFormat::kR4 || f == KvFormat::kR3 || f == KvFormat::kR8;
}
// Whether a format packs low-bit codes (r4, r3): keys per channel under a block header, values
// as a row scale then centred codes. r8 is rotated but keeps q8_0's rows.
constexpr bool kv_format_packs_codes(KvFormat f) {
  return f == KvFormat::kR4 || f == KvFormat::kR3;
}
// Whether a format can hold heads of head_dim in blocks of `rows` positions: q8_0 and q4_0 need
// whole blocks of 32, the rotated formats a power of two of at least 32 (the Hadamard transform),
// r4 and r3 also rows a multiple of 32 (the code runs), bf16 a multiple of 8 (block reads).
bool kv_format_supports(KvFormat f, size_t head_dim, size_t rows);
// Whether positions can be written one at a time (every format but r4's and r3's keys, whose
// per-channel scales depend on every position of the block).
constexpr bool kv_format_row_writable(KvFormat f, KvRole role) {
  return !(kv_format_packs_codes(f) && role == KvRole::kKeys);
}

// Bytes of one block of `rows` positions.
size_t kv_block_bytes(KvFormat f, KvRole role, size_t rows, size_t head_dim);
// Bytes of one row of a row-writable format (a position's keys or values).
size_t kv_row_bytes(KvFormat f, KvRole role, size_t head_dim);

// Writes position `row` of a row-writable block from x[head_dim].
void kv_encode_row(KvFormat f, KvRole role, const float* x, size_t head_dim, void* block,
                   size_t row);
// Reads position `row` of a row-writable block into x[head_dim].
void kv_decode_row(KvFormat f, KvRole role, const void* block, size_t row, size_t head_dim,
                   float* x);
// Writes positions [0, n) of a block of `rows` from x[n][head_dim]; rows past n are zeros.
void kv_encode_block(KvFormat f, KvRole role, const float* x, size_t n, size_t rows,
                     size_t head_dim, void* block);
// Reads positions [0, n) of a block into x[n][head_dim] (in the stored, possibly rotated space).
void kv_decode_block(KvFormat f, KvRole role, const void* block, size_t n, size_t rows,
                     size_t head_dim, float* x);

// The rotation of the rotated formats and its inverse, in place on one head (head_dim a power
// of two): y = H (s * x) / sqrt(head_dim), H the Walsh-Hadamard matrix, s fixed signs.
void rotate_kv_head(float* x, size_t head_dim);
void unrotate_kv_head(float* y, size_t head_dim);

// Levels of a rotated format's codes (16 or 8).
constexpr int rotated_levels(KvFormat f) { return f == KvFormat::kR4 ? 16 : 8; }

// The header of a rotated key block (see the layout above), followed by the code rows.
struct RotatedKeyHeader {
  uint16_t d_step;  // f16
  uint16_t d_min;   // f16
  // then uint8_t sc[head_dim], int8_t mn[head_dim]
};
inline size_t rotated_key_header_bytes(size_t head_dim) {
  return sizeof(RotatedKeyHeader) + 2 * head_dim;
}
// A rotated key block read back: channel c's keys are min(c) + step(c) * code, each factor
// rounded as here (the SIMD decoders and the scalar one agree to the bit by using these).
struct RotatedKeyScales {
  float d_step, d_min;
  const uint8_t* sc;
  const int8_t* mn;
  const uint8_t* codes;  // channel by channel, rotated_code_bytes(f, rows) each

  float step(size_t c) const { return d_step * static_cast<float>(sc[c]); }
  float min(size_t c) const { return d_min * static_cast<float>(mn[c]); }
};
inline RotatedKeyScales read_rotated_keys(const void* block, size_t head_dim) {
  const auto* in = static_cast<const uint8_t*>(block);
  RotatedKeyHeader header;
  std::memcpy(&header, in, sizeof header);
  const uint8_t* sc = in + sizeof header;
  return {fp16_to_fp32(header.d_step), fp16_to_fp32(header.d_min), sc,
          reinterpret_cast<const int8_t*>(sc + head_dim), in + rotated_key_header_bytes(head_dim)};
}
// Bytes of a run of n codes.
inline size_t rotated_code_bytes(KvFormat f, size_t n) {
  return f == KvFormat::kR4 ? n / 2 : n / 4 + n / 8;
}
// Code i of a run of n codes (scalar; the oracle of the SIMD decoders).
int rotated_code(KvFormat f, const uint8_t* codes, size_t n, size_t i);

}  // namespace strata::kernels
