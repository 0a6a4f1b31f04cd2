// Quantized matvec/matmul on every SIMD target against (a) the scalar twin, which runs the same
// integer algorithm on the same quantized activations, tightly, and (b) the dequantize-then-dot
// product with f32 activations, within the activation-quantization error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "for_each_target.h"
#include "kernels/dequantize_scalar.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_act.h"
#include "kernels/reference/dot_ref.h"

namespace strata::kernels {
namespace {

// Random bytes everywhere (every bit pattern of qs/qh/hmask/scales is a valid block), with the
// f16 scales overwritten by finite values of a realistic size.
std::vector<uint8_t> random_rows(DType type, size_t rows, size_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(row_bytes(type, cols) * rows);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  const size_t block_bytes = traits(type).type_size;
  // Offsets of the f16 fields in each block struct; each block gets its own random value.
  std::vector<size_t> half_offsets;
  switch (type) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0:
      half_offsets = {offsetof(BlockQ4_0, d)};
      break;
    case DType::kQ4_1:
    case DType::kQ5_1:
      half_offsets = {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
      break;
    case DType::kQ2_K:
      half_offsets = {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
      break;
    case DType::kQ3_K:
      half_offsets = {offsetof(BlockQ3_K, d)};
      break;
    case DType::kQ4_K:
    case DType::kQ5_K:
      half_offsets = {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
      break;
    case DType::kQ6_K:
      half_offsets = {offsetof(BlockQ6_K, d)};
      break;
    default:
      break;
  }
  for (size_t i = 0; i < bytes.size(); i += block_bytes) {
    for (size_t off : half_offsets) {
      // Q4_1/Q5_1 mins are signed offsets; the other fields are positive scales.
      float v = scale(rng);
      if (off == offsetof(BlockQ4_1, m) && (type == DType::kQ4_1 || type == DType::kQ5_1)) {
        v = -8 * v;
      }
      const uint16_t h = fp32_to_fp16(v);
      std::memcpy(&bytes[i + off], &h, 2);
    }
  }
  return bytes;
}

std::vector<float> random_activations(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  v[n / 3] = 9.0f;  // an outlier, as real activations have
  return v;
}

struct QuantizedActivations {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // what the quantized blocks represent
};

QuantizedActivations quantize(DType type, const std::vector<float>& x) {
  const ActivationFormat format = activation_format(type);
  QuantizedActivations q;
  q.bytes.resize(activation_row_bytes(format, x.size()));
  q.values.resize(x.size());
  if (format == ActivationFormat::kQ8_32) {
    auto* blocks = reinterpret_cast<ActBlockQ8*>(q.bytes.data());
    quantize_act_q8(x.data(), blocks, x.size());
    for (size_t i = 0; i < x.size(); ++i)
      q.values[i] = blocks[i / 32].d * blocks[i / 32].qs[i % 32];
  } else {
    auto* blocks = reinterpret_cast<BlockQ8_K*>(q.bytes.data());
    quantize_act_q8_k(x.data(), blocks, x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      q.values[i] = blocks[i / 256].d * blocks[i / 256].qs[i % 256];
    }
  }
  return q;
}

// Bound on |dot(w, x) - dot(w, xq)| from quantizing x: each element is off by at most half a
// step, d / 2 = max|x over its block| / 254, so the error is at most sum_i |w_i| * that.
double activation_error_bound(const std::vector<float>& w, const std::vector<float>& x,
                              size_t block) {
  double bound = 0;
  for (size_t b = 0; b < x.size(); b += block) {
    double amax = 0, wsum = 0;
    for (size_t i = b; i < b + block; ++i) {
      amax = std::max<double>(amax, std::abs(x[i]));
      wsum += std::abs(w[i]);
    }
    bound += wsum * amax / 254.0;
  }
  return bound;
}

const DType kQuantizedTypes[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                                 DType::kQ8_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                                 DType::kQ5_K, DType::kQ6_K};

class QuantizedMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(QuantizedMatmulTest, MatvecMatchesTwinAndDequantizedReference) {
  const DType type = GetParam();
  ASSERT_TRUE(supports_weight_type(type));
  const size_t block = activation_format(type) == ActivationFormat::kQ8_K ? 256 : 32;
  ThreadPool pool(2);
  for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 256}, {37, 768}, {70, 1280}}) {
    const std::vector<uint8_t> w = random_rows(type, rows, cols, 100 + rows);
    const std::vector<float> x = random_activations(cols, 200 + rows);
    const QuantizedActivations xq = quantize(type, x);
    const size_t stride = row_bytes(type, cols);
    for_each_simd_target([&] {
      std::vector<float> y(rows);
      matvec(type, w.data(), rows, cols, x.data(), y.data(), pool);
      for (size_t r = 0; r < rows; ++r) {
        const uint8_t* row = w.data() + r * stride;
        std::vector<float> wr(cols);
        dequantize_row_scalar(type, row, wr.data(), cols);
        double magnitude = 0;
        for (size_t c = 0; c < cols; ++c) magnitude += std::abs(double(wr[c]) * xq.values[c]);
        // (a) Same integer sums; only the order of f32 additions may differ.
        const float twin = reference::dot_quantized_ref(type, row, xq.bytes.data(), cols);
        ASSERT_NEAR(y[r], twin, 1e-5 * magnitude + 1e-6) << dtype_name(type) << " row " << r;
        // (b) The exact product with f32 activations, within the quantization bound.
        const double exact = reference::dot_dequantized_ref(type, row, x.data(), cols);
        const double bound = activation_error_bound(wr, x, block) + 1e-5 * magnitude + 1e-6;
        ASSERT_NEAR(y[r], exact, bound) << dtype_name(type) << " row " << r;
      }
    });
  }
}

TEST_P(QuantizedMatmulTest, MatmulEqualsMatvecPerTokenAndThreadCountDoesNotMatter) {
  const DType type = GetParam();
  const size_t rows = 45, cols = 512, n_tokens = 7;  // 7 tokens: a full tile of 4 plus 3
  const std::vector<uint8_t> w = random_rows(type, rows, cols, 7);
  const std::vector<float> x = random_activations(cols * n_tokens, 8);
  ThreadPool pool1(1), pool2(2);
  for_each_simd_target([&] {
    std::vector<float> y(rows * n_tokens), y1(rows * n_tokens);
    matmul(type, w.data(), rows, cols, x.data(), n_tokens, y.data(), pool2);
    matmul(type, w.data(), rows, cols, x.data(), n_tokens, y1.data(), pool1);
    EXPECT_EQ(y, y1);
    for (size_t t = 0; t < n_tokens; ++t) {
      std::vector<float> yt(rows);
      matvec(type, w.data(), rows, cols, x.data() + t * cols, yt.data(), pool2);
      for (size_t r = 0; r < rows; ++r) {
        ASSERT_NEAR(yt[r], y[t * rows + r], 1e-6 * (std::abs(yt[r]) + 1e-3))
            << dtype_name(type) << " token " << t << " row " << r;
      }
    }
  });
}

// The register-tiled kernels take up to 4 rows by 4 tokens per pass; every remainder (1-3 rows,
// 1-3 tokens, alone or together) must give each (row, token) the scalar twin's result. One
// thread, so that the rows are not split into chunks whose sizes would hide the remainders.
TEST_P(QuantizedMatmulTest, MatmulMatchesTwinForRaggedRowAndTokenCounts) {
  const DType type = GetParam();
  ThreadPool pool(1);
  const size_t cols = 512;
  const size_t stride = row_bytes(type, cols);
  for (size_t rows : {1, 2, 3, 4, 5, 6, 7, 9}) {
    const std::vector<uint8_t> w = random_rows(type, rows, cols, 300 + rows);
    for (size_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 11}) {
      const std::vector<float> x = random_activations(cols * n_tokens, 400 + n_tokens);
      std::vector<QuantizedActivations> xq;
      for (size_t t = 0; t < n_tokens; ++t) {
        xq.push_back(
            quantize(type, std::vector<float>(x.begin() + t * cols, x.begin() + (t + 1) * cols)));
      }
      for_each_simd_target([&] {
        std::vector<float> y(rows * n_tokens);
        matmul(type, w.data(), rows, cols, x.data(), n_tokens, y.data(), pool);
        for (size_t t = 0; t < n_tokens; ++t) {
          for (size_t r = 0; r < rows; ++r) {
            const uint8_t* row = w.data() + r * stride;
            std::vector<float> wr(cols);
            dequantize_row_scalar(type, row, wr.data(), cols);
            double magnitude = 0;
            for (size_t c = 0; c < cols; ++c) {
              magnitude += std::abs(double(wr[c]) * xq[t].values[c]);
            }
            const float twin = reference::dot_quantized_ref(type, row, xq[t].bytes.data(), cols);
            ASSERT_NEAR(y[t * rows + r], twin, 1e-5 * magnitude + 1e-6)
                << dtype_name(type) << " " << rows << " rows x " << n_tokens << " tokens: row " << r
                << " token " << t;
          }
        }
      });
    }
  }
}

// The interleaved layout (interleave.h) holds the same blocks: every row reads back byte for byte.
TEST(InterleaveTest, EveryRowReadsBackAndOnlyWholeGroupsInterleave) {
  for (DType type :
       {DType::kQ4_0, DType::kQ5_0, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const size_t rows = 32, cols = 512, stride = row_bytes(type, cols);
    const std::vector<uint8_t> w = random_rows(type, rows, cols, 11);
    ASSERT_TRUE(can_interleave(type, rows, cols));
    std::vector<uint8_t> inter(w.size()), back(stride);
    interleave_rows(type, w.data(), rows, cols, inter.data());
    EXPECT_NE(inter, w) << dtype_name(type);
    std::vector<uint8_t> in_place = w;
    interleave_groups_in_place(type, in_place.data(), cols, 0, rows / kInterleaveRows);
    EXPECT_EQ(in_place, inter) << dtype_name(type);
    for (size_t r = 0; r < rows; ++r) {
      deinterleave_row(type, inter.data() + r / 16 * 16 * stride, cols, r % 16, back.data());
      ASSERT_EQ(std::memcmp(back.data(), w.data() + r * stride, stride), 0)
          << dtype_name(type) << " row " << r;
      std::vector<float> want(cols), got(cols);
      dequantize_row(type, w.data() + r * stride, want.data(), cols);
      dequantize_matrix_row(type, WeightLayout::kInterleaved, inter.data(), cols, r, got.data());
      ASSERT_EQ(want, got) << dtype_name(type) << " row " << r;
    }
    EXPECT_FALSE(can_interleave(type, 17, cols));
    EXPECT_EQ(preferred_layout(type, 17, cols), WeightLayout::kRows);
  }
  EXPECT_FALSE(can_interleave(DType::kQ3_K, 32, 512));
}

class InterleavedMatmulTest : public ::testing::TestWithParam<DType> {};

// Every (row, token) of an interleaved matmul is the scalar twin's integer sum, on every target
// (those without an interleaved kernel read the groups back), for token counts below, at and
// past the kernel's tile, and does not change with the token count or the thread count.
TEST_P(InterleavedMatmulTest, MatchesTwinForAnyTokenAndThreadCount) {
  const DType type = GetParam();
  const size_t rows = 48, cols = 768, stride = row_bytes(type, cols);
  const std::vector<uint8_t> w = random_rows(type, rows, cols, 21);
  std::vector<uint8_t> inter(w.size());
  interleave_rows(type, w.data(), rows, cols, inter.data());
  ThreadPool pool1(1), pool2(2);
  const size_t max_tokens = 19;
  const std::vector<float> x = random_activations(cols * max_tokens, 22);
  std::vector<std::vector<float>> twin(max_tokens, std::vector<float>(rows));
  std::vector<std::vector<double>> magnitude(max_tokens, std::vector<double>(rows));
  for (size_t t = 0; t < max_tokens; ++t) {
    const QuantizedActivations xq =
        quantize(type, std::vector<float>(x.begin() + t * cols, x.begin() + (t + 1) * cols));
    for (size_t r = 0; r < rows; ++r) {
      const uint8_t* row = w.data() + r * stride;
      std::vector<float> wr(cols);
      dequantize_row_scalar(type, row, wr.data(), cols);
      for (size_t c = 0; c < cols; ++c) magnitude[t][r] += std::abs(double(wr[c]) * xq.values[c]);
      twin[t][r] = reference::dot_quantized_ref(type, row, xq.bytes.data(), cols);
    }
  }
  // Targets with an interleaved kernel run the same integer sums and f32 steps: the same bits.
  std::vector<float> first_kernel_result;
  for_each_simd_target([&] {
    std::vector<float> single(rows);
    matmul(type, WeightLayout::kInterleaved, inter.data(), rows, cols, x.data(), 1, single.data(),
           pool1);
    if (preferred_layout(type, rows, cols) == WeightLayout::kInterleaved) {
      std::vector<float> y(rows * max_tokens);
      matmul(type, WeightLayout::kInterleaved, inter.data(), rows, cols, x.data(), max_tokens,
             y.data(), pool2);
      if (first_kernel_result.empty()) first_kernel_result = y;
      ASSERT_EQ(y, first_kernel_result) << dtype_name(type);
    }
    for (size_t n_tokens : {1, 3, 8, 9, 19}) {
      std::vector<float> y(rows * n_tokens), y1(rows * n_tokens);
      matmul(type, WeightLayout::kInterleaved, inter.data(), rows, cols, x.data(), n_tokens,
             y.data(), pool2);
      matmul(type, WeightLayout::kInterleaved, inter.data(), rows, cols, x.data(), n_tokens,
             y1.data(), pool1);
      ASSERT_EQ(y, y1) << dtype_name(type) << " " << n_tokens << " tokens";
      ASSERT_EQ(std::vector<float>(y.begin(), y.begin() + rows), single)
          << dtype_name(type) << " " << n_tokens << " tokens";
      for (size_t t = 0; t < n_tokens; ++t) {
        for (size_t r = 0; r < rows; ++r) {
          ASSERT_NEAR(y[t * rows + r], twin[t][r], 1e-5 * magnitude[t][r] + 1e-6)
              << dtype_name(type) << " " << n_tokens << " tokens: row " << r << " token " << t;
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Types, InterleavedMatmulTest,
                         ::testing::Values(DType::kQ4_0, DType::kQ5_0, DType::kQ8_0, DType::kQ4_K,
                                           DType::kQ5_K, DType::kQ6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Products of one input (q/k/v, gate/up) in one call: each is exactly its own matmul, whatever the
// mix of types, layouts and row counts around it, on every target; a product whose shape
// breaks the contract gets NaN without disturbing the others.
TEST(SharedInputMatmulTest, EachProductEqualsItsOwnMatmul) {
  const size_t cols = 768;
  struct Case {
    DType type;
    WeightLayout layout;
    size_t rows;
  };
  const Case cases[] = {{DType::kQ4_K, WeightLayout::kInterleaved, 48},
                        {DType::kQ6_K, WeightLayout::kRows, 20},
                        {DType::kQ6_K, WeightLayout::kInterleaved, 32},
                        {DType::kQ8_0, WeightLayout::kInterleaved, 16},
                        {DType::kQ4_0, WeightLayout::kRows, 36},
                        {DType::kQ5_0, WeightLayout::kInterleaved, 32},
                        {DType::kQ5_K, WeightLayout::kRows, 8},
                        {DType::kF32, WeightLayout::kRows, 12}};
  std::vector<std::vector<uint8_t>> weights;
  uint32_t seed = 40;
  for (const Case& c : cases) {
    std::vector<uint8_t> w;
    if (c.type == DType::kF32) {
      const std::vector<float> f = random_activations(c.rows * cols, seed++);
      w.resize(f.size() * sizeof(float));
      std::memcpy(w.data(), f.data(), w.size());
    } else {
      w = random_rows(c.type, c.rows, cols, seed++);
    }
    if (c.layout == WeightLayout::kInterleaved) {
      std::vector<uint8_t> inter(w.size());
      interleave_rows(c.type, w.data(), c.rows, cols, inter.data());
      w = std::move(inter);
    }
    weights.push_back(std::move(w));
  }
  const size_t max_tokens = 12;
  const std::vector<float> x = random_activations(cols * max_tokens, 50);
  ThreadPool pool1(1), pool2(2);
  for_each_simd_target([&] {
    for (size_t n_tokens : {1, 5, 12}) {
      for (ThreadPool* pool : {&pool1, &pool2}) {
        std::vector<std::vector<float>> shared, own;
        std::vector<MatmulProduct> products;
        for (size_t i = 0; i < std::size(cases); ++i) {
          shared.emplace_back(cases[i].rows * n_tokens);
          own.emplace_back(cases[i].rows * n_tokens);
        }
        for (size_t i = 0; i < std::size(cases); ++i) {
          const Case& c = cases[i];
          products.push_back({c.type, c.layout, weights[i].data(), c.rows, cols, shared[i].data()});
          matmul(c.type, c.layout, weights[i].data(), c.rows, cols, x.data(), n_tokens,
                 own[i].data(), *pool);
        }
        std::vector<float> wrong_cols(4 * n_tokens);
        products.push_back(
            {DType::kQ8_0, WeightLayout::kRows, weights[3].data(), 4, cols / 2, wrong_cols.data()});
        matmul_shared_input(products, x.data(), n_tokens, *pool);
        for (size_t i = 0; i < std::size(cases); ++i) {
          ASSERT_EQ(shared[i], own[i])
              << dtype_name(cases[i].type) << " product " << i << ", " << n_tokens << " tokens, "
              << pool->num_threads() << " threads";
        }
        for (float v : wrong_cols) ASSERT_TRUE(std::isnan(v));
      }
    }
  });
}

// The dispatched SIMD quantizer is the one matvec uses; it must produce the very bytes the scalar
// reference (which the twin tests are built on) produces, ties and clamps included.
TEST(QuantizeActivationsTest, SimdMatchesScalarBitForBit) {
  std::vector<float> x = random_activations(1024, 31);
  // Exact ties at the rounding boundary: with max|x| = 127 the scale is 1 and x * inv = x.
  x[0] = 127.0f;
  for (int i = 1; i < 32; ++i) x[i] = (i % 2 ? 0.5f : -2.5f) + static_cast<float>(i % 5);
  x[256] = -127.0f;
  x[300] = 1.5f;
  for (int i = 512; i < 768; ++i) x[i] = 0.0f;  // an all-zero block: d = 0, quants 0
  std::vector<ActBlockQ8> ref32(1024 / 32), simd32(1024 / 32);
  std::vector<BlockQ8_K> refk(1024 / 256), simdk(1024 / 256);
  quantize_act_q8(x.data(), ref32.data(), x.size());
  quantize_act_q8_k(x.data(), refk.data(), x.size());
  for_each_simd_target([&] {
    quantize_activations(ActivationFormat::kQ8_32, x.data(), simd32.data(), x.size());
    quantize_activations(ActivationFormat::kQ8_K, x.data(), simdk.data(), x.size());
    EXPECT_EQ(std::memcmp(ref32.data(), simd32.data(), ref32.size() * sizeof(ActBlockQ8)), 0);
    EXPECT_EQ(std::memcmp(refk.data(), simdk.data(), refk.size() * sizeof(BlockQ8_K)), 0);
  });
  // Hand-derived: block 0 has max|x| = 127, so d = 1 and ties round to even.
  EXPECT_EQ(ref32[0].d, 1.0f);
  const int expected[8] = {127, 2, 0, 4, 2, 0, -2, 2};  // 1.5, -0.5, 3.5, 1.5, 0.5, -1.5, 2.5
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ref32[0].qs[i], expected[i]) << i;
  EXPECT_EQ(ref32[16].d, 0.0f);  // elements 512..543 are zero
  EXPECT_EQ(ref32[16].sum, 0);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizedMatmulTest, ::testing::ValuesIn(kQuantizedTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// A kernel chosen once (select_matmul_kernel, as a loaded model keeps it with each matrix) and
// handed to every product computes what the kernel chosen per call does, on every target, in
// both layouts.
TEST(MatmulKernelTest, ChosenOnceEqualsChosenPerCall) {
  const size_t rows = 32, cols = 512, n_tokens = 5;
  const std::vector<float> x = random_activations(cols * n_tokens, 61);
  ThreadPool pool(2);
  for_each_simd_target([&] {
    for (DType type : kQuantizedTypes) {
      for (WeightLayout layout : {WeightLayout::kRows, WeightLayout::kInterleaved}) {
        if (layout == WeightLayout::kInterleaved && !can_interleave(type, rows, cols)) continue;
        std::vector<uint8_t> w = random_rows(type, rows, cols, 62);
        if (layout == WeightLayout::kInterleaved) {
          std::vector<uint8_t> inter(w.size());
          interleave_rows(type, w.data(), rows, cols, inter.data());
          w = std::move(inter);
        }
        const MatmulKernel kernel = select_matmul_kernel(type, layout, cols);
        ASSERT_NE(kernel.rows, nullptr) << dtype_name(type);
        EXPECT_EQ(kernel.type, type);
        EXPECT_EQ(kernel.layout, layout);
        std::vector<float> chosen(rows * n_tokens), per_call(rows * n_tokens);
        const MatmulProduct product{type, layout, w.data(), rows, cols, chosen.data(), &kernel};
        matmul_shared_input({&product, 1}, x.data(), n_tokens, pool);
        matmul(type, layout, w.data(), rows, cols, x.data(), n_tokens, per_call.data(), pool);
        ASSERT_EQ(chosen, per_call) << dtype_name(type);
      }
    }
  });
  EXPECT_EQ(select_matmul_kernel(DType::kI32, WeightLayout::kRows, cols).rows, nullptr);
}

}  // namespace
}  // namespace strata::kernels
