#include "kernels/attention_scalar.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/fp16.h"

namespace strata::kernels {
namespace {

inline float round_to_f16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

template <typename Element>
void attend_rows(const Element* keys, const Element* values, size_t n, size_t head_dim,
                 const float* q, float scale, OnlineSoftmax& st, float* acc) {
  constexpr bool kF16 = std::is_same_v<Element, uint16_t>;
  auto load = [](Element e) {
    if constexpr (kF16) {
      return fp16_to_fp32(e);
    } else {
      return e;
    }
  };
  float v[1024];  // one row of values as f32, in chunks for head_dim > 1024
  for (size_t t = 0; t < n; ++t) {
    const Element* k = keys + t * head_dim;
    const Element* vrow = values + t * head_dim;
    double dot = 0.0;
    for (size_t d = 0; d < head_dim; ++d) dot += q[d] * load(k[d]);
    const float s = static_cast<float>(dot) * scale;

    const auto [rescale, weight] = online_softmax_step(st, s);
    bool round = kF16 && st.f16_accumulator;
    for (size_t begin = 0; begin < head_dim; begin += 1024) {
      const size_t end = std::min(head_dim, begin + 1024);
      for (size_t d = begin; d < end; ++d) v[d - begin] = load(vrow[d]);
      round = update_accumulator_scalar(acc + begin, v, end - begin, rescale, weight, round);
    }
    if (kF16) st.f16_accumulator = round;
  }
}

}  // namespace

bool update_accumulator_scalar(float* acc, const float* v, size_t n, float rescale, float weight,
                               bool round) {
  for (size_t d = 0; d < n; ++d) {
    float a = acc[d];
    if (rescale != 1.0f) a = round ? round_to_f16(a * rescale) : a * rescale;
    a += v[d] * weight;
    if (round && std::abs(a) > kF16AccumulatorLimit) round = false;
    acc[d] = round ? round_to_f16(a) : a;
  }
  return round;
}

void attend_rows_f16_scalar(const uint16_t* keys, const uint16_t* values, size_t n, size_t head_dim,
                            const float* q, float scale, OnlineSoftmax& st, float* acc) {
  attend_rows(keys, values, n, head_dim, q, scale, st, acc);
}

void attend_rows_f32_scalar(const float* keys, const float* values, size_t n, size_t head_dim,
                            const float* q, float scale, OnlineSoftmax& st, float* acc) {
  attend_rows(keys, values, n, head_dim, q, scale, st, acc);
}

}  // namespace strata::kernels
