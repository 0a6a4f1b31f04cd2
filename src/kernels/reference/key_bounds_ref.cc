#include "kernels/reference/key_bounds_ref.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace strata::kernels::reference {
namespace {

float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

}  // namespace

void key_score_bounds_ref(const float* q, size_t group, size_t head_dim, const uint16_t* summaries,
                          size_t stride, const uint32_t* index, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t* lo = summaries + size_t{index[i]} * stride;
    const uint16_t* hi = lo + head_dim;
    double best = -std::numeric_limits<double>::infinity();
    for (size_t g = 0; g < group; ++g) {
      double sum = 0.0;
      for (size_t d = 0; d < head_dim; ++d) {
        const double qd = q[g * head_dim + d];
        sum += std::max(qd * bf16_to_f32(lo[d]), qd * bf16_to_f32(hi[d]));
      }
      best = std::max(best, sum);
    }
    out[i] = static_cast<float>(best);
  }
}

}  // namespace strata::kernels::reference
