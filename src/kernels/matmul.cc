// matvec / matmul entry points: quantize the activations once, split the rows into chunks over
// the thread pool, and run the best SIMD target's row kernels (Highway runtime dispatch).

#include "kernels/matmul.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "base/aligned.h"
#include "kernels/interleave.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_act.h"
#include "kernels/reference/dequantize_ref.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul.cc"
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
#if HWY_TARGET == HWY_AVX3_DL
  return type == DType::kQ4_0 || type == DType::kQ8_0 || type == DType::kQ4_K ||
         type == DType::kQ6_K;
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  return type == DType::kQ4_0 || type == DType::kQ8_0;
#else
  (void)type;
  return false;
#endif
}

// One token's BlockQ8_K row in the natural element order, with the sums the K kernels need.
void PackInterleavedActivations(const uint8_t* act, size_t cols, uint8_t* dst) {
#if HWY_TARGET == HWY_AVX3_DL
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
#if HWY_TARGET == HWY_AVX3_DL
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
#endif
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

namespace {

// Bytes per token of the activations the type's tiled kernel reads (see HasTiledKernel).
size_t tiled_row_bytes(DType type, size_t cols) {
  if (activation_format(type) == ActivationFormat::kQ8_K) {
    return cols / kQK_K * sizeof(ActBlockQ8KTiled);
  }
  return 2 * cols;  // ActPairQ8: a byte and a broadcast f32 scale share per element pair
}

// Multiply-adds below which handing a task to another thread costs more than it saves (a wake-up
// is microseconds, far more when the cores are shared).
constexpr size_t kMinTaskWork = size_t{1} << 15;

// Rows per parallel_for task. One token (decode) streams the weights from memory: two long tasks
// per thread keep each thread on one sequential stream that its prefetches run ahead of (tg128
// of llama-1b Q4_K_M, 102K vocabulary, 2 threads: 58-68 -> 64-74 t/s in alternating runs
// against 8 tasks per thread of at most 64 rows). More tokens: enough tasks to balance the
// threads (about 8 each), 16-64 rows. Never less than kMinTaskWork, so small matrices (tiny
// models) run on one thread.
size_t rows_per_task(size_t rows, size_t cols, size_t n_tokens, size_t threads) {
  const size_t balanced = n_tokens == 1
                              ? std::max<size_t>((rows + 2 * threads - 1) / (2 * threads), 16)
                              : std::clamp<size_t>(rows / (threads * 8), 16, 64);
  const size_t min_rows = (kMinTaskWork + cols * n_tokens - 1) / (cols * n_tokens);
  return std::max(balanced, min_rows);
}

// What a product's kernel reads besides the quantized rows: nothing (the per-row kernels and
// the interleaved Q4_0 / Q8_0 ones), the rows packed for the interleaved K kernels (the same for
// every K type), or packed for the type's register-tiled kernel.
enum class Packing : uint8_t { kNone, kInterleavedK, kTiled };

// X as one kind of kernel reads it: quantized rows (X itself for F32 weights) and, where the
// kernel wants them, the same rows packed.
struct KernelInput {
  ActivationFormat format = ActivationFormat::kNone;
  Packing packing = Packing::kNone;
  DType tiled_type = DType::kF32;  // the type whose tiled layout `packed` has
  AlignedBuffer<uint8_t> quantized, packed;
  const uint8_t* rows = nullptr;
  size_t row_stride = 0, packed_stride = 0;
};

// A product's kernel input: quantizes X into `format` and packs it, or finds an input an earlier
// product of the same call already prepared.
const KernelInput& input_for(std::vector<KernelInput>& inputs, ActivationFormat format,
                             Packing packing, DType type, const float* x, size_t cols,
                             size_t n_tokens, ThreadPool& pool) {
  const DType tiled_type = packing == Packing::kTiled ? type : DType::kF32;
  for (const KernelInput& in : inputs) {
    if (in.format == format && in.packing == packing && in.tiled_type == tiled_type) return in;
  }
  KernelInput in;
  in.format = format;
  in.packing = packing;
  in.tiled_type = tiled_type;
  // Rows of this format prepared for another packing are reused.
  for (const KernelInput& other : inputs) {
    if (other.format == format) {
      in.rows = other.rows;
      in.row_stride = other.row_stride;
      break;
    }
  }
  if (in.rows == nullptr && format == ActivationFormat::kF32) {
    in.rows = reinterpret_cast<const uint8_t*>(x);
    in.row_stride = cols * sizeof(float);
  } else if (in.rows == nullptr) {
    in.row_stride = activation_row_bytes(format, cols);
    in.quantized = AlignedBuffer<uint8_t>(in.row_stride * n_tokens);
    uint8_t* dst = in.quantized.data();
    pool.parallel_for(n_tokens, [&](size_t t, size_t) {
      quantize_activations(format, x + t * cols, dst + t * in.row_stride, cols);
    });
    in.rows = in.quantized.data();
  }
  if (packing != Packing::kNone) {
    in.packed_stride = packing == Packing::kInterleavedK ? cols / kQK_K * sizeof(ActBlockQ8KTiled)
                                                         : tiled_row_bytes(type, cols);
    in.packed = AlignedBuffer<uint8_t>(in.packed_stride * n_tokens);
    uint8_t* dst = in.packed.data();
    pool.parallel_for(n_tokens, [&](size_t t, size_t) {
      const uint8_t* row = in.rows + t * in.row_stride;
      if (packing == Packing::kInterleavedK) {
        HWY_DYNAMIC_DISPATCH(PackInterleavedActivations)(row, cols, dst + t * in.packed_stride);
      } else {
        HWY_DYNAMIC_DISPATCH(PackTiledActivations)(type, row, cols, dst + t * in.packed_stride);
      }
    });
  }
  inputs.push_back(std::move(in));
  return inputs.back();
}

// Rows [begin, end) of one product for every token.
void run_rows(const MatmulProduct& p, bool interleaved_kernel, const KernelInput& in, size_t begin,
              size_t end, size_t n_tokens) {
  const size_t w_stride = row_bytes(p.type, p.cols);
  const uint8_t* weights = static_cast<const uint8_t*>(p.w);
  if (p.layout == WeightLayout::kRows) {
    HWY_DYNAMIC_DISPATCH(MatmulRows)
    (p.type, weights, w_stride, begin, end, p.cols, in.rows, in.row_stride, in.packed.data(),
     n_tokens, p.y, p.rows);
  } else if (interleaved_kernel) {
    const bool is_packed = in.packing != Packing::kNone;
    HWY_DYNAMIC_DISPATCH(MatmulInterleaved)
    (p.type, weights, w_stride, begin, end, p.cols, is_packed ? in.packed.data() : in.rows,
     is_packed ? in.packed_stride : in.row_stride, n_tokens, p.y, p.rows);
  } else {
    // No interleaved kernel on this target: read the groups back into GGUF rows.
    std::vector<uint8_t> group_rows(kInterleaveRows * w_stride);
    for (size_t g = begin; g < end; g += kInterleaveRows) {
      for (size_t r = 0; r < kInterleaveRows; ++r) {
        deinterleave_row(p.type, weights + g * w_stride, p.cols, r,
                         group_rows.data() + r * w_stride);
      }
      HWY_DYNAMIC_DISPATCH(MatmulRows)
      (p.type, group_rows.data(), w_stride, 0, kInterleaveRows, p.cols, in.rows, in.row_stride,
       in.packed.data(), n_tokens, p.y + g, p.rows);
    }
  }
}

}  // namespace

void quantize_activations(ActivationFormat format, const float* x, void* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(QuantizeActivations)
  (format == ActivationFormat::kQ8_K, x, static_cast<uint8_t*>(dst), n);
}

const char* active_simd_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

bool supports_weight_type(DType type) { return activation_format(type) != ActivationFormat::kNone; }

void matvec(DType type, const void* w, size_t rows, size_t cols, const float* x, float* y,
            ThreadPool& pool) {
  matmul(type, WeightLayout::kRows, w, rows, cols, x, 1, y, pool);
}

void matmul(DType type, const void* w, size_t rows, size_t cols, const float* x, size_t n_tokens,
            float* y, ThreadPool& pool) {
  matmul(type, WeightLayout::kRows, w, rows, cols, x, n_tokens, y, pool);
}

WeightLayout preferred_layout(DType type, size_t rows, size_t cols) {
  return HWY_DYNAMIC_DISPATCH(HasInterleavedKernel)(type) && can_interleave(type, rows, cols)
             ? WeightLayout::kInterleaved
             : WeightLayout::kRows;
}

void matmul(DType type, WeightLayout layout, const void* w, size_t rows, size_t cols,
            const float* x, size_t n_tokens, float* y, ThreadPool& pool) {
  const MatmulProduct product{type, layout, w, rows, cols, y};
  matmul_shared_input({&product, 1}, x, n_tokens, pool);
}

void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, size_t n_tokens,
                         ThreadPool& pool) {
  // Each product's kernel and input, and its rows cut into tasks; the tasks of all the products
  // are one parallel_for.
  struct Plan {
    const MatmulProduct* p;
    bool interleaved_kernel;
    const KernelInput* in;
    size_t chunk, first_task;
  };
  std::vector<KernelInput> inputs;
  inputs.reserve(products.size());  // Plan keeps pointers into it
  std::vector<Plan> plans;
  size_t tasks = 0;
  for (const MatmulProduct& p : products) {
    const ActivationFormat format = activation_format(p.type);
    const bool interleaved = p.layout == WeightLayout::kInterleaved;
    if (format == ActivationFormat::kNone || p.cols != products[0].cols ||
        p.cols % traits(p.type).block_size != 0 ||
        (interleaved && !can_interleave(p.type, p.rows, p.cols))) {
      // Callers check supports_weight_type and the shape when loading a model; NaN makes a
      // violation visible instead of silently wrong.
      std::fill_n(p.y, p.rows * n_tokens, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const bool interleaved_kernel =
        interleaved && HWY_DYNAMIC_DISPATCH(HasInterleavedKernel)(p.type);
    Packing packing = Packing::kNone;
    if (interleaved_kernel) {
      if (format == ActivationFormat::kQ8_K) packing = Packing::kInterleavedK;
    } else if (HWY_DYNAMIC_DISPATCH(HasTiledKernel)(p.type, p.cols)) {
      // The tiled kernels beat the per-row ones on one token too (one row at a time; Q4_0 decode
      // on llama-1b 1.12x in alternating runs), and running them for any token count keeps a
      // row's result independent of how many tokens share the call.
      packing = Packing::kTiled;
    }
    const KernelInput& in = input_for(inputs, format, packing, p.type, x, p.cols, n_tokens, pool);
    size_t chunk = rows_per_task(p.rows, p.cols, n_tokens, pool.num_threads());
    if (interleaved) chunk = (chunk + kInterleaveRows - 1) / kInterleaveRows * kInterleaveRows;
    plans.push_back({&p, interleaved_kernel, &in, chunk, tasks});
    tasks += (p.rows + chunk - 1) / chunk;
  }
  pool.parallel_for(tasks, [&](size_t task, size_t) {
    size_t i = plans.size() - 1;
    while (plans[i].first_task > task) --i;
    const Plan& plan = plans[i];
    const size_t begin = (task - plan.first_task) * plan.chunk;
    const size_t end = std::min(plan.p->rows, begin + plan.chunk);
    run_rows(*plan.p, plan.interleaved_kernel, *plan.in, begin, end, n_tokens);
  });
}

void dequantize_row(DType type, const void* src, float* dst, size_t n) {
  if (!reference::is_supported(type) || n % traits(type).block_size != 0) {
    std::fill_n(dst, n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  reference::dequantize_row_ref(type, src, dst, n);
}

void dequantize_matrix_row(DType type, WeightLayout layout, const void* w, size_t cols, size_t r,
                           float* dst) {
  const size_t stride = row_bytes(type, cols);
  const auto* bytes = static_cast<const uint8_t*>(w);
  if (layout == WeightLayout::kRows) return dequantize_row(type, bytes + r * stride, dst, cols);
  std::vector<uint8_t> row(stride);
  const size_t group = r / kInterleaveRows * kInterleaveRows;
  deinterleave_row(type, bytes + group * stride, cols, r - group, row.data());
  dequantize_row(type, row.data(), dst, cols);
}

}  // namespace strata::kernels
#endif  // HWY_ONCE
