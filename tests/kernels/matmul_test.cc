// Float-weight (F32, F16, BF16) matvec/matmul against a double-precision reference.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "for_each_target.h"
#include "kernels/reference/ops_ref.h"

namespace strata::kernels {
namespace {

struct FloatMatrix {
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // the exact weights the bytes encode
};

FloatMatrix make_matrix(DType type, size_t rows, size_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  FloatMatrix m;
  m.bytes.resize(row_bytes(type, cols) * rows);
  m.values.resize(rows * cols);
  for (size_t i = 0; i < rows * cols; ++i) {
    const float f = dist(rng);
    if (type == DType::kF32) {
      std::memcpy(m.bytes.data() + 4 * i, &f, 4);
      m.values[i] = f;
    } else {
      const uint16_t h = type == DType::kF16 ? fp32_to_fp16(f) : fp32_to_bf16(f);
      std::memcpy(m.bytes.data() + 2 * i, &h, 2);
      m.values[i] = type == DType::kF16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
    }
  }
  return m;
}

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Checks y (n_tokens x rows) against a double reference; the tolerance is 1e-5 of the sum of
// |w*x|, the scale an f32 accumulation error is proportional to.
void expect_matches_reference(const FloatMatrix& m, size_t rows, size_t cols,
                              const std::vector<float>& x, size_t n_tokens,
                              const std::vector<float>& y) {
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      double sum = 0, mag = 0;
      for (size_t c = 0; c < cols; ++c) {
        const double p = m.values[r * cols + c] * x[t * cols + c];
        sum += p;
        mag += std::abs(p);
      }
      ASSERT_NEAR(y[t * rows + r], sum, 1e-5 * mag) << "token " << t << " row " << r;
    }
  }
}

class FloatMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(FloatMatmulTest, MatvecMatchesDoubleReference) {
  const DType type = GetParam();
  if (!supports_weight_type(type)) GTEST_SKIP() << "type not supported yet";
  ThreadPool pool(2);
  for_each_simd_target([&] {
    for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {7, 33}, {67, 256}, {130, 4100}}) {
      FloatMatrix m = make_matrix(type, rows, cols, 11);
      std::vector<float> x = random_vector(cols, 12), y(rows);
      matvec(type, m.bytes.data(), rows, cols, x.data(), y.data(), pool);
      expect_matches_reference(m, rows, cols, x, 1, y);
    }
  });
}

// 2 and 3 tokens (a verification of guesses) and 9 (two full tiles and one token); 101 rows
// leave one past the 4-row tiles. 104 columns are short rows (a tile's 4 rows in one page,
// prefetched ahead) and 1,064 long ones; both end in a partial AVX-512 vector.
TEST_P(FloatMatmulTest, MatmulAgreesWithMatvecPerTokenAndThreadCountDoesNotMatter) {
  const DType type = GetParam();
  if (!supports_weight_type(type)) GTEST_SKIP() << "type not supported yet";
  ThreadPool pool1(1), pool2(2);
  const size_t rows = 101;
  for (const size_t cols : {104, 1064}) {
    const FloatMatrix m = make_matrix(type, rows, cols, 21);
    for (const size_t n_tokens : {2, 3, 9}) {
      SCOPED_TRACE(testing::Message() << cols << " columns, " << n_tokens << " tokens");
      std::vector<float> x = random_vector(cols * n_tokens, 22);
      for_each_simd_target([&] {
        std::vector<float> y(rows * n_tokens), y1(rows * n_tokens);
        matmul(type, m.bytes.data(), rows, cols, x.data(), n_tokens, y.data(), pool2);
        matmul(type, m.bytes.data(), rows, cols, x.data(), n_tokens, y1.data(), pool1);
        expect_matches_reference(m, rows, cols, x, n_tokens, y);
        EXPECT_EQ(y, y1);
        // F16 and BF16 decode streams a row at a time while prompts go in register tiles: the two
        // sum in different orders, so they agree within rounding (each within 1e-5 of the exact sum
        // of |w x|), not bit for bit; F32's fixed orders keep 1e-6.
        for (size_t t = 0; t < n_tokens; ++t) {
          std::vector<float> yt(rows);
          const std::vector<float> xt(x.begin() + static_cast<long>(t * cols),
                                      x.begin() + static_cast<long>((t + 1) * cols));
          matvec(type, m.bytes.data(), rows, cols, xt.data(), yt.data(), pool2);
          expect_matches_reference(m, rows, cols, xt, 1, yt);
          if (type != DType::kF32) continue;
          for (size_t r = 0; r < rows; ++r) {
            EXPECT_NEAR(yt[r], y[t * rows + r], 1e-6 * (std::abs(yt[r]) + 1)) << t << " " << r;
          }
        }
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, FloatMatmulTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// F32 products sum in a fixed order: Blocked16 for two or more tokens with rows % 4 == 0 and
// cols % 16 == 0, Quad16 otherwise. With FMA every target equals the scalar twins bit for bit.
TEST(MatmulTest, F32SumsInTheFixedOrderOnEveryTarget) {
  struct Shape {
    size_t rows, cols, n_tokens;
    bool blocked;
  };
  const Shape shapes[] = {{8, 64, 1, false}, {8, 64, 5, true},    {8, 172, 5, false},
                          {6, 64, 5, false}, {12, 4096, 3, true}, {4, 4096, 1, false},
                          {4, 200, 1, false}};
  ThreadPool pool(2);
  for_each_simd_target([&] {
    for (const Shape& sh : shapes) {
      SCOPED_TRACE(testing::Message() << sh.rows << "x" << sh.cols << " tokens " << sh.n_tokens);
      const std::vector<float> w = random_vector(sh.rows * sh.cols, 11);
      const std::vector<float> x = random_vector(sh.n_tokens * sh.cols, 12);
      std::vector<float> y(sh.n_tokens * sh.rows);
      matmul(DType::kF32, w.data(), sh.rows, sh.cols, x.data(), sh.n_tokens, y.data(), pool);
      for (size_t t = 0; t < sh.n_tokens; ++t) {
        for (size_t r = 0; r < sh.rows; ++r) {
          const float* wr = w.data() + r * sh.cols;
          const float* xt = x.data() + t * sh.cols;
          const float want = sh.blocked ? reference::dot_f32_blocked16_ref(wr, xt, sh.cols)
                                        : reference::dot_f32_quad16_ref(wr, xt, sh.cols);
          if (active_target_has_fma()) {
            ASSERT_EQ(y[t * sh.rows + r], want) << t << " " << r;
          } else {
            ASSERT_NEAR(y[t * sh.rows + r], want, 1e-5 * (std::abs(want) + 1)) << t << " " << r;
          }
        }
      }
    }
  });
}

TEST(MatmulTest, UnsupportedTypeOrShapeGivesNaN) {
  ThreadPool pool(1);
  std::vector<uint8_t> w(1024);
  std::vector<float> x(64, 1.0f), y(2, 0.0f);
  matvec(DType::kIQ2_XXS, w.data(), 2, 256, x.data(), y.data(), pool);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  y.assign(2, 0.0f);
  matvec(DType::kQ4_0, w.data(), 2, 48, x.data(), y.data(), pool);  // 48 is not a multiple of 32
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_FALSE(supports_weight_type(DType::kIQ2_XXS));
  EXPECT_TRUE(supports_weight_type(DType::kQ6_K));
}

TEST(DequantizeRowTest, FloatTypes) {
  const float values[] = {0.0f, 1.0f, -2.5f, 65504.0f, 1e-3f};
  std::vector<uint16_t> h;
  for (float v : values) h.push_back(fp32_to_fp16(v));
  std::vector<float> out(5);
  dequantize_row(DType::kF16, h.data(), out.data(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[i], fp16_to_fp32(h[i]));
  dequantize_row(DType::kF32, values, out.data(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[i], values[i]);
}

}  // namespace
}  // namespace strata::kernels
