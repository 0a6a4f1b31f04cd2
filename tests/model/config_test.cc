// Hyper-parameters read from stories260K's metadata (values from
// ../shared/models/reference/README.md).
#include "model/config.h"

#include <gtest/gtest.h>

#include <functional>

#include "gguf/writer.h"
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

}  // namespace
}  // namespace strata::model
