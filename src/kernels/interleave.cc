#include "kernels/interleave.h"

#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/quant_blocks.h"

namespace strata::kernels {
namespace {

// One field of one row's GGUF block and where it goes in the group block. Interleaving copies
// src -> dst for every item; de-interleaving copies back the items of one row.
struct CopyItem {
  uint16_t dst;
  uint16_t src;
  uint8_t row;
  uint8_t len;
  bool flip_sign_bit;  // Q8_0 quants are stored + 128 (x ^ 0x80), undone by the same xor
};

struct GroupPlan {
  size_t block_bytes = 0;  // bytes of one GGUF block (the group block is 16 times that)
  std::vector<CopyItem> items;

  // The same `len` bytes at `src` of each of the 16 rows, one after another.
  void add(size_t src, size_t len, bool flip = false) {
    for (size_t r = 0; r < kInterleaveRows; ++r) {
      items.push_back({static_cast<uint16_t>(next_dst), static_cast<uint16_t>(src),
                       static_cast<uint8_t>(r), static_cast<uint8_t>(len), flip});
      next_dst += len;
    }
  }
  size_t next_dst = 0;
};

GroupPlan make_plan(DType type) {
  GroupPlan p;
  switch (type) {
    case DType::kQ8_0:
      p.block_bytes = sizeof(BlockQ8_0);
      p.add(offsetof(BlockQ8_0, d), 2);
      for (size_t j = 0; j < 8; ++j) p.add(offsetof(BlockQ8_0, qs) + 4 * j, 4, true);
      break;
    case DType::kQ4_0:
      p.block_bytes = sizeof(BlockQ4_0);
      p.add(offsetof(BlockQ4_0, d), 2);
      for (size_t j = 0; j < 4; ++j) p.add(offsetof(BlockQ4_0, qs) + 4 * j, 4);
      break;
    case DType::kQ5_0:
      p.block_bytes = sizeof(BlockQ5_0);
      p.add(offsetof(BlockQ5_0, d), 2);
      p.add(offsetof(BlockQ5_0, qh), 4);
      for (size_t j = 0; j < 4; ++j) p.add(offsetof(BlockQ5_0, qs) + 4 * j, 4);
      break;
    case DType::kQ4_K:
      p.block_bytes = sizeof(BlockQ4_K);
      p.add(offsetof(BlockQ4_K, d), 2);
      p.add(offsetof(BlockQ4_K, dmin), 2);
      for (size_t b = 0; b < 12; ++b) p.add(offsetof(BlockQ4_K, scales) + b, 1);
      for (size_t i = 0; i < 4; ++i) {
        for (size_t j = 0; j < 8; ++j) p.add(offsetof(BlockQ4_K, qs) + 32 * i + 4 * j, 4);
      }
      break;
    case DType::kQ5_K:
      p.block_bytes = sizeof(BlockQ5_K);
      p.add(offsetof(BlockQ5_K, d), 2);
      p.add(offsetof(BlockQ5_K, dmin), 2);
      for (size_t b = 0; b < 12; ++b) p.add(offsetof(BlockQ5_K, scales) + b, 1);
      for (size_t j = 0; j < 8; ++j) p.add(offsetof(BlockQ5_K, qh) + 4 * j, 4);
      for (size_t i = 0; i < 4; ++i) {
        for (size_t j = 0; j < 8; ++j) p.add(offsetof(BlockQ5_K, qs) + 32 * i + 4 * j, 4);
      }
      break;
    case DType::kQ6_K:
      p.block_bytes = sizeof(BlockQ6_K);
      p.add(offsetof(BlockQ6_K, d), 2);
      for (size_t s = 0; s < 16; ++s) p.add(offsetof(BlockQ6_K, scales) + s, 1);
      for (size_t h = 0; h < 2; ++h) {
        for (size_t j = 0; j < 8; ++j) {
          p.add(offsetof(BlockQ6_K, ql) + 64 * h + 4 * j, 4);
          p.add(offsetof(BlockQ6_K, ql) + 64 * h + 32 + 4 * j, 4);
          p.add(offsetof(BlockQ6_K, qh) + 32 * h + 4 * j, 4);
        }
      }
      break;
    default:
      break;
  }
  assert(p.block_bytes == 0 || p.next_dst == kInterleaveRows * p.block_bytes);
  return p;
}

// The plans are constant tables, built on first use.
const GroupPlan& plan(DType type) {
  static const GroupPlan q8_0 = make_plan(DType::kQ8_0), q4_0 = make_plan(DType::kQ4_0),
                         q5_0 = make_plan(DType::kQ5_0), q4_k = make_plan(DType::kQ4_K),
                         q5_k = make_plan(DType::kQ5_K), q6_k = make_plan(DType::kQ6_K), none;
  switch (type) {
    case DType::kQ8_0:
      return q8_0;
    case DType::kQ4_0:
      return q4_0;
    case DType::kQ5_0:
      return q5_0;
    case DType::kQ4_K:
      return q4_k;
    case DType::kQ5_K:
      return q5_k;
    case DType::kQ6_K:
      return q6_k;
    default:
      return none;
  }
}

void copy_field(const uint8_t* from, uint8_t* to, size_t len, bool flip) {
  for (size_t i = 0; i < len; ++i) to[i] = flip ? from[i] ^ 0x80 : from[i];
}

}  // namespace

bool can_interleave(DType type, size_t rows, size_t cols) {
  const GroupPlan& p = plan(type);
  return p.block_bytes != 0 && rows % kInterleaveRows == 0 && rows > 0 &&
         cols % traits(type).block_size == 0 && cols > 0;
}

void interleave_rows(DType type, const uint8_t* src, size_t rows, size_t cols, uint8_t* dst) {
  assert(can_interleave(type, rows, cols));
  const GroupPlan& p = plan(type);
  const size_t stride = row_bytes(type, cols);
  const size_t blocks = cols / traits(type).block_size;
  const size_t group_block = kInterleaveRows * p.block_bytes;
  for (size_t g = 0; g < rows / kInterleaveRows; ++g) {
    const uint8_t* rows_in = src + g * kInterleaveRows * stride;
    uint8_t* out = dst + g * kInterleaveRows * stride;
    for (size_t b = 0; b < blocks; ++b) {
      for (const CopyItem& it : p.items) {
        copy_field(rows_in + it.row * stride + b * p.block_bytes + it.src,
                   out + b * group_block + it.dst, it.len, it.flip_sign_bit);
      }
    }
  }
}

void interleave_groups_in_place(DType type, uint8_t* data, size_t cols, size_t group_begin,
                                size_t group_end) {
  const size_t group_bytes = kInterleaveRows * row_bytes(type, cols);
  std::vector<uint8_t> scratch(group_bytes);
  for (size_t g = group_begin; g < group_end; ++g) {
    std::memcpy(scratch.data(), data + g * group_bytes, group_bytes);
    interleave_rows(type, scratch.data(), kInterleaveRows, cols, data + g * group_bytes);
  }
}

void deinterleave_row(DType type, const uint8_t* group, size_t cols, size_t r, uint8_t* dst) {
  const GroupPlan& p = plan(type);
  const size_t blocks = cols / traits(type).block_size;
  const size_t group_block = kInterleaveRows * p.block_bytes;
  for (size_t b = 0; b < blocks; ++b) {
    for (const CopyItem& it : p.items) {
      if (it.row != r) continue;
      copy_field(group + b * group_block + it.dst, dst + b * p.block_bytes + it.src, it.len,
                 it.flip_sign_bit);
    }
  }
}

}  // namespace strata::kernels
