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
#include "kernels/tile_interleaved_avx2-inl.h"  // after tile_interleaved-inl.h
#include "kernels/tile_k-inl.h"

HWY_BEFORE_NAMESPACE();
namespace strata::kernels::HWY_NAMESPACE {

template <size_t kT, class Block>
HWY_INLINE void GatherTokenRows(const uint8_t* act, size_t act_stride, const Block** rows) {
  for (size_t t = 0; t < kT; ++t) rows[t] = reinterpret_cast<const Block*>(act + t * act_stride);
}

// The per-row kernels, one per weight type with the type fixed at compile time: Y[t][r] for r in
// [row_begin, row_end) and every token, tiles of kMaxTileTokens tokens (each weight block is
// unpacked once per tile). Signature of MatmulKernel::RowsFn.
template <class Format>
void RowsQ32(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end, size_t cols,
             const uint8_t* act, size_t act_stride, size_t n_tokens, float* y, size_t y_stride) {
  ForEachRowTokenTile(row_begin, row_end, n_tokens, y, y_stride,
                      [&]<size_t kT>(size_t r, size_t t0, float* out) {
                        const ActBlockQ8* a[kT];
                        GatherTokenRows<kT>(act + t0 * act_stride, act_stride, a);
                        DotQ32<Format, kT>(w + r * w_stride, a, cols / kQK32, out);
                      });
}

template <DType kType>
void RowsK(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end, size_t cols,
           const uint8_t* act, size_t act_stride, size_t n_tokens, float* y, size_t y_stride) {
  ForEachRowTokenTile(row_begin, row_end, n_tokens, y, y_stride,
                      [&]<size_t kT>(size_t r, size_t t0, float* out) {
                        const BlockQ8_K* a[kT];
                        GatherTokenRows<kT>(act + t0 * act_stride, act_stride, a);
                        DotK<kType, kT>(w + r * w_stride, a, cols / kQK_K, out);
                      });
}

// kR rows of F16 / BF16 weights from `first` (w_stride bytes apart) against a tile of kT tokens,
// kT chosen at run time (1 to kMaxTileTokens).
template <size_t kR, class Weights, class Element>
HWY_INLINE void FloatRowsTile(const uint8_t* first, size_t w_stride, size_t tile, const float* x,
                              size_t x_stride, size_t cols, float* out) {
  Weights rows[kR];
  for (size_t r = 0; r < kR; ++r) {
    rows[r] = Weights{reinterpret_cast<const Element*>(first + r * w_stride)};
  }
  switch (tile) {
    case 1:
      return DotFloatRowsTile<kR, 1>(rows, x, x_stride, cols, out);
    case 2:
      return DotFloatRowsTile<kR, 2>(rows, x, x_stride, cols, out);
    case 3:
      return DotFloatRowsTile<kR, 3>(rows, x, x_stride, cols, out);
    default:
      return DotFloatRowsTile<kR, kMaxTileTokens>(rows, x, x_stride, cols, out);
  }
}

// F16 and BF16 rows with f32 activations. Decode (one token) streams each row once with two
// accumulators: memory-bound, it runs at the read bandwidth (a 4-row tile ran Gemma-3-1B F16
// decode at 17 t/s instead of 29). Two tokens or more (a verification of guesses, a prompt) take
// register tiles of 4 rows by up to kMaxTileTokens tokens over row blocks of about 256 KiB of
// weights, each block meeting every token tile before the next, so each weight comes from L2,
// not memory, once per tile. One row at a time, 2 and 3 tokens were bound by the activation
// loads (two per FMA) and the per-row reductions: a 2048 x 2048 F16 matrix from DRAM took 1.6
// and 2.4 times one token's time on a Zen 4 core, and takes 1.25-1.4 and 1.3-1.5 times in tiles
// (`strata_kernel_bench --benchmark_filter=MatmulFew`, rounds on a noisy machine).
template <class Weights, class Element>
void RowsFloat(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end, size_t cols,
               const uint8_t* act, size_t act_stride, size_t n_tokens, float* y, size_t y_stride) {
  if (n_tokens == 1) {
    const auto* x = reinterpret_cast<const float*>(act);
    for (size_t r = row_begin; r < row_end; ++r) {
      y[r] = DotFloatRow(Weights{reinterpret_cast<const Element*>(w + r * w_stride)}, x, cols);
    }
    return;
  }
  constexpr size_t kR = 4;
  constexpr size_t kBlockBytes = size_t{256} << 10;
  const size_t block = std::max(kR, kBlockBytes / std::max<size_t>(w_stride, 1) / kR * kR);
  const size_t x_stride = act_stride / sizeof(float);
  // Short rows put a tile's 4 rows in one 4 KiB page, and its loads go back and forth in it,
  // which the hardware prefetchers do not follow: the tile 2 ahead is asked for explicitly.
  // (Longer rows are 4 streams, one per page, which they do follow, and asking changed nothing.)
  // 2 rather than 8 tiles ahead: 768 x 256 F16 from the last-level cache (MatmulFew, Zen 4),
  // 2 tokens 12-14 us instead of 17-19, 3 tokens 18 instead of 25-28; 1-3 ahead were alike.
  constexpr size_t kPrefetchTiles = 2;
  const bool prefetch = kR * w_stride <= 4096;
  float out[kR * kMaxTileTokens];
  for (size_t rb = row_begin; rb < row_end; rb += block) {
    const size_t re = std::min(row_end, rb + block);
    for (size_t t0 = 0; t0 < n_tokens; t0 += kMaxTileTokens) {
      const size_t tile = std::min(kMaxTileTokens, n_tokens - t0);
      const float* x = reinterpret_cast<const float*>(act + t0 * act_stride);
      size_t r = rb;
      for (; r + kR <= re; r += kR) {
        if (prefetch && r + kPrefetchTiles * kR < re) {
          const uint8_t* ahead = w + (r + kPrefetchTiles * kR) * w_stride;
          for (size_t b = 0; b < kR * w_stride; b += 64) __builtin_prefetch(ahead + b);
        }
        FloatRowsTile<kR, Weights, Element>(w + r * w_stride, w_stride, tile, x, x_stride, cols,
                                            out);
        for (size_t t = 0; t < tile; ++t) {
          for (size_t i = 0; i < kR; ++i) y[(t0 + t) * y_stride + r + i] = out[t * kR + i];
        }
      }
      for (; r < re; ++r) {
        FloatRowsTile<1, Weights, Element>(w + r * w_stride, w_stride, tile, x, x_stride, cols,
                                           out);
        for (size_t t = 0; t < tile; ++t) y[(t0 + t) * y_stride + r] = out[t];
      }
    }
  }
}

// F32 sums in the fixed orders of dot_f32_ordered-inl.h.
void RowsF32(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end, size_t cols,
             const uint8_t* act, size_t act_stride, size_t n_tokens, float* y, size_t y_stride) {
  MatmulRowsF32(reinterpret_cast<const float*>(w), row_begin, row_end, cols,
                reinterpret_cast<const float*>(act), n_tokens, y, y_stride);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// The register-tiled kernels, each with its packed activation unit (Act) and the elements one
// unit covers.
#if HWY_TARGET == HWY_AVX3_DL
// One token's ActBlockQ8 row as the pairs the tiled Q32 kernels read (MatmulKernel::PackFn).
void PackPairs(const uint8_t* act, size_t cols, uint8_t* dst) {
  PackActPairs(reinterpret_cast<const ActBlockQ8*>(act), cols / kQK32,
               reinterpret_cast<ActPairQ8*>(dst));
}

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
void RowsTiled(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end, size_t cols,
               const uint8_t* packed, size_t packed_stride, size_t n_tokens, float* y,
               size_t y_stride) {
  using Act = typename Tile::Act;
  // One token (decode) is bound by the weight stream, not by compute: one row at a time keeps a
  // single sequential stream per thread, which the hardware prefetcher follows better than four
  // interleaved ones (measured on matvec 2048 x 8192 Q4_K/Q6_K).
  const size_t tile_rows = n_tokens == 1 ? 1 : 4;
  const size_t units = cols / Tile::kElements;
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

// True if this target has a register-tiled kernel for the type and row length.
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

// True if this target has an interleaved-layout kernel for the type (interleave.h).
bool HasInterleavedKernel(DType type) {
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  // Q5_K: only AVX2, which has no tiled K kernels; the AVX-512 targets keep their tiled one.
  return type == DType::kQ4_0 || type == DType::kQ5_0 || type == DType::kQ8_0 ||
         type == DType::kQ4_K || type == DType::kQ6_K ||
         (HWY_TARGET == HWY_AVX2 && type == DType::kQ5_K);
#else
  (void)type;
  return false;
#endif
}

#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
// One token's BlockQ8_K row packed with the sums the K kernels need: in the order the tiled
// Q4_K/Q5_K kernels read, or in the natural element order (tiled Q6_K, interleaved K kernels).
// Signature of MatmulKernel::PackFn.
template <bool kQ45Order>
void PackK(const uint8_t* act, size_t cols, uint8_t* dst) {
  PackActK(kQ45Order, reinterpret_cast<const BlockQ8_K*>(act), cols / kQK_K,
           reinterpret_cast<ActBlockQ8KTiled*>(dst));
}

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

// The interleaved kernels: rows [row_begin, row_end) (whole groups) for every token, from the
// ActBlockQ8 rows (Q4_0, Q5_0, Q8_0) or the PackK<false> rows (K types). Signature of
// MatmulKernel::RowsFn.
template <DType kType>
void InterleavedQ32(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end,
                    size_t cols, const uint8_t* act, size_t act_stride, size_t n_tokens, float* y,
                    size_t y_stride) {
  const size_t blocks = cols / kQK32;
  ForEachGroupTile<ActBlockQ8, kMaxGroupTokens<kType>>(
      w, w_stride, row_begin, row_end, act, act_stride, n_tokens, y, y_stride,
      [&]<size_t kT>(const uint8_t* g, const ActBlockQ8* const* a, float* out) {
        GroupQ32<kT, kType>(g, blocks, a, out, y_stride);
      });
}

template <DType kType>
void InterleavedK(const uint8_t* w, size_t w_stride, size_t row_begin, size_t row_end, size_t cols,
                  const uint8_t* act, size_t act_stride, size_t n_tokens, float* y,
                  size_t y_stride) {
  const size_t blocks = cols / kQK_K;
  ForEachGroupTile<ActBlockQ8KTiled, kMaxGroupTokensK>(
      w, w_stride, row_begin, row_end, act, act_stride, n_tokens, y, y_stride,
      [&]<size_t kT>(const uint8_t* g, const ActBlockQ8KTiled* const* a, float* out) {
        if constexpr (kType == DType::kQ4_K) {
          GroupQ4K<kT>(g, blocks, a, out, y_stride);
        } else if constexpr (kType == DType::kQ5_K) {
          GroupQ4K<kT, /*kQ5=*/true>(g, blocks, a, out, y_stride);
        } else {
          GroupQ6K<kT>(g, blocks, a, out, y_stride);
        }
      });
}
#endif  // HWY_AVX3_DL || HWY_AVX3 || HWY_AVX2

// The interleaved kernel for the type, where this target has one.
bool SelectInterleavedKernel(DType type, MatmulKernel& k) {
  if (!HasInterleavedKernel(type)) return false;
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  switch (type) {
    case DType::kQ4_0:
      k.rows = &InterleavedQ32<DType::kQ4_0>;
      return true;
    case DType::kQ5_0:
      k.rows = &InterleavedQ32<DType::kQ5_0>;
      return true;
    case DType::kQ8_0:
      k.rows = &InterleavedQ32<DType::kQ8_0>;
      return true;
    case DType::kQ4_K:
      k.rows = &InterleavedK<DType::kQ4_K>;
      break;
#if HWY_TARGET == HWY_AVX2  // the one target HasInterleavedKernel gives Q5_K
    case DType::kQ5_K:
      k.rows = &InterleavedK<DType::kQ5_K>;
      break;
#endif
    case DType::kQ6_K:
      k.rows = &InterleavedK<DType::kQ6_K>;
      break;
    default:
      return false;
  }
  // The K kernels read PackK's rows in natural element order.
  k.pack = &PackK<false>;
  k.pack_unit_elements = kQK_K;
  k.pack_unit_bytes = sizeof(ActBlockQ8KTiled);
  return true;
#else
  return false;
#endif
}

// The register-tiled kernel for the type and row length, where this target has one. The tiled
// kernels beat the per-row ones on one token too (one row at a time; Q4_0 decode on llama-1b
// 1.12x in alternating runs), and running them for any token count keeps a row's result
// independent of how many tokens share the call.
bool SelectTiledKernel(DType type, size_t cols, MatmulKernel& k) {
  if (!HasTiledKernel(type, cols)) return false;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  k.pack_unit_elements = kQK_K;
  k.pack_unit_bytes = sizeof(ActBlockQ8KTiled);
  switch (type) {
    case DType::kQ4_K:
      k.rows = &RowsTiled<Q45KTile<BlockQ4_K>>;
      k.pack = &PackK<true>;
      return true;
    case DType::kQ5_K:
      k.rows = &RowsTiled<Q45KTile<BlockQ5_K>>;
      k.pack = &PackK<true>;
      return true;
    case DType::kQ6_K:
      k.rows = &RowsTiled<Q6KTile>;
      k.pack = &PackK<false>;
      return true;
    default:
      break;
  }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  k.pack_unit_elements = 2 * kQK32;
  k.pack_unit_bytes = sizeof(ActPairQ8);
  k.pack = &PackPairs;
  switch (type) {
    case DType::kQ4_0:
      k.rows = &RowsTiled<Q32Tile<Q4_0Format>>;
      return true;
    case DType::kQ5_0:
      k.rows = &RowsTiled<Q32Tile<Q5_0Format>>;
      return true;
    case DType::kQ8_0:
      k.rows = &RowsTiled<Q32Tile<Q8_0Format>>;
      return true;
    default:
      break;
  }
#endif
  return false;
}

// The per-row kernel for the type.
void SelectRowsKernel(DType type, MatmulKernel& k) {
  switch (type) {
    case DType::kF32:
      k.rows = &RowsF32;
      break;
    case DType::kF16:
      k.rows = &RowsFloat<F16Weights, hwy::float16_t>;
      break;
    case DType::kBF16:
      k.rows = &RowsFloat<BF16Weights, uint16_t>;
      break;
    case DType::kQ4_0:
      k.rows = &RowsQ32<Q4_0Format>;
      break;
    case DType::kQ4_1:
      k.rows = &RowsQ32<Q4_1Format>;
      break;
    case DType::kQ5_0:
      k.rows = &RowsQ32<Q5_0Format>;
      break;
    case DType::kQ5_1:
      k.rows = &RowsQ32<Q5_1Format>;
      break;
    case DType::kQ8_0:
      k.rows = &RowsQ32<Q8_0Format>;
      break;
    case DType::kQ2_K:
      k.rows = &RowsK<DType::kQ2_K>;
      break;
    case DType::kQ3_K:
      k.rows = &RowsK<DType::kQ3_K>;
      break;
    case DType::kQ4_K:
      k.rows = &RowsK<DType::kQ4_K>;
      break;
    case DType::kQ5_K:
      k.rows = &RowsK<DType::kQ5_K>;
      break;
    case DType::kQ6_K:
      k.rows = &RowsK<DType::kQ6_K>;
      break;
    default:
      break;
  }
}

// The one place a matrix's kernel is chosen (select_matmul_kernel).
MatmulKernel SelectMatmulKernel(DType type, WeightLayout layout, size_t cols) {
  MatmulKernel k;
  k.type = type;
  k.layout = layout;
  k.format = activation_format(type);
  if (k.format == ActivationFormat::kNone) return k;
  if (layout == WeightLayout::kInterleaved && SelectInterleavedKernel(type, k)) return k;
  // No interleaved kernel on this target: the groups are read back into GGUF rows.
  k.read_back_groups = layout == WeightLayout::kInterleaved;
  if (!SelectTiledKernel(type, cols, k)) SelectRowsKernel(type, k);
  return k;
}

// The target this code was compiled for; reports which one dispatch picked.
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace strata::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata::kernels {

HWY_EXPORT(SelectMatmulKernel);
HWY_EXPORT(HasInterleavedKernel);
HWY_EXPORT(QuantizeActivations);
HWY_EXPORT(TargetName);

namespace dispatch {

bool has_interleaved_kernel(DType type) { return HWY_DYNAMIC_DISPATCH(HasInterleavedKernel)(type); }

}  // namespace dispatch

MatmulKernel select_matmul_kernel(DType type, WeightLayout layout, size_t cols) {
  return HWY_DYNAMIC_DISPATCH(SelectMatmulKernel)(type, layout, cols);
}

void quantize_activations(ActivationFormat format, const float* x, void* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)
  (format == ActivationFormat::kQ8_K, x, static_cast<uint8_t*>(dst), n);
}

const char* active_simd_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace strata::kernels
#endif  // HWY_ONCE
