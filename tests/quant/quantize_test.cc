// quantize_model on a synthesized Llama (whose matrices fit the 256-element K blocks): the
// community's per-tensor type mixes, general.file_type, importance matrices (both file formats,
// malformed files), and that every file reloads and runs. stories260K, whose matrices fit no K
// block, is quantize_stories_test.cc's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "kernels/matmul.h"
#include "quantize_test_helpers.h"
#include "strata/engine.h"
#include "strata/model_tools.h"
#include "test_files.h"

namespace strata {
namespace {

using quantize_test::load;
using quantize_test::open_gguf;
using quantize_test::quantize;
using test_files::kStories;
using test_files::kText;
using test_files::read_bytes;
using test_files::TempFile;

// Every element of a tensor as f32.
std::vector<float> tensor_values(const gguf::TensorInfo& t) {
  std::vector<float> v(t.n_elements);
  const size_t cols = t.dims[0], stride = row_bytes(t.type, cols);
  for (size_t r = 0; r < t.rows(); ++r) {
    kernels::dequantize_row(t.type, t.data + r * stride, v.data() + r * cols, cols);
  }
  return v;
}

// The tiny synthesized Llama (4 layers, hidden 256, FFN 768, 8 heads, 4 KV heads, untied
// output), F16, made once for the whole suite.
class TinyModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new TempFile("tiny_f16.gguf");
    SynthOptions o;
    o.output_path = file_->path();
    o.seed = 11;
    o.threads = 2;
    ASSERT_TRUE(synthesize_model(o).ok());
  }
  static void TearDownTestSuite() {
    delete file_;
    file_ = nullptr;
  }
  static const std::string& path() { return file_->path(); }

 private:
  static TempFile* file_;
};
TempFile* TinyModel::file_ = nullptr;

// Tensor name -> output type name, for the matrices of the tiny model.
std::map<std::string, std::string> types_of(const gguf::File& f) {
  std::map<std::string, std::string> types;
  for (const gguf::TensorInfo& t : f.tensors()) types[t.name] = std::string(dtype_name(t.type));
  return types;
}

// The expected type of each tiny-model matrix under a file type, worked out by hand from the
// community's rules (llama.cpp llama_tensor_get_type) for 4 layers and 4 attn_v tensors:
// use_more_bits(i, 4) holds for layers 2 (i % 3 == 2) and 3 (the last eighth); GQA is 8 / 4 = 2.
struct Expected {
  const char* file_type;
  uint32_t id;
  const char* base;         // attn_q, attn_k, ffn_gate, ffn_up, token_embd
  const char* attn_v[4];    // per layer
  const char* ffn_down[4];  // per layer
  const char* attn_output;
  const char* output;
};

const Expected kExpected[] = {
    {"Q2_K",
     10,
     "q2_K",
     {"q3_K", "q3_K", "q3_K", "q3_K"},
     {"q3_K", "q3_K", "q3_K", "q3_K"},
     "q3_K",
     "q6_K"},
    {"Q3_K_S",
     11,
     "q3_K",
     {"q3_K", "q3_K", "q3_K", "q3_K"},
     {"q3_K", "q3_K", "q3_K", "q3_K"},
     "q3_K",
     "q6_K"},
    {"Q3_K_M",
     12,
     "q3_K",
     {"q5_K", "q5_K", "q4_K", "q4_K"},
     {"q4_K", "q4_K", "q4_K", "q4_K"},
     "q4_K",
     "q6_K"},
    {"Q3_K_L",
     13,
     "q3_K",
     {"q5_K", "q5_K", "q5_K", "q5_K"},
     {"q5_K", "q5_K", "q5_K", "q5_K"},
     "q5_K",
     "q6_K"},
    {"Q4_K_S",
     14,
     "q4_K",
     {"q5_K", "q5_K", "q5_K", "q5_K"},
     {"q4_K", "q4_K", "q4_K", "q4_K"},
     "q4_K",
     "q6_K"},
    {"Q4_K_M",
     15,
     "q4_K",
     {"q4_K", "q4_K", "q6_K", "q6_K"},
     {"q4_K", "q4_K", "q6_K", "q6_K"},
     "q4_K",
     "q6_K"},
    {"Q5_K_S",
     16,
     "q5_K",
     {"q5_K", "q5_K", "q5_K", "q5_K"},
     {"q5_K", "q5_K", "q5_K", "q5_K"},
     "q5_K",
     "q6_K"},
    {"Q5_K_M",
     17,
     "q5_K",
     {"q5_K", "q5_K", "q6_K", "q6_K"},
     {"q5_K", "q5_K", "q6_K", "q6_K"},
     "q5_K",
     "q6_K"},
    {"Q6_K",
     18,
     "q6_K",
     {"q6_K", "q6_K", "q6_K", "q6_K"},
     {"q6_K", "q6_K", "q6_K", "q6_K"},
     "q6_K",
     "q6_K"},
    {"Q8_0",
     7,
     "q8_0",
     {"q8_0", "q8_0", "q8_0", "q8_0"},
     {"q8_0", "q8_0", "q8_0", "q8_0"},
     "q8_0",
     "q8_0"},
    {"Q4_0",
     2,
     "q4_0",
     {"q4_0", "q4_0", "q4_0", "q4_0"},
     {"q4_0", "q4_0", "q4_0", "q4_0"},
     "q4_0",
     "q6_K"},
};

TEST_F(TinyModel, EachFileTypeAssignsTheCommunitysTypesAndRuns) {
  std::unique_ptr<Engine> f16 = load(path());
  ASSERT_TRUE(f16);
  const std::vector<TokenId> tokens = f16->tokenize(kText, true, false);
  Result<std::vector<float>> want = f16->evaluate(tokens, true);
  ASSERT_TRUE(want.ok());
  std::map<std::string, double> logit_error;
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.file_type);
    TempFile out(std::string("tiny_") + e.file_type + ".gguf");
    Result<QuantizeReport> report = quantize(path(), out.path(), e.file_type);
    ASSERT_TRUE(report.ok()) << report.error().message;
    EXPECT_TRUE(report->warnings.empty()) << report->warnings.front();
    EXPECT_EQ(report->file_type, e.file_type);
    std::unique_ptr<gguf::File> q = open_gguf(out.path());
    ASSERT_TRUE(q);
    EXPECT_EQ(q->get_uint("general.file_type"), e.id);
    EXPECT_EQ(q->get_uint("general.quantization_version"), 2u);
    std::map<std::string, std::string> types = types_of(*q);
    EXPECT_EQ(types["token_embd.weight"], e.base);
    EXPECT_EQ(types["output.weight"], e.output);
    EXPECT_EQ(types["output_norm.weight"], "f32");
    for (int i = 0; i < 4; ++i) {
      const std::string b = "blk." + std::to_string(i) + ".";
      EXPECT_EQ(types[b + "attn_q.weight"], e.base) << b;
      EXPECT_EQ(types[b + "attn_k.weight"], e.base) << b;
      EXPECT_EQ(types[b + "ffn_gate.weight"], e.base) << b;
      EXPECT_EQ(types[b + "ffn_up.weight"], e.base) << b;
      EXPECT_EQ(types[b + "attn_v.weight"], e.attn_v[i]) << b;
      EXPECT_EQ(types[b + "ffn_down.weight"], e.ffn_down[i]) << b;
      EXPECT_EQ(types[b + "attn_output.weight"], e.attn_output) << b;
      EXPECT_EQ(types[b + "attn_norm.weight"], "f32") << b;
    }
    // The report agrees with the file, and its error is the one measured from the file.
    std::unique_ptr<gguf::File> in = open_gguf(path());
    ASSERT_TRUE(in);
    for (const TensorQuantizeReport& r : report->tensors) {
      EXPECT_EQ(r.output_type, types[r.name]) << r.name;
      if (r.name != "blk.1.ffn_down.weight") continue;
      const std::vector<float> x = tensor_values(*in->find_tensor(r.name));
      const std::vector<float> y = tensor_values(*q->find_tensor(r.name));
      double err = 0, ref = 0;
      for (size_t k = 0; k < x.size(); ++k) {
        err += (double{y[k]} - x[k]) * (double{y[k]} - x[k]);
        ref += double{x[k]} * x[k];
      }
      EXPECT_NEAR(r.relative_rmse, std::sqrt(err / ref), 1e-9);
    }

    // The file loads and computes logits close to the F16 model's.
    std::unique_ptr<Engine> engine = load(out.path());
    ASSERT_TRUE(engine);
    Result<std::vector<float>> got = engine->evaluate(tokens, true);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), want->size());
    double diff = 0, spread = 0, mean = 0;
    for (float v : *want) mean += v / want->size();
    for (size_t k = 0; k < got->size(); ++k) {
      ASSERT_TRUE(std::isfinite((*got)[k])) << k;
      diff += (double{(*got)[k]} - (*want)[k]) * (double{(*got)[k]} - (*want)[k]);
      spread += ((*want)[k] - mean) * ((*want)[k] - mean);
    }
    logit_error[e.file_type] = std::sqrt(diff / spread);
    std::printf("%-7s logits: RMS error / RMS spread of the F16 model's %.4f\n", e.file_type,
                logit_error[e.file_type]);
  }
  // More bits, closer logits: each step of the ladder at most 0.8x the error of the one below.
  const char* ladder[] = {"Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0"};
  for (size_t i = 1; i < std::size(ladder); ++i) {
    EXPECT_LT(logit_error[ladder[i]], 0.8 * logit_error[ladder[i - 1]]) << ladder[i];
  }
  EXPECT_LT(logit_error["Q2_K"], 1.0);  // a random 4-layer model amplifies weight error
  EXPECT_LT(logit_error["Q8_0"], 0.05);
}

TEST_F(TinyModel, PureGivesEveryMatrixTheDefaultType) {
  TempFile out("tiny_pure.gguf");
  Result<QuantizeReport> report = quantize(path(), out.path(), "q4_k_m", 2, "", true);
  ASSERT_TRUE(report.ok()) << report.error().message;
  std::unique_ptr<gguf::File> q = open_gguf(out.path());
  ASSERT_TRUE(q);
  for (const gguf::TensorInfo& t : q->tensors()) {
    EXPECT_EQ(t.type, t.dims.size() == 1 ? DType::kF32 : DType::kQ4_K) << t.name;
  }
}

// A quantized input is dequantized and quantized again (the CLI asks for --allow-requantize
// first): the Q8_0 file's matrices become Q4_K, close to what quantizing the F16 original gives.
TEST_F(TinyModel, QuantizedInputIsRequantized) {
  TempFile q8("tiny_q8.gguf"), from_q8("tiny_q8_q4.gguf"), direct("tiny_direct_q4.gguf");
  ASSERT_TRUE(quantize(path(), q8.path(), "Q8_0", 2).ok());
  // Refused unless asked for, then re-encoded with a warning.
  Result<QuantizeReport> refused = quantize(q8.path(), from_q8.path(), "Q4_K_M", 2, "", true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--allow-requantize"), std::string::npos);
  Result<QuantizeReport> report =
      quantize(q8.path(), from_q8.path(), "Q4_K_M", 2, "", true, /*allow_requantize=*/true);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_NE(report->warnings[0].find("requantizing"), std::string::npos);
  ASSERT_TRUE(quantize(path(), direct.path(), "Q4_K_M", 2, "", true).ok());
  std::unique_ptr<gguf::File> requantized = open_gguf(from_q8.path()),
                              once = open_gguf(direct.path());
  ASSERT_TRUE(requantized && once);
  for (size_t i = 0; i < requantized->tensors().size(); ++i) {
    const gguf::TensorInfo& t = requantized->tensors()[i];
    EXPECT_EQ(t.type, t.dims.size() == 1 ? DType::kF32 : DType::kQ4_K) << t.name;
    if (t.dims.size() == 1) continue;
    const std::vector<float> a = tensor_values(t), b = tensor_values(once->tensors()[i]);
    double diff = 0, norm = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      diff += (a[k] - b[k]) * (a[k] - b[k]);
      norm += b[k] * b[k];
    }
    EXPECT_LT(std::sqrt(diff / norm), 0.1) << t.name;
  }
}

TEST_F(TinyModel, OutputDoesNotDependOnTheThreadCount) {
  TempFile one("threads_1.gguf"), three("threads_3.gguf");
  Result<QuantizeReport> a = quantize(path(), one.path(), "Q4_K_M", 1);
  Result<QuantizeReport> b = quantize(path(), three.path(), "Q4_K_M", 3);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(read_bytes(one.path()) == read_bytes(three.path()));
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    EXPECT_EQ(a->tensors[i].relative_rmse, b->tensors[i].relative_rmse) << a->tensors[i].name;
  }
}

// Per-column importance for every matrix of a model, spread over three orders of magnitude.
std::map<std::string, std::vector<float>> random_importance(const gguf::File& model) {
  std::mt19937 rng(5);
  std::lognormal_distribution<float> dist(0.0f, 1.5f);
  std::map<std::string, std::vector<float>> m;
  for (const gguf::TensorInfo& t : model.tensors()) {
    if (t.dims.size() != 2 || t.name.find("_norm") != std::string::npos) continue;
    if (t.name == "token_embd.weight") continue;  // llama-imatrix has no entry for it either
    std::vector<float>& v = m[t.name];
    v.resize(t.dims[0]);
    for (float& x : v) x = dist(rng);
  }
  return m;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// llama-imatrix's GGUF layout: NAME.in_sum2 [columns, 1] holds importance * count, NAME.counts
// [1, 1] the count.
void write_gguf_imatrix(const std::map<std::string, std::vector<float>>& m, const std::string& path,
                        float count = 8) {
  gguf::Writer w;
  w.set("general.type", gguf::Value::string("imatrix"));
  for (const auto& [name, values] : m) {
    std::vector<float> sums = values;
    for (float& s : sums) s *= count;
    ASSERT_TRUE(
        w.add_tensor(name + ".in_sum2", DType::kF32, {values.size(), 1}, f32_bytes(sums)).ok());
    ASSERT_TRUE(w.add_tensor(name + ".counts", DType::kF32, {1, 1}, f32_bytes({count})).ok());
  }
  ASSERT_TRUE(w.write(path).ok());
}

void put_i32(std::ofstream& out, int32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); }

// The legacy .dat layout: values already divided by the call count, then multiplied by it.
void write_dat_imatrix(const std::map<std::string, std::vector<float>>& m,
                       const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  put_i32(out, static_cast<int32_t>(m.size()));
  for (const auto& [name, values] : m) {
    put_i32(out, static_cast<int32_t>(name.size()));
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    put_i32(out, 4);  // calls
    put_i32(out, static_cast<int32_t>(values.size()));
    std::vector<float> scaled = values;
    for (float& s : scaled) s *= 4;
    out.write(reinterpret_cast<const char*>(scaled.data()),
              static_cast<std::streamsize>(scaled.size() * sizeof(float)));
  }
  put_i32(out, 100);  // chunk count
  put_i32(out, 4);
  out.write("wiki", 4);
}

// sum_c importance[c] * (y - x)^2 over all rows of a matrix.
double weighted_error(const gguf::TensorInfo& in, const gguf::TensorInfo& out,
                      const std::vector<float>& importance) {
  const std::vector<float> x = tensor_values(in), y = tensor_values(out);
  double e = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const double d = double{y[k]} - x[k];
    e += importance[k % in.dims[0]] * d * d;
  }
  return e;
}

TEST_F(TinyModel, AnImportanceMatrixInEitherFormatLowersTheWeightedError) {
  std::unique_ptr<gguf::File> in = open_gguf(path());
  ASSERT_TRUE(in);
  const std::map<std::string, std::vector<float>> importance = random_importance(*in);
  TempFile gguf_matrix("imatrix.gguf"), dat_matrix("imatrix.dat");
  write_gguf_imatrix(importance, gguf_matrix.path());
  write_dat_imatrix(importance, dat_matrix.path());

  TempFile plain("plain.gguf"), with_gguf("with_gguf.gguf"), with_dat("with_dat.gguf");
  ASSERT_TRUE(quantize(path(), plain.path(), "Q4_K_M").ok());
  Result<QuantizeReport> a = quantize(path(), with_gguf.path(), "Q4_K_M", 2, gguf_matrix.path());
  ASSERT_TRUE(a.ok()) << a.error().message;
  Result<QuantizeReport> b = quantize(path(), with_dat.path(), "Q4_K_M", 2, dat_matrix.path());
  ASSERT_TRUE(b.ok()) << b.error().message;
  // Both formats carry the same importance, so they give the same file.
  EXPECT_TRUE(read_bytes(with_gguf.path()) == read_bytes(with_dat.path()));
  // token_embd has no entry: one warning names it.
  ASSERT_EQ(a->warnings.size(), 1u);
  EXPECT_NE(a->warnings[0].find("token_embd.weight"), std::string::npos) << a->warnings[0];
  for (const TensorQuantizeReport& r : a->tensors) {
    EXPECT_EQ(r.importance_weighted, importance.contains(r.name) && r.quantized) << r.name;
  }

  std::unique_ptr<gguf::File> p = open_gguf(plain.path()), w = open_gguf(with_gguf.path());
  ASSERT_TRUE(p && w);
  for (const auto& [name, columns] : importance) {
    const double unweighted =
        weighted_error(*in->find_tensor(name), *p->find_tensor(name), columns);
    const double weighted = weighted_error(*in->find_tensor(name), *w->find_tensor(name), columns);
    EXPECT_LT(weighted, 0.85 * unweighted) << name;
  }
  std::unique_ptr<Engine> engine = load(with_gguf.path());
  EXPECT_TRUE(engine);
}

TEST_F(TinyModel, MalformedImportanceMatricesAreClearErrors) {
  std::unique_ptr<gguf::File> in = open_gguf(path());
  ASSERT_TRUE(in);
  std::map<std::string, std::vector<float>> importance = random_importance(*in);
  TempFile out("never.gguf");
  auto expect_error = [&](const std::string& matrix, const std::string& says) {
    Result<QuantizeReport> r = quantize(path(), out.path(), "Q4_K_M", 2, matrix);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    EXPECT_FALSE(std::filesystem::exists(out.path()));
  };

  TempFile truncated("truncated.dat");
  write_dat_imatrix(importance, truncated.path());
  std::filesystem::resize_file(truncated.path(), 200);
  expect_error(truncated.path(), "truncated");

  TempFile not_a_matrix("model_as_matrix.gguf");
  std::filesystem::copy_file(kStories, not_a_matrix.path());
  expect_error(not_a_matrix.path(), "no *.in_sum2 tensors");

  TempFile no_counts("no_counts.gguf");
  {
    gguf::Writer w;
    ASSERT_TRUE(w.add_tensor("blk.0.attn_q.weight.in_sum2", DType::kF32, {256, 1},
                             f32_bytes(std::vector<float>(256, 1.0f)))
                    .ok());
    ASSERT_TRUE(w.write(no_counts.path()).ok());
  }
  expect_error(no_counts.path(), "blk.0.attn_q.weight.counts");

  TempFile wrong_size("wrong_size.gguf");
  importance["blk.2.ffn_up.weight"].resize(100);
  write_gguf_imatrix(importance, wrong_size.path());
  expect_error(wrong_size.path(), "blk.2.ffn_up.weight has 100 values");

  TempFile negative("negative.gguf");
  importance["blk.2.ffn_up.weight"].assign(256, -1.0f);
  write_gguf_imatrix(importance, negative.path());
  expect_error(negative.path(), "negative or non-finite");

  Result<QuantizeReport> missing =
      quantize(path(), out.path(), "Q4_K_M", 2, "../shared/models/no_such_imatrix.dat");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace strata
