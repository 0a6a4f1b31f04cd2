// The tile attention against its scalar twin on every SIMD target, against the exact
// position-by-position path (kernels/attention.h) on random data, and split into tiles of any
// size (as threads split a batch) against one tile.
#include "kernels/attention_tile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "for_each_target.h"
#include "kernels/attention.h"
#include "kernels/reference/attention_tile_ref.h"

namespace strata::kernels {
namespace {

constexpr size_t kPage = 32;

// A sequence's keys and values ([n][head_dim], as f16 bits and as the same values in f32) and
// a tile of queries at its last positions, as a prefill chunk asks them.
struct Problem {
  size_t n = 0, head_dim = 0, queries = 0, group = 0;
  std::vector<float> q, k, v;
  std::vector<uint16_t> k16, v16;
  std::vector<uint32_t> last;
  float scale = 0.0f;
};

Problem make_problem(size_t n, size_t head_dim, size_t queries, size_t group, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Problem p;
  p.n = n;
  p.head_dim = head_dim;
  p.queries = queries;
  p.group = group;
  for (size_t i = 0; i < queries * group * head_dim; ++i) {
    p.q.push_back(fp16_to_fp32(fp32_to_fp16(2.0f * dist(rng))));  // exact in f16 too
  }
  for (size_t i = 0; i < n * head_dim; ++i) {
    p.k16.push_back(fp32_to_fp16(dist(rng)));
    p.v16.push_back(fp32_to_fp16(dist(rng)));
    p.k.push_back(fp16_to_fp32(p.k16.back()));
    p.v.push_back(fp16_to_fp32(p.v16.back()));
  }
  for (size_t i = 0; i < queries; ++i) p.last.push_back(static_cast<uint32_t>(n - queries + i));
  p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return p;
}

enum class Impl { kSimd, kTwin };

// Queries [first, first + count) of the problem in one tile, pages of kPage; out is
// [queries][group][head_dim].
void run_tile(const Problem& p, Impl impl, bool f16, size_t first, size_t count, float* out) {
  const size_t hd = p.head_dim, stride = p.group * hd;
  std::vector<float> buffer(attention_tile_floats(count * p.group, hd));
  AttentionTile tile = begin_attention_tile(buffer.data(), p.q.data() + first * stride, count,
                                            p.group, stride, hd, p.last.data() + first);
  const size_t n_ctx = p.last[first + count - 1] + 1;
  for (size_t start = 0; start < n_ctx; start += kPage) {
    const size_t m = std::min(kPage, n_ctx - start), at = start * hd;
    if (f16 && impl == Impl::kSimd) {
      attend_tile_f16(tile, &p.k16[at], &p.v16[at], m, start, p.scale);
    } else if (f16) {
      reference::attend_tile_f16_ref(tile, &p.k16[at], &p.v16[at], m, start, p.scale);
    } else if (impl == Impl::kSimd) {
      attend_tile_f32(tile, &p.k[at], &p.v[at], m, start, p.scale);
    } else {
      reference::attend_tile_f32_ref(tile, &p.k[at], &p.v[at], m, start, p.scale);
    }
  }
  finish_attention_tile(tile, out + first * stride, stride);
}

TEST(AttentionTileTest, SimdMatchesScalarTwinOnEveryTarget) {
  for (size_t head_dim : {64, 40, 128}) {
    for (size_t group : {1, 3}) {
      const Problem p = make_problem(83, head_dim, 7, group, 5 + head_dim + group);
      for (bool f16 : {true, false}) {
        std::vector<float> want(p.queries * group * head_dim);
        run_tile(p, Impl::kTwin, f16, 0, p.queries, want.data());
        for_each_simd_target([&] {
          SCOPED_TRACE(::testing::Message()
                       << "head_dim " << head_dim << " group " << group << " f16 " << f16);
          std::vector<float> got(want.size());
          run_tile(p, Impl::kSimd, f16, 0, p.queries, got.data());
          if (active_target_has_fma()) {
            EXPECT_EQ(got, want);
          } else {  // Highway's MulAdd is a multiply and an add there
            for (size_t i = 0; i < got.size(); ++i) {
              EXPECT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::abs(want[i]))) << "at " << i;
            }
          }
        });
      }
    }
  }
}

TEST(AttentionTileTest, AnySplitIntoTilesGivesTheSameBits) {
  const Problem p = make_problem(100, 64, 9, 2, 21);
  for (bool f16 : {true, false}) {
    std::vector<float> whole(p.queries * p.group * p.head_dim), split(whole.size());
    run_tile(p, Impl::kSimd, f16, 0, p.queries, whole.data());
    for (size_t first = 0; first < p.queries; first += 4) {
      run_tile(p, Impl::kSimd, f16, first, std::min<size_t>(4, p.queries - first), split.data());
    }
    EXPECT_EQ(split, whole) << "f16 " << f16;
  }
}

// The exact path, row by row: acc / sum of attend_rows over keys [0, last], pages of kPage.
std::vector<float> exact(const Problem& p, bool f16) {
  const size_t hd = p.head_dim;
  std::vector<float> out(p.queries * p.group * hd);
  for (size_t i = 0; i < p.queries; ++i) {
    std::vector<OnlineSoftmax> st(p.group);
    float* o = &out[i * p.group * hd];
    const float* q = &p.q[i * p.group * hd];
    for (size_t start = 0; start <= p.last[i]; start += kPage) {
      const size_t m = std::min<size_t>(kPage, p.last[i] + 1 - start), at = start * hd;
      if (f16) {
        attend_rows_f16(&p.k16[at], &p.v16[at], m, hd, q, p.group, p.scale, st.data(), o);
      } else {
        attend_rows_f32(&p.k[at], &p.v[at], m, hd, q, p.group, p.scale, st.data(), o);
      }
    }
    for (size_t g = 0; g < p.group; ++g) {
      for (size_t d = 0; d < hd; ++d) o[g * hd + d] /= st[g].sum;
    }
  }
  return out;
}

TEST(AttentionTileTest, AgreesWithTheExactPath) {
  const Problem p = make_problem(300, 64, 16, 2, 33);
  for (bool f16 : {false, true}) {
    const std::vector<float> want = exact(p, f16);
    std::vector<float> got(want.size());
    run_tile(p, Impl::kSimd, f16, 0, p.queries, got.data());
    // f32 pages: both sum in f32 with errors of a few ulp. f16 pages: the exact path rounds its
    // accumulator to f16 (11 bits) after every key, as the reference engine does (here ~3e-3).
    const float tolerance = f16 ? 1e-2f : 1e-5f;
    float worst = 0.0f;
    for (size_t i = 0; i < got.size(); ++i) {
      const float err = std::abs(got[i] - want[i]) / (1.0f + std::abs(want[i]));
      worst = std::max(worst, err);
      EXPECT_LE(err, tolerance) << "at " << i << " f16 " << f16;
    }
    std::printf("f16 %d: worst relative difference from the exact path %g\n", f16, worst);
  }
}

}  // namespace
}  // namespace strata::kernels
