// The page-score bound (kernels/key_bounds.h) against its scalar twin on every SIMD target, and
// the twin against the bound's definition on a case worked by hand.
#include "kernels/key_bounds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "for_each_target.h"
#include "kernels/reference/key_bounds_ref.h"

namespace strata::kernels {
namespace {

uint16_t to_bf16(float x) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16); }

struct Case {
  size_t group, head_dim, stride, n_pages;
  std::vector<float> q;           // [group][head_dim]
  std::vector<uint16_t> summary;  // [n_pages][stride], [2][head_dim] used at each page's start
  std::vector<uint32_t> index;    // the pages scored, in a shuffled order
  std::vector<float> magnitude;   // per scored page, the largest sum of |q_d| max(|lo|, |hi|)
};

Case random_case(size_t group, size_t head_dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Case c{group, head_dim, 3 * head_dim, 37, {}, {}, {}, {}};
  for (size_t i = 0; i < group * head_dim; ++i) c.q.push_back(2.0f * normal(rng));
  c.summary.assign(c.n_pages * c.stride, 0);
  for (size_t p = 0; p < c.n_pages; ++p) {
    for (size_t d = 0; d < head_dim; ++d) {
      float a = normal(rng), b = normal(rng);
      if (a > b) std::swap(a, b);
      c.summary[p * c.stride + d] = to_bf16(a);
      c.summary[p * c.stride + head_dim + d] = to_bf16(b);
    }
  }
  c.index.resize(c.n_pages - 5);  // not every page, and not in order
  std::iota(c.index.begin(), c.index.end(), 3u);
  std::shuffle(c.index.begin(), c.index.end(), rng);
  for (uint32_t page : c.index) {
    float worst = 0.0f;
    for (size_t g = 0; g < group; ++g) {
      float sum = 0.0f;
      for (size_t d = 0; d < head_dim; ++d) {
        const float lo = std::bit_cast<float>(uint32_t{c.summary[page * c.stride + d]} << 16);
        const float hi =
            std::bit_cast<float>(uint32_t{c.summary[page * c.stride + head_dim + d]} << 16);
        sum += std::abs(c.q[g * head_dim + d]) * std::max(std::abs(lo), std::abs(hi));
      }
      worst = std::max(worst, sum);
    }
    c.magnitude.push_back(worst);
  }
  return c;
}

TEST(KeyBoundsTest, SimdMatchesScalarTwinOnEveryTarget) {
  for (size_t head_dim : {8, 64, 128}) {
    for (size_t group : {1, 4}) {
      SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", group " + std::to_string(group));
      const Case c = random_case(group, head_dim, static_cast<uint32_t>(head_dim * 10 + group));
      std::vector<float> want(c.index.size());
      reference::key_score_bounds_ref(c.q.data(), group, head_dim, c.summary.data(), c.stride,
                                      c.index.data(), c.index.size(), want.data());
      for_each_simd_target([&] {
        std::vector<float> got(c.index.size(), -1.0f);
        key_score_bounds(c.q.data(), group, head_dim, c.summary.data(), c.stride, c.index.data(),
                         c.index.size(), got.data());
        for (size_t i = 0; i < got.size(); ++i) {
          // f32 sums in another order than the twin's double ones.
          EXPECT_NEAR(got[i], want[i], 1e-5f * c.magnitude[i]) << "page " << c.index[i];
        }
      });
    }
  }
}

TEST(KeyBoundsTest, TwinTakesEachChannelsLargerEndAndTheGroupsLargestHead) {
  // head_dim 8, two query heads; page 0's channel d in [lo_d, hi_d].
  const float lo[8] = {-1, -1, 0, 2, -4, 0.5f, -0.5f, 0};
  const float hi[8] = {1, 3, 0, 4, -2, 1.5f, 0.5f, 0};
  std::vector<uint16_t> summary;
  for (float x : lo) summary.push_back(to_bf16(x));
  for (float x : hi) summary.push_back(to_bf16(x));
  const float q[16] = {2,  -1, 5, 1, -1, 2, 0, 9,   // head 0
                       -1, 1,  0, 0, 0,  0, 0, 0};  // head 1: bound 1 + 3 = 4
  // Head 0: max(-2, 2) + max(1, -3) + 0 + max(2, 4) + max(4, 2) + max(1, 3) + 0 + 0 = 14.
  const uint32_t index = 0;
  float out = 0;
  reference::key_score_bounds_ref(q, 1, 8, summary.data(), 16, &index, 1, &out);
  EXPECT_FLOAT_EQ(out, 14.0f);
  reference::key_score_bounds_ref(q + 8, 1, 8, summary.data(), 16, &index, 1, &out);
  EXPECT_FLOAT_EQ(out, 4.0f);
  reference::key_score_bounds_ref(q, 2, 8, summary.data(), 16, &index, 1, &out);
  EXPECT_FLOAT_EQ(out, 14.0f);
}

}  // namespace
}  // namespace strata::kernels
