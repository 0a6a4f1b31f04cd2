// Tokenizer::from_gguf on in-memory GGUF images: the keys it reads, llama.cpp's defaults for
// absent ones, and errors (never crashes) for malformed tokenizer metadata.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "platform/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

using gguf::Value;
using gguf::ValueType;

const std::string kSpace = "\xE2\x96\x81";

// A tiny SentencePiece vocabulary: <unk> <s> </s> ▁ a b ▁a.
gguf::Writer spm_writer() {
  gguf::Writer writer;
  writer.set("general.architecture", Value::string("llama"));
  writer.set("tokenizer.ggml.model", Value::string("llama"));
  writer.set("tokenizer.ggml.tokens",
             Value::string_array({"<unk>", "<s>", "</s>", kSpace, "a", "b", kSpace + "a"}));
  writer.set("tokenizer.ggml.scores", Value::float32_array({0, 0, 0, -1, -2, -2, -1}));
  writer.set("tokenizer.ggml.token_type", Value::int32_array({2, 3, 3, 1, 1, 1, 1}));
  writer.set("tokenizer.ggml.bos_token_id", Value::uint32(1));
  writer.set("tokenizer.ggml.eos_token_id", Value::uint32(2));
  writer.set("tokenizer.ggml.unknown_token_id", Value::uint32(0));
  return writer;
}

// Holds the image for as long as the File that views it.
struct Loaded {
  std::vector<uint8_t> image;
  std::unique_ptr<gguf::File> file;
  Result<std::unique_ptr<Tokenizer>> tokenizer = make_error(ErrorCode::kInternal, "not loaded");
};

std::unique_ptr<Loaded> load(const gguf::Writer& writer) {
  auto loaded = std::make_unique<Loaded>();
  auto image = writer.serialize();
  EXPECT_TRUE(image.ok());
  if (!image.ok()) return loaded;
  loaded->image = std::move(*image);
  auto file =
      gguf::File::parse(MappedFile::from_memory(loaded->image.data(), loaded->image.size()));
  EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error().message);
  if (!file.ok()) return loaded;
  loaded->file = std::move(*file);
  loaded->tokenizer = Tokenizer::from_gguf(*loaded->file);
  return loaded;
}

TEST(GgufLoading, ReadsSentencePieceVocabularyWithDefaults) {
  auto loaded = load(spm_writer());
  ASSERT_TRUE(loaded->tokenizer.ok()) << loaded->tokenizer.error().message;
  const Tokenizer& tokenizer = **loaded->tokenizer;
  EXPECT_EQ(tokenizer.n_vocab(), 7u);
  EXPECT_EQ(tokenizer.model_name(), "llama");
  EXPECT_EQ(tokenizer.pre_name(), "default");
  EXPECT_TRUE(tokenizer.add_bos());  // SentencePiece default without add_bos_token
  EXPECT_FALSE(tokenizer.add_eos());
  EXPECT_EQ(tokenizer.token_type(0), TokenType::kUnknown);
  // "a b" -> "▁a▁b": ▁a merges; "b" has no "▁b" piece.
  EXPECT_EQ(tokenizer.encode("a b", true, false), (std::vector<TokenId>{1, 6, 3, 5}));
}

TEST(GgufLoading, ExplicitFlagsOverrideDefaults) {
  gguf::Writer writer = spm_writer();
  writer.set("tokenizer.ggml.add_bos_token", Value::boolean(false));
  writer.set("tokenizer.ggml.add_eos_token", Value::boolean(true));
  writer.set("tokenizer.ggml.add_space_prefix", Value::boolean(false));
  auto loaded = load(writer);
  ASSERT_TRUE(loaded->tokenizer.ok()) << loaded->tokenizer.error().message;
  EXPECT_EQ((*loaded->tokenizer)->encode("a", true, false), (std::vector<TokenId>{4, 2}));
}

TEST(GgufLoading, OutOfRangeSpecialIdsCountAsAbsent) {
  gguf::Writer writer = spm_writer();
  writer.set("tokenizer.ggml.bos_token_id", Value::uint32(1000));
  auto loaded = load(writer);
  ASSERT_TRUE(loaded->tokenizer.ok());
  EXPECT_EQ((*loaded->tokenizer)->bos(), -1);
  EXPECT_EQ((*loaded->tokenizer)->encode("a", true, false), (std::vector<TokenId>{6}));
}

TEST(GgufLoading, MalformedMetadataIsAnError) {
  struct Case {
    const char* what;
    void (*edit)(gguf::Writer*);
    ErrorCode code;
  };
  const Case cases[] = {
      {"no model", [](gguf::Writer* w) { w->remove("tokenizer.ggml.model"); },
       ErrorCode::kNotFound},
      {"no tokens", [](gguf::Writer* w) { w->remove("tokenizer.ggml.tokens"); },
       ErrorCode::kNotFound},
      {"tokens not an array",
       [](gguf::Writer* w) { w->set("tokenizer.ggml.tokens", Value::string("a")); },
       ErrorCode::kInvalidFile},
      {"tokens not strings",
       [](gguf::Writer* w) {
         w->set("tokenizer.ggml.tokens", Value::int32_array({1, 2}));
       },
       ErrorCode::kInvalidFile},
      {"empty tokens",
       [](gguf::Writer* w) { w->set("tokenizer.ggml.tokens", Value::string_array({})); },
       ErrorCode::kInvalidFile},
      {"scores length",
       [](gguf::Writer* w) { w->set("tokenizer.ggml.scores", Value::float32_array({1})); },
       ErrorCode::kInvalidFile},
      {"scores not numbers",
       [](gguf::Writer* w) {
         w->set("tokenizer.ggml.scores", Value::string_array({"x", "y", "z", "a", "b", "c", "d"}));
       },
       ErrorCode::kInvalidFile},
      {"types length",
       [](gguf::Writer* w) { w->set("tokenizer.ggml.token_type", Value::int32_array({1})); },
       ErrorCode::kInvalidFile},
      {"unknown model",
       [](gguf::Writer* w) { w->set("tokenizer.ggml.model", Value::string("rwkv")); },
       ErrorCode::kUnsupported},
      {"unknown pre",
       [](gguf::Writer* w) {
         w->set("tokenizer.ggml.model", Value::string("gpt2"));
         w->set("tokenizer.ggml.pre", Value::string("mystery"));
       },
       ErrorCode::kUnsupported},
      {"bad merge",
       [](gguf::Writer* w) {
         w->set("tokenizer.ggml.model", Value::string("gpt2"));
         w->set("tokenizer.ggml.merges", Value::string_array({"ab"}));
       },
       ErrorCode::kInvalidFile},
  };
  for (const Case& c : cases) {
    gguf::Writer writer = spm_writer();
    c.edit(&writer);
    auto loaded = load(writer);
    ASSERT_FALSE(loaded->tokenizer.ok()) << c.what;
    EXPECT_EQ(loaded->tokenizer.error().code, c.code) << c.what;
    EXPECT_FALSE(loaded->tokenizer.error().message.empty()) << c.what;
  }
}

TEST(GgufLoading, BpeWithoutPreKeyUsesDefaultSplitting) {
  // gpt-neox-style file: model gpt2, no tokenizer.ggml.pre.
  gguf::Writer writer;
  writer.set("tokenizer.ggml.model", Value::string("gpt2"));
  writer.set("tokenizer.ggml.tokens", Value::string_array({"a", "b", "ab", "\xC4\xA0"}));  // Ġ
  writer.set("tokenizer.ggml.merges", Value::string_array({"a b"}));
  auto loaded = load(writer);
  ASSERT_TRUE(loaded->tokenizer.ok()) << loaded->tokenizer.error().message;
  const Tokenizer& tokenizer = **loaded->tokenizer;
  EXPECT_EQ(tokenizer.pre_name(), "default");
  EXPECT_FALSE(tokenizer.add_bos());
  EXPECT_EQ(tokenizer.encode("ab ab", true, false), (std::vector<TokenId>{2, 3, 2}));
  EXPECT_EQ(tokenizer.decode(std::vector<TokenId>{2, 3, 2}), "ab ab");
}

}  // namespace
}  // namespace strata::tokenizer
