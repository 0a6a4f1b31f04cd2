// The sampler's random source: SplitMix64 (Steele, Lea, Flood 2014), defined bit for bit so a
// seed gives the same draws with every compiler and standard library.
#pragma once

#include <cstdint>

namespace strata::sampling {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1): the top 53 bits scaled by 2^-53, exact in a double.
  double next_unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace strata::sampling
