#include "bench/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace strata::bench {
namespace {

// XOR of all words with eight independent accumulators, so the loop is bound by loads alone
// (the compiler vectorizes it); the result is used, so the reads cannot be dropped.
uint64_t read_words(const uint64_t* p, size_t n) {
  uint64_t acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t k = 0; k < 8; ++k) acc[k] ^= p[i + k];
  }
  for (; i < n; ++i) acc[0] ^= p[i];
  uint64_t x = 0;
  for (uint64_t a : acc) x ^= a;
  return x;
}

}  // namespace

double measure_read_bandwidth(size_t bytes, int threads, int repetitions) {
  const size_t words = bytes / 64 * 8;
  if (words == 0 || threads <= 0) return 0;
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[words]);
  // Each thread first-touches its own slice, so on NUMA machines the pages sit near it.
  const size_t slice = (words / static_cast<size_t>(threads) + 7) / 8 * 8;
  auto pass = [&](bool fill) {
    std::vector<std::thread> pool;
    std::vector<uint64_t> sink(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t begin = std::min(words, static_cast<size_t>(t) * slice);
        const size_t end = std::min(words, begin + slice);
        if (fill) {
          for (size_t i = begin; i < end; ++i) buffer[i] = i * 0x9E3779B97F4A7C15ull;
        }
        sink[static_cast<size_t>(t)] = read_words(buffer.get() + begin, end - begin);
      });
    }
    for (std::thread& th : pool) th.join();
    uint64_t x = 0;
    for (uint64_t s : sink) x ^= s;
    return x;
  };
  volatile uint64_t keep = pass(/*fill=*/true);
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    keep = keep ^ pass(/*fill=*/false);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / seconds / 1e9);
  }
  return best;
}

}  // namespace strata::bench
