// KV storage formats: GGML's q8_0 / q4_0 byte layouts on hand-computed blocks, every format's
// round trip within its own error bound, the rotation's orthogonality, and block attention on
// every SIMD target against its scalar twin and against softmax attention in double.
#include "kernels/kv_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "for_each_target.h"
#include "kernels/attention_block.h"
#include "kernels/reference/attention_block_ref.h"

namespace strata::kernels {
namespace {

constexpr KvFormat kAll[] = {KvFormat::kF32,  KvFormat::kF16, KvFormat::kBF16, KvFormat::kQ8_0,
                             KvFormat::kQ4_0, KvFormat::kR4,  KvFormat::kR3,   KvFormat::kR8};

// Keys as models make them: a large per-channel offset and a few outlier channels on top of
// unit noise (KIVI's observation), values without the offset.
std::vector<float> make_rows(size_t n, size_t head_dim, bool keys, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> offset(head_dim), gain(head_dim, 1.0f);
  for (size_t c = 0; c < head_dim; ++c) offset[c] = keys ? 3.0f * noise(rng) : 0.0f;
  for (size_t c = 0; c < head_dim; c += 17) gain[c] = 8.0f;
  std::vector<float> x(n * head_dim);
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < head_dim; ++c) x[t * head_dim + c] = offset[c] + gain[c] * noise(rng);
  }
  return x;
}

TEST(KvFormatTest, Q8_0IsGgmlBlockQ8_0) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);
  uint8_t block[34];
  kv_encode_row(KvFormat::kQ8_0, KvRole::kKeys, x, 32, block, 0);
  uint16_t d;
  std::memcpy(&d, block, 2);
  EXPECT_EQ(d, fp32_to_fp16(16.0f / 127.0f));  // d = amax / 127, then qs[32]
  EXPECT_EQ(static_cast<int8_t>(block[2 + 0]), -127);
  EXPECT_EQ(static_cast<int8_t>(block[2 + 16]), 0);
  EXPECT_EQ(static_cast<int8_t>(block[2 + 17]), 8);    // round(1 * 127 / 16) = round(7.94)
  EXPECT_EQ(static_cast<int8_t>(block[2 + 31]), 119);  // round(15 * 7.9375) = round(119.06)
}

TEST(KvFormatTest, Q4_0IsGgmlBlockQ4_0) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);
  uint8_t block[18];
  kv_encode_row(KvFormat::kQ4_0, KvRole::kValues, x, 32, block, 0);
  uint16_t d;
  std::memcpy(&d, block, 2);
  EXPECT_EQ(fp16_to_fp32(d), 2.0f);  // max = -16 (the largest magnitude, signed) / -8
  // q = min(15, (int)(x / d + 8.5)): element j in the low nibble of byte j, j + 16 in the high.
  EXPECT_EQ(block[2 + 0] & 15, 0);    // x = -16: -8 + 8.5 -> 0
  EXPECT_EQ(block[2 + 0] >> 4, 8);    // x = 0: 8.5 -> 8
  EXPECT_EQ(block[2 + 5] & 15, 3);    // x = -11: -5.5 + 8.5 = 3
  EXPECT_EQ(block[2 + 15] >> 4, 15);  // x = 15: 7.5 + 8.5 = 16 -> 15
}

TEST(KvFormatTest, EveryFormatRoundTripsWithinItsStep) {
  const size_t rows = 32;
  for (size_t head_dim : {64, 128}) {
    for (KvRole role : {KvRole::kKeys, KvRole::kValues}) {
      const std::vector<float> plain = make_rows(rows, head_dim, role == KvRole::kKeys, 7);
      for (KvFormat f : kAll) {
        // The cache stores the rotated formats' rows rotated (the error is the same after
        // rotating back: the rotation is orthogonal).
        std::vector<float> x = plain;
        for (size_t t = 0; t < rows && kv_format_rotated(f); ++t) {
          rotate_kv_head(&x[t * head_dim], head_dim);
        }
        SCOPED_TRACE(std::string(kv_format_name(f)) +
                     (role == KvRole::kKeys ? " keys" : " values") + " head_dim " +
                     std::to_string(head_dim));
        ASSERT_TRUE(kv_format_supports(f, head_dim, rows));
        std::vector<uint8_t> block(kv_block_bytes(f, role, rows, head_dim));
        kv_encode_block(f, role, x.data(), rows - 3, rows, head_dim, block.data());
        std::vector<float> y((rows - 3) * head_dim);
        kv_decode_block(f, role, block.data(), rows - 3, rows, head_dim, y.data());
        double err2 = 0.0, ref2 = 0.0, worst = 0.0;
        for (size_t i = 0; i < y.size(); ++i) {
          err2 += (x[i] - y[i]) * (x[i] - y[i]);
          ref2 += x[i] * x[i];
          worst = std::max(worst, double{std::fabs(x[i] - y[i])});
        }
        const double rel = std::sqrt(err2 / ref2);
        // Relative RMS error each format's bits allow (uniform steps: ~range / levels / sqrt(12)).
        const double bound = f == KvFormat::kF32                          ? 0.0
                             : f == KvFormat::kF16                        ? 1e-3
                             : f == KvFormat::kBF16                       ? 5e-3
                             : f == KvFormat::kQ8_0 || f == KvFormat::kR8 ? 0.02
                             : f == KvFormat::kQ4_0                       ? 0.2
                             : f == KvFormat::kR4                         ? 0.1
                                                                          : 0.2;
        EXPECT_LE(rel, bound);
        std::printf("%s %s d%zu: relative RMS error %.4f\n", kv_format_name(f),
                    role == KvRole::kKeys ? "keys" : "values", head_dim, rel);
        if (f == KvFormat::kF32) {
          EXPECT_EQ(worst, 0.0);
        }
      }
    }
  }
}

// r8 is q8_0 after the rotation: keys with outlier channels set every q8_0 block's step by
// their outlier, while rotated they spread it over the head, so the same bits err less.
TEST(KvFormatTest, R8ErrsLessThanQ8_0OnKeysWithOutlierChannels) {
  const size_t rows = 32, head_dim = 128;
  const std::vector<float> plain = make_rows(rows, head_dim, true, 21);
  auto error2 = [&](KvFormat f) {
    double err2 = 0.0;
    std::vector<uint8_t> row(kv_row_bytes(f, KvRole::kKeys, head_dim));
    std::vector<float> x(head_dim), y(head_dim);
    for (size_t t = 0; t < rows; ++t) {
      std::copy_n(&plain[t * head_dim], head_dim, x.begin());
      if (kv_format_rotated(f)) rotate_kv_head(x.data(), head_dim);
      kv_encode_row(f, KvRole::kKeys, x.data(), head_dim, row.data(), 0);
      kv_decode_block(f, KvRole::kKeys, row.data(), 1, 1, head_dim, y.data());
      if (kv_format_rotated(f)) unrotate_kv_head(y.data(), head_dim);
      for (size_t i = 0; i < head_dim; ++i) {
        const double e = double{y[i]} - plain[t * head_dim + i];
        err2 += e * e;
      }
    }
    return err2;
  };
  const double q8 = error2(KvFormat::kQ8_0), r8 = error2(KvFormat::kR8);
  std::printf("squared error on keys: q8_0 %.4g, r8 %.4g\n", q8, r8);
  EXPECT_LT(r8, 0.8 * q8);  // measured 0.62x; without the rotation the two are equal
}

TEST(KvFormatTest, RotatedKeysErrIsWithinHalfAChannelStep) {
  const size_t rows = 32, head_dim = 64;
  const std::vector<float> x = make_rows(rows, head_dim, true, 11);
  for (KvFormat f : {KvFormat::kR4, KvFormat::kR3}) {
    std::vector<uint8_t> block(kv_block_bytes(f, KvRole::kKeys, rows, head_dim));
    kv_encode_block(f, KvRole::kKeys, x.data(), rows, rows, head_dim, block.data());
    std::vector<float> y(rows * head_dim);
    kv_decode_block(f, KvRole::kKeys, block.data(), rows, rows, head_dim, y.data());
    RotatedKeyHeader h;
    std::memcpy(&h, block.data(), sizeof h);
    for (size_t c = 0; c < head_dim; ++c) {
      const float step = fp16_to_fp32(h.d_step) * block[sizeof h + c];
      for (size_t t = 0; t < rows; ++t) {
        EXPECT_LE(std::fabs(x[t * head_dim + c] - y[t * head_dim + c]), 0.5f * step + 1e-4f)
            << kv_format_name(f) << " channel " << c << " row " << t;
      }
    }
  }
}

TEST(KvFormatTest, CodesPackAndUnpack) {
  const size_t head_dim = 128;
  for (KvFormat f : {KvFormat::kR4, KvFormat::kR3}) {
    // A value row whose elements are exactly the levels: codes come back as written.
    const int levels = rotated_levels(f);
    std::vector<float> x(head_dim);
    for (size_t i = 0; i < head_dim; ++i) {
      x[i] = static_cast<float>(static_cast<int>(i * 7 % levels)) - (levels - 1) / 2.0f;
    }
    x[3] = (levels - 1) / 2.0f;  // the largest magnitude sets the scale to 1
    x[5] = -(levels - 1) / 2.0f;
    std::vector<uint8_t> row(kv_row_bytes(f, KvRole::kValues, head_dim));
    kv_encode_row(f, KvRole::kValues, x.data(), head_dim, row.data(), 0);
    for (size_t i = 0; i < head_dim; ++i) {
      EXPECT_EQ(rotated_code(f, row.data() + 2, head_dim, i),
                static_cast<int>(x[i] + (levels - 1) / 2.0f))
          << kv_format_name(f) << " element " << i;
    }
  }
}

TEST(KvFormatTest, RotationIsOrthogonal) {
  for (size_t head_dim : {64, 128, 256}) {
    std::vector<float> a = make_rows(1, head_dim, true, 3), b = make_rows(1, head_dim, false, 4);
    double dot = 0.0;
    for (size_t i = 0; i < head_dim; ++i) dot += double{a[i]} * b[i];
    std::vector<float> ra = a, rb = b;
    rotate_kv_head(ra.data(), head_dim);
    rotate_kv_head(rb.data(), head_dim);
    double rdot = 0.0;
    for (size_t i = 0; i < head_dim; ++i) rdot += double{ra[i]} * rb[i];
    EXPECT_NEAR(rdot, dot, 1e-4 * std::fabs(dot) + 1e-3);
    unrotate_kv_head(ra.data(), head_dim);
    for (size_t i = 0; i < head_dim; ++i) EXPECT_NEAR(ra[i], a[i], 1e-4f);
  }
  EXPECT_FALSE(kv_format_supports(KvFormat::kR4, 80, 32));
  EXPECT_FALSE(kv_format_supports(KvFormat::kR3, 64, 16));
  EXPECT_FALSE(kv_format_supports(KvFormat::kQ8_0, 48, 32));
}

// Softmax attention in double over decoded rows: the independent expectation.
void attend_double(const std::vector<float>& k, const std::vector<float>& v, size_t n,
                   size_t head_dim, const float* q, float scale, std::vector<double>& out) {
  std::vector<double> s(n);
  double m = -INFINITY, sum = 0.0;
  for (size_t t = 0; t < n; ++t) {
    double dot = 0.0;
    for (size_t d = 0; d < head_dim; ++d) dot += double{q[d]} * k[t * head_dim + d];
    s[t] = dot * scale;
    m = std::max(m, s[t]);
  }
  out.assign(head_dim, 0.0);
  for (size_t t = 0; t < n; ++t) {
    const double w = std::exp(s[t] - m);
    sum += w;
    for (size_t d = 0; d < head_dim; ++d) out[d] += w * v[t * head_dim + d];
  }
  for (double& o : out) o /= sum;
}

TEST(AttendBlockTest, EveryFormatOnEveryTargetMatchesTheScalarTwinAndDoubleSoftmax) {
  const size_t rows = 32;
  // Heads of 8 and 40 take the 8-lane decoders; 32 splits r3's value runs of 8 bytes over
  // 16 lanes (so do r3's keys at every head). Groups of 1-4 and 6 (4 + 2): every head-count
  // instantiation.
  for (size_t head_dim : {8, 16, 32, 40, 64, 128}) {
    for (size_t group : {1, 2, 3, 4, 6}) {
      const size_t pages = 3;
      const std::vector<float> k = make_rows(pages * rows, head_dim, true, 21);
      const std::vector<float> v = make_rows(pages * rows, head_dim, false, 22);
      std::vector<float> q = make_rows(group, head_dim, false, 23);
      for (float& x : q) x *= 0.3f;
      const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      const size_t n_last = 19;  // the last page part full
      for (KvFormat f : kAll) {
        if (!kv_format_supports(f, head_dim, rows)) continue;
        SCOPED_TRACE(std::string(kv_format_name(f)) + " head_dim " + std::to_string(head_dim) +
                     " group " + std::to_string(group));
        std::vector<std::vector<uint8_t>> kb(pages), vb(pages);
        std::vector<float> kd, vd;  // decoded, for the double softmax
        for (size_t p = 0; p < pages; ++p) {
          const size_t n = p + 1 == pages ? n_last : rows;
          kb[p].resize(kv_block_bytes(f, KvRole::kKeys, rows, head_dim));
          vb[p].resize(kv_block_bytes(f, KvRole::kValues, rows, head_dim));
          kv_encode_block(f, KvRole::kKeys, &k[p * rows * head_dim], n, rows, head_dim,
                          kb[p].data());
          kv_encode_block(f, KvRole::kValues, &v[p * rows * head_dim], n, rows, head_dim,
                          vb[p].data());
          std::vector<float> x(n * head_dim);
          kv_decode_block(f, KvRole::kKeys, kb[p].data(), n, rows, head_dim, x.data());
          kd.insert(kd.end(), x.begin(), x.end());
          kv_decode_block(f, KvRole::kValues, vb[p].data(), n, rows, head_dim, x.data());
          vd.insert(vd.end(), x.begin(), x.end());
        }
        auto run = [&](bool twin) {
          std::vector<OnlineSoftmax> st(group);
          std::vector<float> acc(group * head_dim, 0.0f);
          std::vector<float> scratch(attend_block_scratch_floats(group, rows, head_dim));
          for (size_t p = 0; p < pages; ++p) {
            const size_t n = p + 1 == pages ? n_last : rows;
            if (twin) {
              reference::attend_block_ref(f, kb[p].data(), vb[p].data(), n, rows, head_dim,
                                          q.data(), group, scale, st.data(), acc.data());
            } else {
              attend_block(f, kb[p].data(), vb[p].data(), n, rows, head_dim, q.data(), group, scale,
                           st.data(), acc.data(), scratch.data());
            }
          }
          for (size_t g = 0; g < group; ++g) {
            for (size_t d = 0; d < head_dim; ++d) acc[g * head_dim + d] /= st[g].sum;
          }
          return acc;
        };
        const std::vector<float> want = run(true);
        for (size_t g = 0; g < group; ++g) {
          std::vector<double> exact;
          attend_double(kd, vd, (pages - 1) * rows + n_last, head_dim, &q[g * head_dim], scale,
                        exact);
          for (size_t d = 0; d < head_dim; ++d) {
            ASSERT_NEAR(want[g * head_dim + d], exact[d], 1e-4 * (1.0 + std::fabs(exact[d])));
          }
        }
        for_each_simd_target([&] {
          const std::vector<float> got = run(false);
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + std::fabs(want[i]))) << "element " << i;
          }
        });
      }
    }
  }
}

TEST(KvFormatTest, SimdBlockDecoderGivesTheScalarDecodersBitsOnEveryTarget) {
  const size_t rows = 32;
  for (size_t head_dim : {8, 32, 40, 64, 128}) {
    for (KvFormat f : kAll) {
      if (!kv_format_supports(f, head_dim, rows)) continue;
      for (KvRole role : {KvRole::kKeys, KvRole::kValues}) {
        for (size_t n : {rows, size_t{19}}) {
          SCOPED_TRACE(std::string(kv_format_name(f)) +
                       (role == KvRole::kKeys ? " keys" : " values") + " head_dim " +
                       std::to_string(head_dim) + " n " + std::to_string(n));
          const std::vector<float> x = make_rows(rows, head_dim, role == KvRole::kKeys, 31);
          std::vector<uint8_t> block(kv_block_bytes(f, role, rows, head_dim));
          kv_encode_block(f, role, x.data(), n, rows, head_dim, block.data());
          std::vector<float> want(n * head_dim);
          kv_decode_block(f, role, block.data(), n, rows, head_dim, want.data());
          for_each_simd_target([&] {
            std::vector<float> got(n * head_dim, -1.0f);
            decode_kv_block_simd(f, role, block.data(), n, rows, head_dim, got.data());
            ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
          });
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
