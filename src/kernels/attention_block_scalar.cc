#include "kernels/attention_block_scalar.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace strata::kernels {

void attend_block_scalar(KvFormat format, const void* keys, const void* values, size_t n,
                         size_t rows, size_t head_dim, const float* q, size_t group, float scale,
                         OnlineSoftmax* st, float* acc) {
  if (n == 0) return;
  std::vector<float> k(n * head_dim), v(n * head_dim), s(n);
  kv_decode_block(format, KvRole::kKeys, keys, n, rows, head_dim, k.data());
  kv_decode_block(format, KvRole::kValues, values, n, rows, head_dim, v.data());
  for (size_t g = 0; g < group; ++g) {
    const float* qg = q + g * head_dim;
    float* a = acc + g * head_dim;
    float m = st[g].m;
    for (size_t t = 0; t < n; ++t) {
      double dot = 0.0;
      for (size_t d = 0; d < head_dim; ++d) dot += double{qg[d]} * k[t * head_dim + d];
      s[t] = static_cast<float>(dot) * scale;
      m = std::max(m, s[t]);
    }
    const float alpha = std::exp(st[g].m - m);  // 0 before the first block (m = -inf)
    float sum = st[g].sum * alpha;
    for (size_t d = 0; d < head_dim; ++d) a[d] *= alpha;
    for (size_t t = 0; t < n; ++t) {
      const float w = std::exp(s[t] - m);
      sum += w;
      for (size_t d = 0; d < head_dim; ++d) a[d] += w * v[t * head_dim + d];
    }
    st[g].m = m;
    st[g].sum = sum;
    st[g].f16_accumulator = false;
  }
}

}  // namespace strata::kernels
