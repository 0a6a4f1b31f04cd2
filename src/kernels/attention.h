// The inner loop of attention: one query head folded, position by position, into an online
// softmax over rows of keys and values (one page of the KV cache at a time).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace strata::kernels {

// The running state of one online softmax (Milakov & Gimelshein; FlashAttention): maximum m,
// sum of exp(s - m); the accumulator acc of exp(s - m) * V[t] is the caller's [head_dim] array.
struct OnlineSoftmax {
  float m = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  bool f16_accumulator = true;  // cleared once acc nears the f16 range
};

// How score s of the next position enters the state: where s raises the maximum, acc is rescaled
// by exp(m - s) and V[t] weighs 1; else acc stays and V[t] weighs exp(s - m). Updates m and sum;
// the caller applies acc = acc * rescale + V[t] * weight. std::exp, as the reference engine's
// attention uses it: a vector exp rounds differently now and then, which an f16 accumulator
// turns into visible logit differences.
struct SoftmaxStep {
  float rescale = 1.0f, weight = 1.0f;
};
inline SoftmaxStep online_softmax_step(OnlineSoftmax& st, float s) {
  SoftmaxStep step;
  if (s > st.m) {
    step.rescale = std::exp(st.m - s);
    st.m = s;
  } else {
    step.weight = std::exp(s - st.m);
  }
  st.sum = std::fma(st.sum, step.rescale, step.weight);
  return step;
}

// Largest magnitude an f16 accumulator may reach before it would round to infinity.
inline constexpr float kF16AccumulatorLimit = 60000.0f;

// Folds positions [0, n) of keys/values ([n][head_dim] each) into (st[g], acc[g]) for each of the
// `group` query heads that read this KV head (q and acc are [group][head_dim], st [group]), in
// position order; each head's steps are those of a group of one, so grouping changes no bit:
// s = scale * q·k (products summed in double, so the sum does not depend on the order), and when
// s raises the maximum acc is rescaled by exp(m_old - s), else V[t] is weighed by exp(s - m).
//
// f16 rows are read the way the reference CPU engine reads an f16 KV cache: q must already be
// rounded to f16 values, and acc is rounded to f16 after every update until it nears the f16
// range (then it continues in f32 rather than overflowing).
void attend_rows_f16(const uint16_t* keys, const uint16_t* values, size_t n, size_t head_dim,
                     const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc);
void attend_rows_f32(const float* keys, const float* values, size_t n, size_t head_dim,
                     const float* q, size_t group, float scale, OnlineSoftmax* st, float* acc);

}  // namespace strata::kernels
