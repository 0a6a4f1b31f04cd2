// describe_text / describe_json on stories260K (facts from ../shared/models/reference/README.md)
// and on hand-made files with awkward strings.
#include "gguf/describe.h"

#include <gtest/gtest.h>

#include <string>

#include "gguf_bytes.h"

namespace strata::gguf {
namespace {

using testing::GgufBytes;
using testing::parse_bytes;

TEST(GgufDescribe, StoriesText) {
  Result<std::unique_ptr<File>> f = File::open("../shared/models/stories260K.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  std::string text = describe_text(**f);
  EXPECT_NE(text.find("GGUF v3"), std::string::npos);
  EXPECT_NE(text.find("19 metadata keys, 48 tensors"), std::string::npos);
  EXPECT_NE(text.find("general.architecture: string = \"llama\""), std::string::npos);
  EXPECT_NE(text.find("llama.embedding_length: uint32 = 64\n"), std::string::npos);
  EXPECT_NE(text.find("tokenizer.ggml.tokens: array[string] = [\"<unk>\", \"<s>\", \"</s>\""),
            std::string::npos);
  EXPECT_NE(text.find("...] (512 items)"), std::string::npos);
  // token_embd.weight: f32, 64 x 512, 64 * 512 * 4 bytes.
  size_t row = text.find("  token_embd.weight ");
  ASSERT_NE(row, std::string::npos);
  std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find(" f32 "), std::string::npos) << line;
  EXPECT_NE(line.find("[64, 512]"), std::string::npos) << line;
  EXPECT_NE(line.find(" 131072"), std::string::npos) << line;
  EXPECT_NE(text.find("blk.4.ffn_down.weight"), std::string::npos);
  // Tensor bytes are the file minus the 14176-byte header region (README: 1,185,376 bytes).
  EXPECT_NE(text.find("total: 48 tensors"), std::string::npos);
  EXPECT_NE(text.find(std::to_string(1185376 - (*f)->data_offset()) + " bytes"), std::string::npos);
}

TEST(GgufDescribe, StoriesJson) {
  Result<std::unique_ptr<File>> f = File::open("../shared/models/stories260K.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  nlohmann::json j = describe_json(**f);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["alignment"], 32);
  EXPECT_EQ(j["file_size"], 1185376);
  ASSERT_EQ(j["tensors"].size(), 48u);
  const nlohmann::json& t0 = j["tensors"][0];
  EXPECT_EQ(t0["name"], "token_embd.weight");
  EXPECT_EQ(t0["type"], "f32");
  EXPECT_EQ(t0["shape"], nlohmann::json::array({64, 512}));
  EXPECT_EQ(t0["bytes"], 131072);
  EXPECT_EQ(t0["offset"], 0);
  ASSERT_EQ(j["metadata"].size(), 19u);
  const nlohmann::json& tokens = j["metadata"][0];
  EXPECT_EQ(tokens["key"], "tokenizer.ggml.tokens");
  EXPECT_EQ(tokens["type"], "array");
  EXPECT_EQ(tokens["element_type"], "string");
  EXPECT_EQ(tokens["length"], 512);
  EXPECT_EQ(tokens["truncated"], true);
  ASSERT_EQ(tokens["value"].size(), 8u);
  EXPECT_EQ(tokens["value"][1], "<s>");
  bool saw_block_count = false;
  for (const nlohmann::json& m : j["metadata"]) {
    if (m["key"] == "llama.block_count") {
      saw_block_count = true;
      EXPECT_EQ(m["type"], "uint32");
      EXPECT_EQ(m["value"], 5);
    }
  }
  EXPECT_TRUE(saw_block_count);
  // Round-trips through text.
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);
}

TEST(GgufDescribe, VocabOnlyFileHasNoTensorTable) {
  Result<std::unique_ptr<File>> f = File::open("../shared/testdata/vocab/ggml-vocab-phi-3.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  DescribeOptions options;
  options.max_string_bytes = 40;
  std::string text = describe_text(**f, options);
  EXPECT_EQ(text.find("tensors:"), std::string::npos);
  // The chat template is long; it is cut to 40 bytes and stays on one line.
  size_t at = text.find("tokenizer.chat_template: string = ");
  ASSERT_NE(at, std::string::npos);
  std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("...\" ("), std::string::npos) << line;
  EXPECT_LT(line.size(), 120u) << line;
  EXPECT_TRUE(describe_json(**f, options)["tensors"].empty());
}

TEST(GgufDescribe, InvalidUtf8StillDumps) {
  GgufBytes b;
  b.header(0, 2).kv_string("bad.\xff", "x\xc3(y\xed\xa0\x80z");
  b.kv_string("cut", "\xe2\x96\x81\xe2\x96\x81");
  Result<std::unique_ptr<File>> f = parse_bytes(b.bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  nlohmann::json j = describe_json(**f);
  std::string dumped;
  ASSERT_NO_THROW(dumped = j.dump());
  EXPECT_EQ(j["metadata"][0]["key"], "bad.\xef\xbf\xbd");
  // A lone lead byte and an encoded surrogate (ED A0 80) are each replaced byte by byte.
  EXPECT_EQ(j["metadata"][0]["value"], "x\xef\xbf\xbd(y\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz");
  DescribeOptions options;
  options.max_string_bytes = 4;  // cuts the second U+2581 after its first byte
  nlohmann::json cut = describe_json(**f, options);
  ASSERT_NO_THROW(dumped = cut.dump());
  EXPECT_EQ(cut["metadata"][1]["value"], "\xe2\x96\x81\xef\xbf\xbd...");
}

}  // namespace
}  // namespace strata::gguf
