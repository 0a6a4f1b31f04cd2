// The per-target kernels behind matmul (matmul_kernels.h): Highway compiles this file once per
// SIMD target, and each entry point dispatches to the best target at run time.

#include "kernels/matmul_kernels.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_act.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "kernels/dot_common-inl.h"
#include "kernels/dot_f32_ordered-inl.h"
#include "kernels/dot_float-inl.h"
#include "kernels/dot_k-inl.h"
#include "kernels/dot_q32-inl.h"
#include "kernels/quantize_act-inl.h"
#include "kernels/tile_interleaved-inl.h"
#include "kernels/tile_k-inl.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

template <size_t kT, class Block>
HWY_INLINE void GatherTokenRows(const uint8_t* act, size_t act_stride, const Block** rows) {
  for (size_t t = 0; t < kT; ++t) rows[t] = reinterpret_cast<const Block*>(act + t * act_stride);
}

// out[t] = dot(weight row, activation row t) for t < kT.
template <size_t kT>
HWY_INLINE void DotRowTile(DType type, const uint8_t* row, const uint8_t* act, size_t act_stride,
                           size_t cols, float* out) {
  const ActBlockQ8* a32[kT];
  const BlockQ8_K* ak[kT];
  const float* x = reinterpret_cast<const float*>(act);
  const size_t x_stride = act_stride / sizeof(float);
  // Only the pointers of the type's own activation format are ever read.
  GatherTokenRows<kT>(act, act_stride, a32);
  GatherTokenRows<kT>(act, act_stride, ak);
  switch (type) {
    // F32 never gets here: MatmulRows sums it in the fixed orders (dot_f32_ordered-inl.h).
    case DType::kF16:
      return DotFloatTile<kT>(F16Weights{reinterpret_cast<const hwy::float16_t*>(row)}, x, x_stride,
                              cols, out);
    case DType::kBF16:
      return DotFloatTile<kT>(BF16Weights{reinterpret_cast<const uint16_t*>(row)}, x, x_stride,
                              cols, out);
    case DType::kQ4_0:
      return DotQ32<Q4_0Format, kT>(row, a32, cols / kQK32, out);
    case DType::kQ4_1:
      return DotQ32<Q4_1Format, kT>(row, a32, cols / kQK32, out);
    case DType::kQ5_0:
      return DotQ32<Q5_0Format, kT>(row, a32, cols / kQK32, out);
    case DType::kQ5_1:
      return DotQ32<Q5_1Format, kT>(row, a32, cols / kQK32, out);
    case DType::kQ8_0:
      return DotQ32<Q8_0Format, kT>(row, a32, cols / kQK32, out);
    case DType::kQ2_K:
      return DotK<DType::kQ2_K, kT>(row, ak, cols / kQK_K, out);
    case DType::kQ3_K:
      return DotK<DType::kQ3_K, kT>(row, ak, cols / kQK_K, out);
    case DType::kQ4_K:
      return DotK<DType::kQ4_K, kT>(row, ak, cols / kQK_K, out);
    case DType::kQ5_K:
      return DotK<DType::kQ5_K, kT>(row, ak, cols / kQK_K, out);
    case DType::kQ6_K:
      return DotK<DType::kQ6_K, kT>(row, ak, cols / kQK_K, out);
    default:
      for (size_t t = 0; t < kT; ++t) out[t] = std::numeric_limits<float>::quiet_NaN();
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// The register-tiled kernels, each with its packed activation unit (Act) and the elements one
// unit covers.
#if HWY_TARGET == HWY_AVX3_DL
template <class Format>
struct Q32Tile {
  using Act = ActPairQ8;
  static constexpr size_t kElements = 2 * kQK32;
  template <size_t kR, size_t kT>
  static void Run(const uint8_t* w, size_t w_stride, const Act* const* a, size_t units,
                  float* out) {
    TileQ32Vnni<Format, kR, kT>(w, w_stride, a, units, out);
  }
};
#endif  // HWY_AVX3_DL

template <class Block>
struct Q45KTile {
  using Act = ActBlockQ8KTiled;
  static constexpr size_t kElements = kQK_K;
  template <size_t kR, size_t kT>
  static void Run(const uint8_t* w, size_t w_stride, const Act* const* a, size_t units,
                  float* out) {
    TileQ45K<Block, kR, kT>(w, w_stride, a, units, out);
  }
};

struct Q6KTile {
  using Act = ActBlockQ8KTiled;
  static constexpr size_t kElements = kQK_K;
  template <size_t kR, size_t kT>
  static void Run(const uint8_t* w, size_t w_stride, const Act* const* a, size_t units,
                  float* out) {
    TileQ6K<kR, kT>(w, w_stride, a, units, out);
  }
};

template <class Tile, size_t kR>
HWY_INLINE void RunTile(size_t tile, const uint8_t* w, size_t w_stride,
                        const typename Tile::Act* const* a, size_t units, float* out) {
  switch (tile) {
    case 1:
      return Tile::template Run<kR, 1>(w, w_stride, a, units, out);
    case 2:
      return Tile::template Run<kR, 2>(w, w_stride, a, units, out);
    case 3:
      return Tile::template Run<kR, 3>(w, w_stride, a, units, out);
    default:
      return Tile::template Run<kR, 4>(w, w_stride, a, units, out);
  }
}

// Rows [row_begin, row_end) for every token from packed activations (Tile::Act units), 4 rows by
// kMaxTileTokens tokens at a time.
template <class Tile>
void MatmulRowsTiled(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end,
                     size_t cols, const uint8_t* packed, size_t n_tokens, float* y,
                     size_t y_stride) {
  using Act = typename Tile::Act;
  // One token (decode) is bound by the weight stream, not by compute: one row at a time keeps a
  // single sequential stream per thread, which the hardware prefetcher follows better than four
  // interleaved ones (measured on matvec 2048 x 8192 Q4_K/Q6_K).
  const size_t tile_rows = n_tokens == 1 ? 1 : 4;
  const size_t units = cols / Tile::kElements;
  const size_t packed_stride = units * sizeof(Act);
  float out[4 * kMaxTileTokens];
  for (size_t t0 = 0; t0 < n_tokens; t0 += kMaxTileTokens) {
    const size_t tile = std::min(kMaxTileTokens, n_tokens - t0);
    const Act* a[kMaxTileTokens];
    for (size_t t = 0; t < tile; ++t) {
      a[t] = reinterpret_cast<const Act*>(packed + (t0 + t) * packed_stride);
    }
    for (size_t r = row_begin; r < row_end; r += tile_rows) {
      const size_t n_rows = std::min(tile_rows, row_end - r);
      const uint8_t* rows = w + r * w_stride;
      switch (n_rows) {
        case 1:
          RunTile<Tile, 1>(tile, rows, w_stride, a, units, out);
          break;
        case 2:
          RunTile<Tile, 2>(tile, rows, w_stride, a, units, out);
          break;
        case 3:
          RunTile<Tile, 3>(tile, rows, w_stride, a, units, out);
          break;
        default:
          RunTile<Tile, 4>(tile, rows, w_stride, a, units, out);
          break;
      }
      for (size_t i = 0; i < n_rows; ++i) {
        for (size_t t = 0; t < tile; ++t) y[(t0 + t) * y_stride + r + i] = out[i * tile + t];
      }
    }
  }
}
#endif  // HWY_AVX3 || HWY_AVX3_DL

// True if this target has a register-tiled kernel for the type and row length (which then reads
// activations packed by PackTiledActivations, tiled_row_bytes per token).
bool HasTiledKernel(DType type, size_t cols) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ6_K) {
    return cols % kQK_K == 0;
  }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  static_assert(sizeof(ActPairQ8) == 2 * kQK32 * 2);
  return (type == DType::kQ4_0 || type == DType::kQ5_0 || type == DType::kQ8_0) &&
         cols % (2 * kQK32) == 0;
#else
  (void)type;
  (void)cols;
  return false;
#endif
}

// One token's quantized activation row (cols elements: ActBlockQ8 or BlockQ8_K) to the layout
// the type's tiled kernel reads.
void PackTiledActivations(DType type, const uint8_t* act, size_t cols, uint8_t* dst) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ6_K) {
    return PackActK(type != DType::kQ6_K, reinterpret_cast<const BlockQ8_K*>(act), cols / kQK_K,
                    reinterpret_cast<ActBlockQ8KTiled*>(dst));
  }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  PackActPairs(reinterpret_cast<const ActBlockQ8*>(act), cols / kQK32,
               reinterpret_cast<ActPairQ8*>(dst));
#else
  (void)type;
  (void)act;
  (void)cols;
  (void)dst;
#endif
}

// Y[t][r] for r in [row_begin, row_end) and every token, tiles of kMaxTileTokens tokens: each
// weight block is unpacked once per tile.
// With `packed` (activations from PackTiledActivations, when HasTiledKernel) the tiled kernel
// runs instead.
void MatmulRows(DType type, const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end,
                size_t cols, const uint8_t* act, size_t act_stride, const uint8_t* packed,
                size_t n_tokens, float* y, size_t y_stride) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (packed != nullptr) {
    switch (type) {
      case DType::kQ4_K:
        return MatmulRowsTiled<Q45KTile<BlockQ4_K>>(w, w_stride, row_begin, row_end, cols, packed,
                                                    n_tokens, y, y_stride);
      case DType::kQ5_K:
        return MatmulRowsTiled<Q45KTile<BlockQ5_K>>(w, w_stride, row_begin, row_end, cols, packed,
                                                    n_tokens, y, y_stride);
      case DType::kQ6_K:
        return MatmulRowsTiled<Q6KTile>(w, w_stride, row_begin, row_end, cols, packed, n_tokens, y,
                                        y_stride);
#if HWY_TARGET == HWY_AVX3_DL
      case DType::kQ4_0:
        return MatmulRowsTiled<Q32Tile<Q4_0Format>>(w, w_stride, row_begin, row_end, cols, packed,
                                                    n_tokens, y, y_stride);
      case DType::kQ5_0:
        return MatmulRowsTiled<Q32Tile<Q5_0Format>>(w, w_stride, row_begin, row_end, cols, packed,
                                                    n_tokens, y, y_stride);
      case DType::kQ8_0:
        return MatmulRowsTiled<Q32Tile<Q8_0Format>>(w, w_stride, row_begin, row_end, cols, packed,
                                                    n_tokens, y, y_stride);
#endif
      default:
        break;  // HasTiledKernel said no; never packed
    }
  }
#else
  (void)packed;
#endif
  if (type == DType::kF32) {
    return MatmulRowsF32(reinterpret_cast<const float*>(w), row_begin, row_end, cols,
                         reinterpret_cast<const float*>(act), n_tokens, y, y_stride);
  }
  ForEachRowTokenTile(
      row_begin, row_end, n_tokens, y, y_stride, [&]<size_t kT>(size_t r, size_t t0, float* out) {
        DotRowTile<kT>(type, w + r * w_stride, act + t0 * act_stride, act_stride, cols, out);
      });
}

// True if this target has an interleaved-layout kernel for the type (interleave.h). The K types
// then read activations packed by PackInterleavedActivations; Q4_0 and Q8_0 read ActBlockQ8 rows.
bool HasInterleavedKernel(DType type) {
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  return type == DType::kQ4_0 || type == DType::kQ8_0 || type == DType::kQ4_K ||
         type == DType::kQ6_K;
#else
  (void)type;
  return false;
#endif
}

// One token's BlockQ8_K row in the natural element order, with the sums the K kernels need.
void PackInterleavedActivations(const uint8_t* act, size_t cols, uint8_t* dst) {
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  PackActK(/*q45_order=*/false, reinterpret_cast<const BlockQ8_K*>(act), cols / kQK_K,
           reinterpret_cast<ActBlockQ8KTiled*>(dst));
#else
  (void)act;
  (void)cols;
  (void)dst;
#endif
}

#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
template <class F, size_t... kTs>
HWY_INLINE void CallWithTokenCount(size_t n, const F& f, std::index_sequence<kTs...>) {
  (void)((n == kTs + 1 ? (f.template operator()<kTs + 1>(), true) : false) || ...);
}

// For each group of 16 rows in [row_begin, row_end) and tile of up to kMaxTokens tokens:
// run<kT>(group, token rows, output) with output at Y[t0][r].
template <class Act, size_t kMaxTokens, class Run>
HWY_INLINE void ForEachGroupTile(const uint8_t* w, size_t w_stride, size_t row_begin,
                                 size_t row_end, const uint8_t* act, size_t act_stride,
                                 size_t n_tokens, float* y, size_t y_stride, const Run& run) {
  for (size_t r = row_begin; r < row_end; r += kInterleaveRows) {
    const uint8_t* group = w + r * w_stride;
    for (size_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
      const size_t tile = std::min(kMaxTokens, n_tokens - t0);
      const Act* a[kMaxTokens];
      for (size_t t = 0; t < tile; ++t) {
        a[t] = reinterpret_cast<const Act*>(act + (t0 + t) * act_stride);
      }
      float* out = y + t0 * y_stride + r;
      CallWithTokenCount(
          tile, [&]<size_t kT>() { run.template operator()<kT>(group, a, out); },
          std::make_index_sequence<kMaxTokens>());
    }
  }
}
#endif  // HWY_AVX3_DL || HWY_AVX3 || HWY_AVX2

// Rows [row_begin, row_end) (whole groups) of an interleaved matrix for every token. `act` is
// the ActBlockQ8 rows (Q4_0, Q8_0) or the PackInterleavedActivations rows (K types).
void MatmulInterleaved(DType type, const uint8_t* w, size_t w_stride, size_t row_begin,
                       size_t row_end, size_t cols, const uint8_t* act, size_t act_stride,
                       size_t n_tokens, float* y, size_t y_stride) {
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  const size_t blocks = cols / traits(type).block_size;
  auto groups = [&]<class Act, size_t kMaxTokens = kMaxGroupTokens>(const auto& kernel) {
    ForEachGroupTile<Act, kMaxTokens>(w, w_stride, row_begin, row_end, act, act_stride, n_tokens, y,
                                      y_stride, kernel);
  };
  switch (type) {
    case DType::kQ4_0:
      return groups.template operator()<ActBlockQ8>(
          [&]<size_t kT>(const uint8_t* g, const ActBlockQ8* const* a, float* out) {
            GroupQ32<kT, false>(g, blocks, a, out, y_stride);
          });
    case DType::kQ8_0:
      return groups.template operator()<ActBlockQ8>(
          [&]<size_t kT>(const uint8_t* g, const ActBlockQ8* const* a, float* out) {
            GroupQ32<kT, true>(g, blocks, a, out, y_stride);
          });
    case DType::kQ4_K:
      return groups.template operator()<ActBlockQ8KTiled, kMaxGroupTokensK>(
          [&]<size_t kT>(const uint8_t* g, const ActBlockQ8KTiled* const* a, float* out) {
            GroupQ4K<kT>(g, blocks, a, out, y_stride);
          });
    case DType::kQ6_K:
      return groups.template operator()<ActBlockQ8KTiled, kMaxGroupTokensK>(
          [&]<size_t kT>(const uint8_t* g, const ActBlockQ8KTiled* const* a, float* out) {
            GroupQ6K<kT>(g, blocks, a, out, y_stride);
          });
    default:
      break;  // HasInterleavedKernel said no
  }
#else
  (void)type, (void)w, (void)w_stride, (void)row_begin, (void)row_end, (void)cols, (void)act;
  (void)act_stride, (void)n_tokens, (void)y, (void)y_stride;
#endif
}

// The target this code was compiled for; reports which one dispatch picked.
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(MatmulRows);
HWY_EXPORT(MatmulInterleaved);
HWY_EXPORT(HasInterleavedKernel);
HWY_EXPORT(PackInterleavedActivations);
HWY_EXPORT(HasTiledKernel);
HWY_EXPORT(PackTiledActivations);
HWY_EXPORT(QuantizeActivations);
HWY_EXPORT(TargetName);

namespace dispatch {

void matmul_rows(DType type, const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end,
                 size_t cols, const uint8_t* act, size_t act_stride, const uint8_t* packed,
                 size_t n_tokens, float* y, size_t y_stride) {
  HWY_DYNAMIC_DISPATCH(MatmulRows)
  (type, w, w_stride, row_begin, row_end, cols, act, act_stride, packed, n_tokens, y, y_stride);
}

void matmul_interleaved(DType type, const uint8_t* w, size_t w_stride, size_t row_begin,
                        size_t row_end, size_t cols, const uint8_t* act, size_t act_stride,
                        size_t n_tokens, float* y, size_t y_stride) {
  HWY_DYNAMIC_DISPATCH(MatmulInterleaved)
  (type, w, w_stride, row_begin, row_end, cols, act, act_stride, n_tokens, y, y_stride);
}

bool has_interleaved_kernel(DType type) { return HWY_DYNAMIC_DISPATCH(HasInterleavedKernel)(type); }

void pack_interleaved_activations(const uint8_t* act, size_t cols, uint8_t* dst) {
  HWY_DYNAMIC_DISPATCH(PackInterleavedActivations)(act, cols, dst);
}

bool has_tiled_kernel(DType type, size_t cols) {
  return HWY_DYNAMIC_DISPATCH(HasTiledKernel)(type, cols);
}

void pack_tiled_activations(DType type, const uint8_t* act, size_t cols, uint8_t* dst) {
  HWY_DYNAMIC_DISPATCH(PackTiledActivations)(type, act, cols, dst);
}

}  // namespace dispatch

void quantize_activations(ActivationFormat format, const float* x, void* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)
  (format == ActivationFormat::kQ8_K, x, static_cast<uint8_t*>(dst), n);
}

const char* active_simd_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace strata::kernels
#endif  // HWY_ONCE
