// Tensor element types as GGUF stores them (the `ggml_type` ids of the GGUF spec) and the block
// layout of each: a tensor row of n elements occupies n / block_size blocks of type_size bytes.
// This table is the single source for sizes; gguf/ validates files with it and kernels/ computes
// with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct DTypeTraits {
  std::string_view name;  // as llama.cpp prints it: "f32", "q4_K", ...
  uint32_t block_size;    // elements per block
  uint32_t type_size;     // bytes per block
};

// Traits of a type id read from a file; nullopt for ids no GGUF writer has ever used.
std::optional<DTypeTraits> dtype_traits(uint32_t id);
// Traits of a known type (never fails).
DTypeTraits traits(DType type);

inline std::string_view dtype_name(DType type) { return traits(type).name; }
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of a row of `n` elements; n must be a multiple of the block size (checked by callers).
inline size_t row_bytes(DType type, size_t n) {
  DTypeTraits t = traits(type);
  return n / t.block_size * t.type_size;
}

}  // namespace strata
