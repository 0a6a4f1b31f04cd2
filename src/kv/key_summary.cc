#include "kv/key_summary.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace strata::kv {

// Truncating an f32 to its high 16 bits rounds its magnitude down; for a negative x that is
// rounding up, so the magnitude then steps one bfloat16 ulp further from zero.
uint16_t bf16_round_down(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  uint16_t b = static_cast<uint16_t>(bits >> 16);
  if ((bits & 0x8000FFFFu) > 0x80000000u) ++b;  // negative with bits lost
  return b;
}

uint16_t bf16_round_up(float x) { return static_cast<uint16_t>(bf16_round_down(-x) ^ 0x8000u); }

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

KeySummaries::KeySummaries(const KvShape& shape, size_t n_pages)
    : n_kv_heads_(shape.n_kv_heads),
      head_dim_(shape.head_dim),
      page_stride_(shape.n_layers * shape.n_kv_heads * 2 * shape.head_dim),
      data_(n_pages * page_stride_) {}

void KeySummaries::add(PageId page, size_t layer, size_t kv_head, const float* k, bool first) {
  uint16_t* lo = mutable_of(page, layer, kv_head);
  uint16_t* hi = lo + head_dim_;
  for (size_t d = 0; d < head_dim_; ++d) {
    const uint16_t down = bf16_round_down(k[d]), up = bf16_round_up(k[d]);
    if (first || bf16_to_float(down) < bf16_to_float(lo[d])) lo[d] = down;
    if (first || bf16_to_float(up) > bf16_to_float(hi[d])) hi[d] = up;
  }
}

void KeySummaries::copy(PageId from, PageId to) {
  std::memcpy(data_.data() + size_t{to} * page_stride_, data_.data() + size_t{from} * page_stride_,
              page_stride_ * sizeof(uint16_t));
}

}  // namespace strata::kv
