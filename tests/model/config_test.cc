// Hyper-parameters read from stories260K's metadata (values from
// ../shared/models/reference/README.md).
#include "model/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "largest_allocation.h"
#include "model/model.h"

namespace strata::model {
namespace {

TEST(ConfigTest, ReadsStories260K) {
  Result<std::unique_ptr<gguf::File>> file = gguf::File::open("../shared/models/stories260K.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  Result<ModelConfig> c = read_config(**file);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, Architecture::kLlama);
  EXPECT_EQ(c->n_embd, 64u);
  EXPECT_EQ(c->n_layers, 5u);
  EXPECT_EQ(c->n_heads, 8u);
  EXPECT_EQ(c->n_kv_heads, 4u);
  EXPECT_EQ(c->head_dim, 8u);
  EXPECT_EQ(c->n_ff, 172u);
  EXPECT_EQ(c->n_ctx_train, 2048u);
  EXPECT_EQ(c->n_vocab, 512u);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5f);
}

// A copy of stories260K with one metadata key changed or one tensor dropped must be refused with
// a message naming the key or tensor.
Result<std::unique_ptr<Model>> load_modified(const std::function<void(gguf::Writer&)>& edit,
                                             const std::string& skip_tensor = "") {
  std::unique_ptr<gguf::File> src =
      std::move(gguf::File::open("../shared/models/stories260K.gguf")).value();
  gguf::Writer w;
  w.copy_metadata(*src);
  edit(w);
  for (const gguf::TensorInfo& t : src->tensors()) {
    if (t.name != skip_tensor) {
      EXPECT_TRUE(w.add_tensor_view(t.name, t.type, t.dims, t.data, t.n_bytes).ok());
    }
  }
  // One file per test: ctest runs tests in parallel processes.
  const std::string path = ::testing::TempDir() + "/modified-" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".gguf";
  EXPECT_TRUE(w.write(path).ok());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file,
                          gguf::File::open(path, MappedFile::Mode::kResident));
  return Model::load(std::move(file));
}

TEST(ConfigTest, UnsupportedArchitectureIsNamed) {
  auto m = load_modified(
      [](gguf::Writer& w) { w.set("general.architecture", gguf::Value::string("mamba")); });
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(m.error().message.find("mamba"), std::string::npos);
}

TEST(ConfigTest, InconsistentHeadsAreRefused) {
  auto m = load_modified(
      [](gguf::Writer& w) { w.set("llama.attention.head_count_kv", gguf::Value::uint32(3)); });
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("head_count_kv"), std::string::npos);
}

TEST(ConfigTest, MissingTensorIsNamed) {
  auto m = load_modified([](gguf::Writer&) {}, "blk.3.attn_q.weight");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("blk.3.attn_q.weight"), std::string::npos);
}

// A refusal of one metadata value: the right code, one line, naming the key and the value.
void expect_refused(const Result<std::unique_ptr<Model>>& m, ErrorCode code,
                    const std::vector<std::string>& parts) {
  ASSERT_FALSE(m.ok()) << "loaded a model with a bad hyper-parameter";
  EXPECT_EQ(m.error().code, code) << m.error().message;
  EXPECT_EQ(m.error().message.find('\n'), std::string::npos) << m.error().message;
  for (const std::string& part : parts) {
    EXPECT_NE(m.error().message.find(part), std::string::npos)
        << "'" << m.error().message << "' lacks '" << part << "'";
  }
}

Result<std::unique_ptr<Model>> load_with(const std::string& key, gguf::Value value) {
  return load_modified([&](gguf::Writer& w) { w.set(key, value); });
}

// The attacker's files: block_count 1e8 aborted on std::bad_alloc, 1e7 took 3.3 GB before the
// missing blk.5 tensors were noticed. Both are refused before the per-block table is sized.
TEST(ConfigLimitsTest, HugeBlockCountIsRefusedBeforeAllocating) {
  for (uint32_t blocks : {100000000u, 10000000u}) {
    SCOPED_TRACE(blocks);
    // The reader's own allocations (the metadata, the tensor table) come first and are small.
    {
      gguf::Writer w;
      std::unique_ptr<gguf::File> src =
          std::move(gguf::File::open("../shared/models/stories260K.gguf")).value();
      w.copy_metadata(*src);
      w.set("llama.block_count", gguf::Value::uint32(blocks));
      for (const gguf::TensorInfo& t : src->tensors()) ASSERT_TRUE(w.add_tensor_view(t).ok());
      Result<std::vector<uint8_t>> bytes = w.serialize();
      ASSERT_TRUE(bytes.ok()) << bytes.error().message;
      auto image = std::make_unique<std::vector<uint8_t>>(std::move(bytes).value());
      Result<std::unique_ptr<gguf::File>> parsed =
          gguf::File::parse(MappedFile::from_memory(image->data(), image->size()));
      ASSERT_TRUE(parsed.ok()) << parsed.error().message;
      testing::reset_largest_allocation();
      Result<std::unique_ptr<Model>> m = Model::load(std::move(parsed).value());
      EXPECT_LT(testing::largest_allocation(), size_t{1} << 20);
      expect_refused(m, ErrorCode::kOutOfRange,
                     {"llama.block_count", std::to_string(blocks), "limit of 4096"});
    }
  }
}

TEST(ConfigLimitsTest, BlockCountTheTensorsCannotBackIsRefused) {
  // Within the limit, but stories260K has 48 tensors: 5 blocks of 9 plus 3.
  testing::reset_largest_allocation();
  auto m = load_with("llama.block_count", gguf::Value::uint32(4096));
  expect_refused(m, ErrorCode::kInvalidFile, {"llama.block_count", "4096", "48 tensors"});
  auto six = load_with("llama.block_count", gguf::Value::uint32(6));
  expect_refused(six, ErrorCode::kInvalidFile, {"block_count", "48 tensors"});
}

TEST(ConfigLimitsTest, HugeCountsAreRefusedNamingTheKey) {
  const uint64_t huge = uint64_t{1} << 40;
  for (const char* key :
       {"llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
        "llama.attention.head_count", "llama.attention.head_count_kv", "llama.context_length",
        "llama.attention.key_length", "llama.rope.dimension_count", "llama.vocab_size"}) {
    SCOPED_TRACE(key);
    expect_refused(load_with(key, gguf::Value::uint64(huge)), ErrorCode::kOutOfRange,
                   {key, std::to_string(huge), "limit"});
    // Past int64 too: still a count, still named.
    expect_refused(load_with(key, gguf::Value::uint64(std::numeric_limits<uint64_t>::max())),
                   ErrorCode::kOutOfRange, {key, "limit"});
    expect_refused(load_with(key, gguf::Value::int32(-1)), ErrorCode::kInvalidFile, {key, "-1"});
    expect_refused(load_with(key, gguf::Value::uint32(0)), ErrorCode::kInvalidFile, {key, "0"});
    expect_refused(load_with(key, gguf::Value::string("64")), ErrorCode::kInvalidFile,
                   {key, "must be an integer"});
  }
}

TEST(ConfigLimitsTest, HeadsThatDoNotDivideTheEmbeddingAreRefused) {
  // 64 / 7 has no whole head size, and without attention.key_length there is no other.
  auto m = load_modified([](gguf::Writer& w) {
    w.set("llama.attention.head_count", gguf::Value::uint32(7));
    w.set("llama.attention.head_count_kv", gguf::Value::uint32(7));
  });
  expect_refused(m, ErrorCode::kInvalidFile, {"embedding_length", "head_count"});
}

struct BadFloat {
  const char* key;
  double value;
  const char* shown;  // how the message spells it
};

TEST(ConfigLimitsTest, NonFiniteOrNonPositiveFloatsAreRefusedNamingTheKey) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const BadFloat cases[] = {
      {"llama.attention.layer_norm_rms_epsilon", nan, "nan"},
      {"llama.attention.layer_norm_rms_epsilon", 0.0, "0"},
      {"llama.attention.layer_norm_rms_epsilon", -1e-5, "-1e-05"},
      {"llama.attention.layer_norm_rms_epsilon", inf, "inf"},
      {"llama.attention.layer_norm_rms_epsilon", 2.0, "2"},
      {"llama.rope.freq_base", nan, "nan"},
      {"llama.rope.freq_base", 0.0, "0"},
      {"llama.rope.freq_base", -10000.0, "-10000"},
      {"llama.rope.freq_base", inf, "inf"},
      {"llama.rope.freq_base", -inf, "-inf"},
  };
  for (const BadFloat& c : cases) {
    SCOPED_TRACE(std::string(c.key) + " = " + c.shown);
    expect_refused(load_with(c.key, gguf::Value::float32(static_cast<float>(c.value))),
                   ErrorCode::kInvalidFile, {c.key, std::string("is ") + c.shown});
  }
  // A float64 that float32 cannot hold becomes inf (or 0) in the forward pass.
  expect_refused(load_with("llama.rope.freq_base", gguf::Value::float64(1e300)),
                 ErrorCode::kInvalidFile, {"llama.rope.freq_base", "1e+300"});
  expect_refused(load_with("llama.attention.layer_norm_rms_epsilon", gguf::Value::float64(1e-300)),
                 ErrorCode::kInvalidFile, {"layer_norm_rms_epsilon", "1e-300"});
  expect_refused(load_with("llama.rope.freq_base", gguf::Value::string("10000")),
                 ErrorCode::kInvalidFile, {"llama.rope.freq_base", "must be a number"});
}

TEST(ConfigLimitsTest, GoodFloatsOfAnyNumericTypeLoad) {
  auto m = load_modified([](gguf::Writer& w) {
    w.set("llama.attention.layer_norm_rms_epsilon", gguf::Value::float64(1e-6));
    w.set("llama.rope.freq_base", gguf::Value::uint32(500000));
  });
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FLOAT_EQ((*m)->config().rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ((*m)->config().rope_freq_base, 500000.0f);
}

TEST(ConfigLimitsTest, BadLinearRopeScalingFactorIsRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double factor : {nan, 0.0, -2.0, std::numeric_limits<double>::infinity(), 1e-45}) {
    SCOPED_TRACE(factor);
    auto m = load_modified([&](gguf::Writer& w) {
      w.set("llama.rope.scaling.type", gguf::Value::string("linear"));
      w.set("llama.rope.scaling.factor", gguf::Value::float32(static_cast<float>(factor)));
    });
    expect_refused(m, ErrorCode::kInvalidFile, {"llama.rope.scaling.factor"});
  }
  auto good = load_modified([](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::Value::string("linear"));
    w.set("llama.rope.scaling.factor", gguf::Value::float32(4.0f));
  });
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_FLOAT_EQ((*good)->config().rope_freq_scale, 0.25f);
}

TEST(ConfigLimitsTest, ArchitectureNameStaysOnOneLine) {
  auto m = load_with("general.architecture", gguf::Value::string("evil\nerror: injected"));
  expect_refused(m, ErrorCode::kUnsupported, {"evil\\nerror: injected"});
}

// rope_freqs.weight divides RoPE's frequencies (Llama 3.1); stories260K has head size 8, so 4.
Result<std::unique_ptr<Model>> load_with_rope_freqs(const std::vector<float>& freqs) {
  return load_modified([&](gguf::Writer& w) {
    std::vector<uint8_t> bytes(freqs.size() * sizeof(float));
    std::memcpy(bytes.data(), freqs.data(), bytes.size());
    EXPECT_TRUE(w.add_tensor("rope_freqs.weight", DType::kF32, {freqs.size()}, bytes).ok());
  });
}

TEST(ConfigLimitsTest, BadRopeFrequencyFactorsAreRefused) {
  ASSERT_TRUE(load_with_rope_freqs({1, 1, 2, 4}).ok());
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(bad);
    expect_refused(load_with_rope_freqs({1, 1, bad, 4}), ErrorCode::kInvalidFile,
                   {"rope_freqs.weight", "element 2"});
  }
}

}  // namespace
}  // namespace strata::model
