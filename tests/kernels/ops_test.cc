#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "for_each_target.h"
#include "kernels/gelu.h"
#include "kernels/reference/ops_ref.h"

namespace strata::kernels {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Sizes that exercise full vectors, remainders and a single element.
const size_t kSizes[] = {1, 3, 16, 17, 64, 100, 1000, 4099};

TEST(OpsTest, RmsNormMatchesFormula) {
  for_each_simd_target([&] {
    for (size_t n : kSizes) {
      std::vector<float> x = random_vector(n, 1, 3.0f), w = random_vector(n, 2), out(n);
      rms_norm(x.data(), w.data(), out.data(), n, 1e-5f);
      double ss = 0;
      for (float v : x) ss += double(v) * v;
      const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
      for (size_t i = 0; i < n; ++i)
        EXPECT_NEAR(out[i], x[i] * inv * w[i], 1e-5 * std::abs(x[i] * inv) + 1e-7);
      // In place (out aliases x).
      rms_norm(x.data(), w.data(), x.data(), n, 1e-5f);
      for (size_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(x[i], out[i]);
    }
  });
}

TEST(OpsTest, SoftmaxMatchesFormula) {
  for_each_simd_target([&] {
    for (size_t n : kSizes) {
      std::vector<float> x = random_vector(n, 3, 20.0f);
      std::vector<float> orig = x;
      softmax(x.data(), n);
      double mx = orig[0];
      for (float v : orig) mx = std::max<double>(mx, v);
      double sum = 0;
      for (float v : orig) sum += std::exp(v - mx);
      double total = 0;
      for (size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(x[i], std::exp(orig[i] - mx) / sum, 2e-6 * std::exp(orig[i] - mx) / sum + 1e-9);
        total += x[i];
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  });
}

TEST(OpsTest, SoftmaxLargeLogitsDoNotOverflow) {
  for_each_simd_target([&] {
    std::vector<float> x = {1000.0f, 1000.0f, -1000.0f};
    softmax(x.data(), x.size());
    EXPECT_NEAR(x[0], 0.5f, 1e-6);
    EXPECT_NEAR(x[1], 0.5f, 1e-6);
    EXPECT_EQ(x[2], 0.0f);
  });
}

TEST(OpsTest, SwigluMatchesFormula) {
  for_each_simd_target([&] {
    for (size_t n : kSizes) {
      std::vector<float> g = random_vector(n, 4, 8.0f), u = random_vector(n, 5, 2.0f);
      std::vector<float> orig = g;
      swiglu(g.data(), u.data(), n);
      for (size_t i = 0; i < n; ++i) {
        const double expect = orig[i] / (1.0 + std::exp(-double(orig[i]))) * u[i];
        EXPECT_NEAR(g[i], expect, 2e-6 * std::abs(expect) + 1e-7) << i;
      }
    }
  });
}

// Whole groups of 16 use the polynomial exp, the rest of a row the C library's: the scalar twin
// does the same, and with FMA every target matches it bit for bit.
TEST(OpsTest, SwigluEqualsItsScalarTwin) {
  for_each_simd_target([&] {
    for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{172}, size_t{4099}}) {
      const std::vector<float> g = random_vector(n, 8, 12.0f), u = random_vector(n, 9, 2.0f);
      std::vector<float> got = g, want = g;
      swiglu(got.data(), u.data(), n);
      reference::swiglu_ref(want.data(), u.data(), n);
      for (size_t i = 0; i < n; ++i) {
        if (active_target_has_fma()) {
          ASSERT_EQ(got[i], want[i]) << n << " " << i;
        } else {
          ASSERT_NEAR(got[i], want[i], 1e-6 * std::abs(want[i]) + 1e-7) << n << " " << i;
        }
      }
    }
  });
}

// The polynomial's error against the correctly rounded exp stays within 2 ulp over the range
// where f32 exp is finite and normal, and saturates beyond it.
TEST(OpsTest, PolynomialExpIsAccurate) {
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    ASSERT_NEAR(reference::exp_poly_ref(x), want, 2.0 * want * 0x1p-23) << x;
  }
  EXPECT_EQ(reference::exp_poly_ref(0.0f), 1.0f);
  EXPECT_EQ(reference::exp_poly_ref(-200.0f), 0.0f);
  EXPECT_EQ(reference::exp_poly_ref(200.0f), INFINITY);
  EXPECT_TRUE(std::isnan(reference::exp_poly_ref(NAN)));
}

TEST(OpsTest, AddAxpyDot) {
  for_each_simd_target([&] {
    for (size_t n : kSizes) {
      std::vector<float> a = random_vector(n, 6), b = random_vector(n, 7);
      std::vector<float> y = a;
      add(y.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(y[i], a[i] + b[i]);
      y = a;
      axpy(y.data(), -0.75f, b.data(), n);
      for (size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], a[i] - 0.75 * b[i], 1e-6);
      double dot = 0, mag = 0;
      for (size_t i = 0; i < n; ++i) {
        dot += double(a[i]) * b[i];
        mag += std::abs(double(a[i]) * b[i]);
      }
      EXPECT_NEAR(dot_f32(a.data(), b.data(), n), dot, 1e-6 * mag + 1e-9);
    }
  });
}

// GeGLU reads GELU from a table of f16 inputs; the twin computes it per element. Gates cover
// both clamps (|g| >= 10), every f16 binade the table spans, and f16 ties.
TEST(OpsTest, GegluEqualsItsScalarTwin) {
  std::vector<float> g = random_vector(4096, 10, 12.0f);
  for (float x : {-10.0f, -9.99f, 10.0f, 9.99f, 0.0f, -0.0f, 1e-8f, -3e-5f, 65504.0f, -1e9f}) {
    g.push_back(x);
  }
  const std::vector<float> u = random_vector(g.size(), 11, 2.0f);
  std::vector<float> got, want = g;
  reference::geglu_ref(want.data(), u.data(), g.size());
  for_each_simd_target([&] {
    got = g;
    geglu(got.data(), u.data(), g.size());
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(got[i], want[i]) << "gate " << g[i];
  });
  // And it is GELU: within the f16 roundings of its input (|gelu'| < 1.13, so at most
  // 1.13 |x| 2^-11) and output (|gelu| 2^-11) of the tanh approximation in double.
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i];
    const double gelu =
        std::fabs(x) >= 10
            ? (x > 0 ? x : 0.0)
            : 0.5 * x * (1 + std::tanh(0.7978845608028654 * x * (1 + 0.044715 * x * x)));
    const double tolerance = (6e-4 * std::fabs(x) + 5e-4 * std::fabs(gelu)) * std::fabs(u[i]);
    // Plus f16's smallest step, 6e-8, where x or gelu(x) is below its normal range.
    ASSERT_NEAR(got[i], gelu * u[i], tolerance + 1.2e-7 * std::fabs(u[i])) << "gate " << g[i];
  }
}

// Plain GELU is GeGLU with an up projection of ones.
TEST(OpsTest, GeluIsGegluWithoutTheGate) {
  const std::vector<float> x = random_vector(4099, 12, 12.0f);
  const std::vector<float> ones(x.size(), 1.0f);
  std::vector<float> want = x;
  reference::geglu_ref(want.data(), ones.data(), x.size());
  for_each_simd_target([&] {
    std::vector<float> got = x;
    gelu(got.data(), got.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  });
}

TEST(OpsTest, LayerNormMatchesFormula) {
  for (size_t n : kSizes) {
    // An offset mean, as residual streams have, so the centring matters.
    std::vector<float> x = random_vector(n, 13, 3.0f), w = random_vector(n, 14),
                       b = random_vector(n, 15), out(n);
    for (float& v : x) v += 5.0f;
    layer_norm(x.data(), w.data(), b.data(), out.data(), n, 1e-12f);
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= static_cast<double>(n);
    for (float v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) {
      const double normed = (x[i] - mean) / std::sqrt(var + 1e-12);
      EXPECT_NEAR(out[i], normed * w[i] + b[i], 2e-5 * (std::abs(normed) + 1)) << n << " " << i;
    }
    layer_norm(x.data(), w.data(), b.data(), x.data(), n, 1e-12f);  // in place
    for (size_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(x[i], out[i]);
  }
}

}  // namespace
}  // namespace strata::kernels
