// The interleaved weight layout: a weight matrix rearranged at load so that one SIMD register
// holds the same four elements of 16 consecutive rows. An integer dot-product instruction
// (AVX-512 VNNI vpdpbusd; on AVX2 vpmaddubsw + vpmaddwd over two 256-bit halves) then multiplies
// 16 rows by one broadcast activation group at once and leaves one int32 sum per row in each lane:
// no horizontal reductions, and a block's scales apply to 16 rows in one vector operation. The
// layout keeps the GGUF byte size, so a resident model is rearranged in place.
//
// Rows are taken in groups of kInterleaveRows; group g starts at byte g * 16 * row_bytes and holds
// the group's blocks in column order, each "group block" being 16 GGUF blocks rearranged as
// follows (u32 = 4 consecutive quant bytes of one row; rows 0-15 follow each other, 64 bytes):
//   Q8_0 (544 bytes):  d[16] (f16), then for j < 8: u32 qs[4j..] of each row, each byte + 128
//                      (so the quants are unsigned, as vpdpbusd's first operand must be).
//   Q4_0 (288 bytes):  d[16], then for j < 4: u32 qs[4j..] of each row (low nibbles: elements
//                      4j.., high nibbles: 16 + 4j..).
//   Q5_0 (352 bytes):  d[16], u32 qh of each row (bit i: the fifth bit of element i), then as
//                      Q4_0.
//   Q4_K (2304 bytes): d[16], dmin[16], scales byte planes p < 12 (byte p of each row's 12),
//                      then for chunk i < 4, j < 8: u32 qs[32i + 4j..] of each row.
//   Q5_K (2816 bytes): d[16], dmin[16], scales byte planes p < 12, then for j < 8: u32
//                      qh[4j..] of each row (bit s of byte l: the fifth bit of element 32s + l),
//                      then the quants as Q4_K. Only the AVX2 target reads it (interleaved
//                      where the AVX-512 targets keep their own tiled Q5_K kernel).
//   Q6_K (3360 bytes): d[16], int8 scale planes s < 16 (scales[s] of each row), then for half
//                      h < 2 and j < 8 three registers: u32 ql[64h + 4j..], u32
//                      ql[64h + 32 + 4j..] and u32 qh[32h + 4j..] of each row (the 4 x 4
//                      quants 128h + 32q + 4j.., q < 4, read in one sequential pass).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace strata::kernels {

inline constexpr size_t kInterleaveRows = 16;

// True if the type has an interleaved form and the matrix has whole groups of rows.
bool can_interleave(DType type, size_t rows, size_t cols);

// dst = src (rows x cols, GGUF row order) in the interleaved layout; same byte size.
// Requires can_interleave. src and dst must not overlap.
void interleave_rows(DType type, const uint8_t* src, size_t rows, size_t cols, uint8_t* dst);

// Rearranges groups [group_begin, group_end) of a matrix in place (through a scratch copy of
// one group at a time). Groups are independent: callers may split them over threads.
void interleave_groups_in_place(DType type, uint8_t* data, size_t cols, size_t group_begin,
                                size_t group_end);

// Row r (in 0..15) of an interleaved group, back in GGUF block order (row_bytes(type, cols)).
void deinterleave_row(DType type, const uint8_t* group, size_t cols, size_t r, uint8_t* dst);

}  // namespace strata::kernels
