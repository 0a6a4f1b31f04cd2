// Kernel throughput: matvec GB/s of weight bytes per type (the decode bound), matmul with 64
// tokens (prompt processing), 16 (a decode step of 16 batched streams) and 1-4 (a sequence
// verifying a few guesses), and a STREAM-like
// read baseline to quote GB/s against; attention over a 2K-position prefill, the exact
// position-by-position path against the tile kernel; a few queries verified together
// (speculative decoding), by blocks against one tile; and a decode step's attention over 4K
// positions in each KV format.
//
//   strata_kernel_bench --benchmark_filter=Matvec/q4_0 [--simd=AVX2]
//
// --simd=TARGET caps the dispatch as `strata --simd` does (the AVX2 kernels on an AVX-512 CPU).
//
// Weights are spread over enough copies of the matrix (>= 256 MiB in all) that each iteration
// reads from DRAM, not from the last-level cache, as decoding a real model does.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/aligned.h"
#include "base/dtype.h"
#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/attention_block.h"
#include "kernels/attention_tile.h"
#include "kernels/kv_format.h"
#include "kernels/matmul.h"
#include "platform/cpu_features.h"
#include "platform/thread_pool.h"

namespace strata::kernels {
namespace {

constexpr size_t kColdBytes = size_t{256} << 20;

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                        DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

// Random bytes are valid blocks for every quantized type except for their f16 scale fields,
// which could be NaN/Inf or so small that products turn subnormal (slow on x86). Every 16-bit
// word gets a fixed exponent, so that each one read as a half (or the top of an f32/bf16) is a
// normal number near 1/64; speed does not depend on the quant values.
AlignedBuffer<uint8_t> random_weights(size_t bytes, uint32_t seed) {
  AlignedBuffer<uint8_t> w(bytes);
  // xorshift64: hundreds of MiB per benchmark, so the generator must be cheap.
  uint64_t state = 0x9E3779B97F4A7C15ull ^ seed;
  uint64_t* words = reinterpret_cast<uint64_t*>(w.data());
  for (size_t i = 0; i < (bytes + 7) / 8; ++i) {  // the allocation is rounded up to 64 bytes
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    words[i] = (state & 0x83FF83FF83FF83FFull) | 0x2400240024002400ull;
  }
  return w;
}

struct Workload {
  size_t matrix_bytes;
  size_t copies;
  AlignedBuffer<uint8_t> weights;
  std::vector<float> x, y;
};

// `spread` bytes of copies of the matrix in all (at least one copy).
Workload make_workload(DType type, size_t rows, size_t cols, size_t n_tokens,
                       size_t spread = kColdBytes) {
  Workload wl;
  wl.matrix_bytes = row_bytes(type, cols) * rows;
  wl.copies = std::max<size_t>(1, spread / wl.matrix_bytes);
  wl.weights = random_weights(wl.matrix_bytes * wl.copies, 1);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist;
  wl.x.resize(cols * n_tokens);
  for (float& v : wl.x) v = dist(rng);
  wl.y.resize(rows * n_tokens);
  return wl;
}

// The benchmark's label: type, layout and SIMD target.
std::string label(DType type, WeightLayout layout) {
  return std::string(dtype_name(type)) +
         (layout == WeightLayout::kInterleaved ? " interleaved " : " ") + active_simd_target();
}

// Args: type, rows, cols, threads, layout.
void BM_Matvec(benchmark::State& state) {
  const DType type = static_cast<DType>(state.range(0));
  const size_t rows = state.range(1), cols = state.range(2);
  const auto layout = static_cast<WeightLayout>(state.range(4));
  ThreadPool pool(state.range(3));
  Workload wl = make_workload(type, rows, cols, 1);
  size_t copy = 0;
  for (auto _ : state) {
    matmul(type, layout, wl.weights.data() + copy * wl.matrix_bytes, rows, cols, wl.x.data(), 1,
           wl.y.data(), pool);
    benchmark::DoNotOptimize(wl.y.data());
    copy = (copy + 1) % wl.copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wl.matrix_bytes));
  state.SetLabel(label(type, layout));
}

// Args: type, layout. One thread, 256 x 4096 weights that stay in L2/L3: the compute ceiling of
// the kernel, which must exceed the DRAM bandwidth for decode to be bandwidth-bound.
void BM_MatvecHot(benchmark::State& state) {
  const DType type = static_cast<DType>(state.range(0));
  const auto layout = static_cast<WeightLayout>(state.range(1));
  const size_t rows = 256, cols = 4096;
  ThreadPool pool(1);
  Workload wl = make_workload(type, rows, cols, 1, /*spread=*/0);
  for (auto _ : state) {
    matmul(type, layout, wl.weights.data(), rows, cols, wl.x.data(), 1, wl.y.data(), pool);
    benchmark::DoNotOptimize(wl.y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wl.matrix_bytes));
  state.SetLabel(label(type, layout));
}

// Args: type, rows, cols, threads, tokens, layout. Reports weight GB/s and GFLOP/s (2 per
// multiply-add). 64 tokens stand for prompt processing, 16 for one decode step of 16 batched
// streams.
void run_matmul(benchmark::State& state, size_t spread) {
  const DType type = static_cast<DType>(state.range(0));
  const size_t rows = state.range(1), cols = state.range(2), n_tokens = state.range(4);
  const auto layout = static_cast<WeightLayout>(state.range(5));
  ThreadPool pool(state.range(3));
  Workload wl = make_workload(type, rows, cols, n_tokens, spread);
  size_t copy = 0;
  for (auto _ : state) {
    matmul(type, layout, wl.weights.data() + copy * wl.matrix_bytes, rows, cols, wl.x.data(),
           n_tokens, wl.y.data(), pool);
    benchmark::DoNotOptimize(wl.y.data());
    copy = (copy + 1) % wl.copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wl.matrix_bytes));
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * rows * cols * n_tokens * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(label(type, layout));
}

void BM_Matmul(benchmark::State& state) { run_matmul(state, kColdBytes); }

// Args as BM_Matmul's, then where the weights come from: 0 DRAM, 1 the last-level cache (copies
// over 16 MiB, as a small model's weights stay there between its decode steps).
void BM_MatmulFew(benchmark::State& state) {
  run_matmul(state, state.range(6) == 1 ? size_t{16} << 20 : kColdBytes);
}

// STREAM-like read bandwidth: sum a 256 MiB f32 array split over the pool's threads.
void BM_ReadBandwidth(benchmark::State& state) {
  ThreadPool pool(state.range(0));
  const size_t n = kColdBytes / sizeof(float);
  AlignedBuffer<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i & 1023);
  const size_t chunks = 64, chunk = n / chunks;
  std::vector<float> partial(chunks);
  for (auto _ : state) {
    pool.parallel_for(chunks, [&](size_t c, size_t) {
      const float* p = data.data() + c * chunk;
      // Eight independent sums so the loop is limited by loads, not by add latency.
      float s[8] = {};
      for (size_t i = 0; i < chunk; i += 8) {
        for (size_t k = 0; k < 8; ++k) s[k] += p[i + k];
      }
      partial[c] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    });
    benchmark::DoNotOptimize(partial.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * sizeof(float)));
}

// The last prompt chunk (128 queries, positions 1920..2047) of a 2048-position prefill: head_dim
// 64, 4 query heads over 2 KV heads, pages of 32 positions. Args: tile (0: attend_rows, the
// exact path; 1: the tile kernel, 16 queries a tile), f16 pages. One thread.
void BM_AttentionPrefill(benchmark::State& state) {
  constexpr size_t kCtx = 2048, kQueries = 128, kHeadDim = 64, kHeads = 4, kKvHeads = 2;
  constexpr size_t kPage = 32, kGroup = kHeads / kKvHeads, kTile = 16;
  const bool tile = state.range(0) != 0, f16 = state.range(1) != 0;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  // Per KV head, its keys and values [kCtx][kHeadDim] (pages back to back).
  std::vector<float> k(kKvHeads * kCtx * kHeadDim), v(k.size());
  std::vector<float> q(kQueries * kHeads * kHeadDim), out(q.size());
  for (float& x : k) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  for (float& x : v) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  std::vector<uint16_t> k16(k.size()), v16(v.size());
  for (size_t i = 0; i < k.size(); ++i) k16[i] = fp32_to_fp16(k[i]), v16[i] = fp32_to_fp16(v[i]);
  std::vector<uint32_t> last(kQueries);
  for (size_t i = 0; i < kQueries; ++i) last[i] = static_cast<uint32_t>(kCtx - kQueries + i);
  std::vector<float> buffer(attention_tile_floats(kTile * kGroup, kHeadDim));
  const float scale = 0.125f;
  const size_t stride = kHeads * kHeadDim;
  for (auto _ : state) {
    for (size_t h = 0; h < kKvHeads; ++h) {
      const size_t kv = h * kCtx * kHeadDim;
      if (tile) {
        for (size_t first = 0; first < kQueries; first += kTile) {
          const size_t at = first * stride + h * kGroup * kHeadDim;
          AttentionTile t = begin_attention_tile(buffer.data(), &q[at], kTile, kGroup, stride,
                                                 kHeadDim, &last[first]);
          for (size_t start = 0; start <= last[first + kTile - 1]; start += kPage) {
            const size_t n = std::min(kPage, last[first + kTile - 1] + 1 - start);
            const size_t row = kv + start * kHeadDim;
            if (f16) {
              attend_tile_f16(t, &k16[row], &v16[row], n, start, scale);
            } else {
              attend_tile_f32(t, &k[row], &v[row], n, start, scale);
            }
          }
          finish_attention_tile(t, &out[at], stride);
        }
        continue;
      }
      for (size_t i = 0; i < kQueries; ++i) {
        OnlineSoftmax st[kGroup];
        float* acc = &out[i * stride + h * kGroup * kHeadDim];
        std::fill_n(acc, kGroup * kHeadDim, 0.0f);
        for (size_t start = 0; start <= last[i]; start += kPage) {
          const size_t n = std::min<size_t>(kPage, last[i] + 1 - start);
          const size_t row = kv + start * kHeadDim;
          const float* qi = &q[i * stride + h * kGroup * kHeadDim];
          if (f16) {
            attend_rows_f16(&k16[row], &v16[row], n, kHeadDim, qi, kGroup, scale, st, acc);
          } else {
            attend_rows_f32(&k[row], &v[row], n, kHeadDim, qi, kGroup, scale, st, acc);
          }
        }
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(tile ? "tile " : "rows ") + (f16 ? "f16 " : "f32 ") +
                 active_simd_target());
  // Query-key pairs per second.
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * kQueries * kHeads * (kCtx - kQueries / 2)));
}

// A step verifying a few guesses (speculative decoding): `queries` consecutive queries at the
// end of 2,048 f16 positions, one KV head and its group of query heads (head_dim 64, pages of
// 32), either as one tile (kernels/attention_tile.h) or query by query with the block kernel a
// decode step uses. Where the two cross over is kv::attend's kMinTileRows. Args: queries,
// group, tile. One thread; the pages (512 KiB) stay in L2.
void BM_AttentionVerify(benchmark::State& state) {
  constexpr size_t kCtx = 2048, kHeadDim = 64, kPage = 32;
  const size_t queries = state.range(0), group = state.range(1);
  const bool tile = state.range(2) != 0;
  std::mt19937 rng(9);
  std::normal_distribution<float> dist;
  std::vector<uint16_t> k16(kCtx * kHeadDim), v16(k16.size());
  for (uint16_t& x : k16) x = fp32_to_fp16(dist(rng));
  for (uint16_t& x : v16) x = fp32_to_fp16(dist(rng));
  std::vector<float> q(queries * group * kHeadDim), out(q.size());
  for (float& x : q) x = dist(rng);
  std::vector<uint32_t> last(queries);
  for (size_t i = 0; i < queries; ++i) last[i] = static_cast<uint32_t>(kCtx - queries + i);
  std::vector<float> buffer(std::max(attention_tile_floats(queries * group, kHeadDim),
                                     attend_block_scratch_floats(group, kPage, kHeadDim)));
  const size_t stride = group * kHeadDim;
  const float scale = 0.125f;
  for (auto _ : state) {
    if (tile) {
      AttentionTile t = begin_attention_tile(buffer.data(), q.data(), queries, group, stride,
                                             kHeadDim, last.data());
      for (size_t start = 0; start < kCtx; start += kPage) {
        attend_tile_f16(t, &k16[start * kHeadDim], &v16[start * kHeadDim],
                        std::min(kPage, kCtx - start), start, scale);
      }
      finish_attention_tile(t, out.data(), stride);
    } else {
      for (size_t i = 0; i < queries; ++i) {
        std::vector<OnlineSoftmax> st(group);
        float* acc = &out[i * stride];
        std::fill_n(acc, stride, 0.0f);
        for (size_t start = 0; start <= last[i]; start += kPage) {
          attend_block(KvFormat::kF16, &k16[start * kHeadDim], &v16[start * kHeadDim],
                       std::min<size_t>(kPage, last[i] + 1 - start), kPage, kHeadDim,
                       &q[i * stride], group, scale, st.data(), acc, buffer.data());
        }
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(tile ? "tile " : "blocks ") + active_simd_target());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * queries));  // queries
}

// One decode step's attention for one KV head over 4,096 positions (128 pages of 32), its group
// of 4 query heads (Llama 3.2 1B's shape, head_dim 64), in one KV format: the block kernel that
// decode at depth spends its attention time in. Args: the format (kernels/kv_format.h), and
// spread: 0 keeps the pages (about 1 MiB in f16) in L2, so this measures the kernel; 1 lays 256
// copies out as the pool does (a page holds every layer and head, so one head's consecutive
// pages lie far apart) and reads a different copy each step, from DRAM, without the pool's
// prefetch of the next page. One thread.
void BM_AttentionDecode(benchmark::State& state) {
  constexpr size_t kCtx = 4096, kHeadDim = 64, kGroup = 4, kPage = 32;
  const auto format = static_cast<KvFormat>(state.range(0));
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  std::vector<float> x(kPage * kHeadDim);
  const size_t key_bytes = kv_block_bytes(format, KvRole::kKeys, kPage, kHeadDim);
  const size_t value_bytes = kv_block_bytes(format, KvRole::kValues, kPage, kHeadDim);
  std::vector<uint8_t> keys(kCtx / kPage * key_bytes), values(kCtx / kPage * value_bytes);
  for (size_t p = 0; p < kCtx / kPage; ++p) {
    for (float& e : x) e = dist(rng);
    kv_encode_block(format, KvRole::kKeys, x.data(), kPage, kPage, kHeadDim, &keys[p * key_bytes]);
    for (float& e : x) e = dist(rng);
    kv_encode_block(format, KvRole::kValues, x.data(), kPage, kPage, kHeadDim,
                    &values[p * value_bytes]);
  }
  std::vector<float> q(kGroup * kHeadDim), out(q.size());
  for (float& e : q) e = dist(rng);
  std::vector<float> scratch(attend_block_scratch_floats(kGroup, kPage, kHeadDim));
  // Page p of copy c at block p * copies + c.
  const size_t copies = state.range(1) != 0 ? 256 : 1;
  std::vector<uint8_t> spread_keys(copies * keys.size()), spread_values(copies * values.size());
  for (size_t c = 0; c < copies; ++c) {
    for (size_t p = 0; p < kCtx / kPage; ++p) {
      std::copy_n(&keys[p * key_bytes], key_bytes, &spread_keys[(p * copies + c) * key_bytes]);
      std::copy_n(&values[p * value_bytes], value_bytes,
                  &spread_values[(p * copies + c) * value_bytes]);
    }
  }
  size_t copy = 0;
  for (auto _ : state) {
    OnlineSoftmax st[kGroup];
    std::fill(out.begin(), out.end(), 0.0f);
    for (size_t p = 0; p < kCtx / kPage; ++p) {
      const size_t block = p * copies + copy;
      attend_block(format, &spread_keys[block * key_bytes], &spread_values[block * value_bytes],
                   kPage, kPage, kHeadDim, q.data(), kGroup, 0.125f, st, out.data(),
                   scratch.data());
    }
    copy = (copy + 1) % copies;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(kv_format_name(format)) + " " + active_simd_target());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCtx));  // positions
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (keys.size() + values.size())));
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("AttentionPrefill", BM_AttentionPrefill)
      ->ArgsProduct({{0, 1}, {1, 0}})
      ->ArgNames({"tile", "f16"})
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("AttentionVerify", BM_AttentionVerify)
      ->ArgsProduct({{1, 2, 3, 4, 5, 6, 8}, {2, 4}, {0, 1}})
      ->ArgNames({"queries", "group", "tile"});
  for (KvFormat f : {KvFormat::kF16, KvFormat::kBF16, KvFormat::kQ8_0, KvFormat::kQ4_0,
                     KvFormat::kR8, KvFormat::kR4, KvFormat::kR3}) {
    benchmark::RegisterBenchmark("AttentionDecode", BM_AttentionDecode)
        ->ArgsProduct({{static_cast<int64_t>(f)}, {0, 1}})
        ->ArgNames({"format", "spread"})
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("ReadBandwidth", BM_ReadBandwidth)
      ->Arg(1)
      ->Arg(2)
      ->ArgName("threads")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  // Types with an interleaved kernel on this CPU run in both layouts, side by side.
  for (DType type : kTypes) {
    for (WeightLayout layout : {WeightLayout::kRows, WeightLayout::kInterleaved}) {
      if (layout == WeightLayout::kInterleaved &&
          preferred_layout(type, 4096, 4096) != WeightLayout::kInterleaved) {
        continue;
      }
      const auto l = static_cast<int64_t>(layout);
      const std::string name = std::string(dtype_name(type)) +
                               (layout == WeightLayout::kInterleaved ? "/interleaved" : "");
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {2048, 8192}}) {
        for (int64_t threads : {1, 2}) {
          benchmark::RegisterBenchmark(("Matvec/" + name).c_str(), BM_Matvec)
              ->Args({static_cast<int64_t>(type), rows, cols, threads, l})
              ->ArgNames({"type", "rows", "cols", "threads", "layout"})
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
      benchmark::RegisterBenchmark(("MatvecHot/" + name).c_str(), BM_MatvecHot)
          ->Args({static_cast<int64_t>(type), l})
          ->ArgNames({"type", "layout"})
          ->Unit(benchmark::kMicrosecond);
      // A verification of 0-3 guesses, one thread: a small model's FFN (768 x 256, from the
      // last-level cache) and a 1B model's attention projection (2048 x 2048, from DRAM).
      for (auto [rows, cols, llc] :
           {std::tuple<int64_t, int64_t, int64_t>{768, 256, 1}, {2048, 2048, 0}}) {
        for (int64_t tokens : {1, 2, 3, 4}) {
          benchmark::RegisterBenchmark(("MatmulFew/" + name).c_str(), BM_MatmulFew)
              ->Args({static_cast<int64_t>(type), rows, cols, 1, tokens, l, llc})
              ->ArgNames({"type", "rows", "cols", "threads", "tokens", "layout", "llc"})
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
      for (int64_t tokens : {64, 16}) {
        benchmark::RegisterBenchmark(("Matmul" + std::to_string(tokens) + "/" + name).c_str(),
                                     BM_Matmul)
            ->Args({static_cast<int64_t>(type), 4096, 4096, 2, tokens, l})
            ->ArgNames({"type", "rows", "cols", "threads", "tokens", "layout"})
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--simd=")) continue;
    if (!strata::disable_simd_targets_above(arg.substr(7))) {
      std::fprintf(stderr, "no SIMD target '%s' here; this CPU offers %s\n", argv[i] + 7,
                   strata::simd_targets_description().c_str());
      return 2;
    }
  }
  strata::kernels::register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
