#include "kernels/kv_format.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/fp16.h"

namespace strata::kernels {
namespace {

constexpr size_t kBlock32 = 32;  // elements per q8_0 / q4_0 block (GGML's QK8_0, QK4_0)
constexpr size_t kQ8_0Bytes = 2 + 32;
constexpr size_t kQ4_0Bytes = 2 + 16;

struct NamedFormat {
  const char* name;
  KvFormat format;
};
constexpr NamedFormat kNames[] = {{"f32", KvFormat::kF32},   {"f16", KvFormat::kF16},
                                  {"bf16", KvFormat::kBF16}, {"q8_0", KvFormat::kQ8_0},
                                  {"q4_0", KvFormat::kQ4_0}, {"r4", KvFormat::kR4},
                                  {"r3", KvFormat::kR3},     {"r8", KvFormat::kR8}};

uint16_t fp32_to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);  // nearest even
}

// A value as the f16 it is stored as.
float f16_round(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

// GGML's quantize_row_q8_0_ref: d = amax / 127, q = round(x / d).
void encode_q8_0(const float* x, size_t head_dim, uint8_t* out) {
  for (size_t b = 0; b < head_dim / kBlock32; ++b, x += kBlock32, out += kQ8_0Bytes) {
    float amax = 0.0f;
    for (size_t i = 0; i < kBlock32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = fp32_to_fp16(d);
    std::memcpy(out, &dh, 2);
    for (size_t i = 0; i < kBlock32; ++i) {
      out[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[i] * id)));
    }
  }
}

// GGML's quantize_row_q4_0_ref: d = max / -8 for the element of largest magnitude (sign kept),
// q = min(15, (int)(x / d + 8.5)); element j in the low nibble of byte j, j + 16 in the high.
void encode_q4_0(const float* x, size_t head_dim, uint8_t* out) {
  for (size_t b = 0; b < head_dim / kBlock32; ++b, x += kBlock32, out += kQ4_0Bytes) {
    float amax = 0.0f, max = 0.0f;
    for (size_t i = 0; i < kBlock32; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = fp32_to_fp16(d);
    std::memcpy(out, &dh, 2);
    for (size_t j = 0; j < kBlock32 / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
      out[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// A run of n codes (see the header for the two layouts).
void pack_codes(KvFormat f, const int* code, size_t n, uint8_t* out) {
  if (f == KvFormat::kR4) {
    for (size_t i = 0; i < n / 2; ++i) {
      out[i] = static_cast<uint8_t>(code[i] | (code[i + n / 2] << 4));
    }
    return;
  }
  const size_t quarter = n / 4;
  std::memset(out, 0, quarter + n / 8);
  for (size_t i = 0; i < n; ++i) {
    out[i % quarter] |= static_cast<uint8_t>((code[i] & 3) << (2 * (i / quarter)));
    out[quarter + i / 8] |= static_cast<uint8_t>(((code[i] >> 2) & 1) << (i % 8));
  }
}

// A rotated format's value row: the scale of least squared error among a few clippings of the
// largest magnitude (after rotation the elements are near Gaussian, and clipping the rare
// largest ones buys finer steps for the rest).
void encode_rotated_value(KvFormat f, const float* x, size_t head_dim, uint8_t* out) {
  const int levels = rotated_levels(f);
  const float center = static_cast<float>(levels - 1) / 2.0f;
  float amax = 0.0f;
  for (size_t i = 0; i < head_dim; ++i) amax = std::max(amax, std::fabs(x[i]));
  float best_scale = 0.0f, best_error = INFINITY;
  for (int k = 0; k < 8 && amax > 0.0f; ++k) {
    const float scale = f16_round(amax / center * (1.0f - 0.05f * static_cast<float>(k)));
    if (scale == 0.0f) continue;
    float error = 0.0f;
    for (size_t i = 0; i < head_dim; ++i) {
      const float c =
          std::clamp(std::nearbyint(x[i] / scale + center), 0.0f, static_cast<float>(levels - 1));
      const float e = x[i] - scale * (c - center);
      error += e * e;
    }
    if (error < best_error) best_error = error, best_scale = scale;
  }
  const uint16_t sh = fp32_to_fp16(best_scale);
  std::memcpy(out, &sh, 2);
  std::vector<int> code(head_dim, 0);
  for (size_t i = 0; i < head_dim && best_scale > 0.0f; ++i) {
    code[i] = static_cast<int>(std::clamp(std::nearbyint(x[i] / best_scale + center), 0.0f,
                                          static_cast<float>(levels - 1)));
  }
  if (best_scale == 0.0f) std::fill(code.begin(), code.end(), levels / 2);
  pack_codes(f, code.data(), head_dim, out + 2);
}

// A rotated format's key block: per channel, a minimum rounded down onto d_min's grid and a
// step rounded up onto d_step's grid, so that [m_c, m_c + (L - 1) s_c] still covers the channel.
void encode_rotated_keys(KvFormat f, const float* x, size_t n, size_t rows, size_t head_dim,
                         uint8_t* out) {
  const int levels = rotated_levels(f);
  std::vector<float> lo(head_dim, INFINITY), hi(head_dim, -INFINITY);
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < head_dim; ++c) {
      lo[c] = std::min(lo[c], x[t * head_dim + c]);
      hi[c] = std::max(hi[c], x[t * head_dim + c]);
    }
  }
  if (n == 0) std::fill(lo.begin(), lo.end(), 0.0f), std::fill(hi.begin(), hi.end(), 0.0f);
  float lo_max = 0.0f;
  for (float v : lo) lo_max = std::max(lo_max, std::fabs(v));
  const float d_min = f16_round(lo_max / 127.0f);
  std::vector<float> mins(head_dim), steps(head_dim);
  auto* mn = reinterpret_cast<int8_t*>(out + sizeof(RotatedKeyHeader) + head_dim);
  float step_max = 0.0f;
  for (size_t c = 0; c < head_dim; ++c) {
    const float m = d_min > 0.0f ? std::clamp(std::floor(lo[c] / d_min), -127.0f, 127.0f) : 0.0f;
    mn[c] = static_cast<int8_t>(m);
    mins[c] = m * d_min;
    steps[c] = (hi[c] - mins[c]) / static_cast<float>(levels - 1);
    step_max = std::max(step_max, steps[c]);
  }
  const float d_step = f16_round(step_max / 255.0f);
  uint8_t* sc = out + sizeof(RotatedKeyHeader);
  for (size_t c = 0; c < head_dim; ++c) {
    const float s = d_step > 0.0f ? std::clamp(std::ceil(steps[c] / d_step), 0.0f, 255.0f) : 0.0f;
    sc[c] = static_cast<uint8_t>(s);
    steps[c] = s * d_step;
  }
  const RotatedKeyHeader header{fp32_to_fp16(d_step), fp32_to_fp16(d_min)};
  std::memcpy(out, &header, sizeof header);
  const size_t channel_bytes = rotated_code_bytes(f, rows);
  uint8_t* codes = out + rotated_key_header_bytes(head_dim);
  std::vector<int> code(rows);
  for (size_t c = 0; c < head_dim; ++c) {
    for (size_t t = 0; t < rows; ++t) {
      const float v = t < n && steps[c] > 0.0f ? (x[t * head_dim + c] - mins[c]) / steps[c] : 0.0f;
      code[t] =
          static_cast<int>(std::clamp(std::nearbyint(v), 0.0f, static_cast<float>(levels - 1)));
    }
    pack_codes(f, code.data(), rows, codes + c * channel_bytes);
  }
}

void decode_row(KvFormat f, const uint8_t* row, size_t head_dim, float* x) {
  switch (f) {
    case KvFormat::kF32:
      std::memcpy(x, row, head_dim * sizeof(float));
      return;
    case KvFormat::kF16:
    case KvFormat::kBF16:
      for (size_t i = 0; i < head_dim; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        x[i] = f == KvFormat::kF16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
      }
      return;
    case KvFormat::kQ8_0:
    case KvFormat::kR8:
      for (size_t b = 0; b < head_dim / kBlock32; ++b, row += kQ8_0Bytes) {
        uint16_t dh;
        std::memcpy(&dh, row, 2);
        const float d = fp16_to_fp32(dh);
        for (size_t i = 0; i < kBlock32; ++i) {
          x[b * kBlock32 + i] = static_cast<float>(static_cast<int8_t>(row[2 + i])) * d;
        }
      }
      return;
    case KvFormat::kQ4_0:
      for (size_t b = 0; b < head_dim / kBlock32; ++b, row += kQ4_0Bytes) {
        uint16_t dh;
        std::memcpy(&dh, row, 2);
        const float d = fp16_to_fp32(dh);
        for (size_t j = 0; j < kBlock32 / 2; ++j) {
          x[b * kBlock32 + j] = static_cast<float>((row[2 + j] & 15) - 8) * d;
          x[b * kBlock32 + j + 16] = static_cast<float>((row[2 + j] >> 4) - 8) * d;
        }
      }
      return;
    case KvFormat::kR4:
    case KvFormat::kR3: {  // a value row
      uint16_t sh;
      std::memcpy(&sh, row, 2);
      const float scale = fp16_to_fp32(sh);
      const float center = static_cast<float>(rotated_levels(f) - 1) / 2.0f;
      for (size_t i = 0; i < head_dim; ++i) {
        x[i] = scale * (static_cast<float>(rotated_code(f, row + 2, head_dim, i)) - center);
      }
      return;
    }
  }
}

// The fixed signs of the rotation: bits of a fixed odd constant's powers (any fixed choice
// works; the signs only break up structure that the Hadamard matrix alone could align with).
bool rotation_sign_negative(size_t i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (i + 1);
  x ^= x >> 31;
  return (x >> 7) & 1;
}

void hadamard(float* x, size_t n) {
  for (size_t len = 1; len < n; len <<= 1) {
    for (size_t i = 0; i < n; i += 2 * len) {
      for (size_t j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (size_t i = 0; i < n; ++i) x[i] *= norm;
}

}  // namespace

const char* kv_format_name(KvFormat f) {
  for (const NamedFormat& n : kNames) {
    if (n.format == f) return n.name;
  }
  return nullptr;
}

bool kv_format_from_name(const char* name, KvFormat* f) {
  for (const NamedFormat& n : kNames) {
    if (std::strcmp(n.name, name) == 0) {
      *f = n.format;
      return true;
    }
  }
  return false;
}

bool kv_format_supports(KvFormat f, size_t head_dim, size_t rows) {
  switch (f) {
    case KvFormat::kQ8_0:
    case KvFormat::kQ4_0:
      return head_dim % kBlock32 == 0;
    case KvFormat::kR4:
    case KvFormat::kR3:
      return head_dim >= 32 && std::has_single_bit(head_dim) && rows % 32 == 0;
    case KvFormat::kR8:  // the Hadamard transform, then q8_0 blocks
      return head_dim >= 32 && std::has_single_bit(head_dim);
    case KvFormat::kBF16:  // read by block only (kernels/attention_block.h)
      return head_dim % kBlockDimMultiple == 0;
    default:
      return head_dim > 0;
  }
}

size_t kv_row_bytes(KvFormat f, KvRole role, size_t head_dim) {
  assert(kv_format_row_writable(f, role));
  switch (f) {
    case KvFormat::kF32:
      return 4 * head_dim;
    case KvFormat::kF16:
    case KvFormat::kBF16:
      return 2 * head_dim;
    case KvFormat::kQ8_0:
    case KvFormat::kR8:
      return head_dim / kBlock32 * kQ8_0Bytes;
    case KvFormat::kQ4_0:
      return head_dim / kBlock32 * kQ4_0Bytes;
    case KvFormat::kR4:
    case KvFormat::kR3:
      return 2 + rotated_code_bytes(f, head_dim);
  }
  return 0;
}

size_t kv_block_bytes(KvFormat f, KvRole role, size_t rows, size_t head_dim) {
  if (kv_format_row_writable(f, role)) return rows * kv_row_bytes(f, role, head_dim);
  return rotated_key_header_bytes(head_dim) + head_dim * rotated_code_bytes(f, rows);
}

int rotated_code(KvFormat f, const uint8_t* codes, size_t n, size_t i) {
  if (f == KvFormat::kR4) {
    const size_t half = n / 2;
    return i < half ? codes[i] & 15 : codes[i - half] >> 4;
  }
  const size_t quarter = n / 4;
  const int low = (codes[i % quarter] >> (2 * (i / quarter))) & 3;
  const int high = (codes[quarter + i / 8] >> (i % 8)) & 1;
  return low | (high << 2);
}

void kv_encode_row(KvFormat f, KvRole role, const float* x, size_t head_dim, void* block,
                   size_t row) {
  uint8_t* out = static_cast<uint8_t*>(block) + row * kv_row_bytes(f, role, head_dim);
  switch (f) {
    case KvFormat::kF32:
      std::memcpy(out, x, head_dim * sizeof(float));
      return;
    case KvFormat::kF16:
    case KvFormat::kBF16:
      for (size_t i = 0; i < head_dim; ++i) {
        const uint16_t h = f == KvFormat::kF16 ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case KvFormat::kQ8_0:
    case KvFormat::kR8:
      encode_q8_0(x, head_dim, out);
      return;
    case KvFormat::kQ4_0:
      encode_q4_0(x, head_dim, out);
      return;
    case KvFormat::kR4:
    case KvFormat::kR3:
      encode_rotated_value(f, x, head_dim, out);
      return;
  }
}

void kv_encode_block(KvFormat f, KvRole role, const float* x, size_t n, size_t rows,
                     size_t head_dim, void* block) {
  assert(n <= rows);
  if (!kv_format_row_writable(f, role)) {
    encode_rotated_keys(f, x, n, rows, head_dim, static_cast<uint8_t*>(block));
    return;
  }
  for (size_t t = 0; t < n; ++t) kv_encode_row(f, role, x + t * head_dim, head_dim, block, t);
  const size_t row = kv_row_bytes(f, role, head_dim);
  std::memset(static_cast<uint8_t*>(block) + n * row, 0, (rows - n) * row);
}

void kv_decode_row(KvFormat f, KvRole role, const void* block, size_t row, size_t head_dim,
                   float* x) {
  assert(kv_format_row_writable(f, role));
  const size_t bytes = kv_row_bytes(f, role, head_dim);
  decode_row(f, static_cast<const uint8_t*>(block) + row * bytes, head_dim, x);
}

void kv_decode_block(KvFormat f, KvRole role, const void* block, size_t n, size_t rows,
                     size_t head_dim, float* x) {
  const auto* in = static_cast<const uint8_t*>(block);
  if (kv_format_row_writable(f, role)) {
    const size_t row = kv_row_bytes(f, role, head_dim);
    for (size_t t = 0; t < n; ++t) decode_row(f, in + t * row, head_dim, x + t * head_dim);
    return;
  }
  const RotatedKeyScales k = read_rotated_keys(in, head_dim);
  const size_t channel_bytes = rotated_code_bytes(f, rows);
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < head_dim; ++c) {
      x[t * head_dim + c] = k.min(c) + k.step(c) * static_cast<float>(rotated_code(
                                                       f, k.codes + c * channel_bytes, rows, t));
    }
  }
}

void rotate_kv_head(float* x, size_t head_dim) {
  for (size_t i = 0; i < head_dim; ++i) {
    if (rotation_sign_negative(i)) x[i] = -x[i];
  }
  hadamard(x, head_dim);
}

void unrotate_kv_head(float* y, size_t head_dim) {
  hadamard(y, head_dim);  // H / sqrt(n) is its own inverse
  for (size_t i = 0; i < head_dim; ++i) {
    if (rotation_sign_negative(i)) y[i] = -y[i];
  }
}

}  // namespace strata::kernels
