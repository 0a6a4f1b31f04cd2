// Writer: byte-exact round trips of the shared files, an independent byte-level oracle
// (GgufBytes) for a small file, every value type, and argument validation.
#include "gguf/writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "gguf_bytes.h"

namespace strata::gguf {
namespace {

using testing::GgufBytes;
using testing::parse_bytes;

// Metadata and tensors of `file`, in file order, with tensor bytes viewed in place.
Writer writer_from(const File& file) {
  Writer w;
  w.copy_metadata(file);
  for (const TensorInfo& t : file.tensors()) {
    Status s = w.add_tensor_view(t);
    EXPECT_TRUE(s.ok()) << s.error().message;
  }
  return w;
}

void expect_same_bytes(const std::vector<uint8_t>& got, const MappedFile& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want.data()[i]) << "first difference at byte " << i;
  }
}

TEST(GgufWriter, StoriesRoundTripIsByteIdentical) {
  Result<std::unique_ptr<File>> f = File::open("../shared/models/stories260K.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  Writer w = writer_from(**f);
  Result<std::vector<uint8_t>> bytes = w.serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  expect_same_bytes(*bytes, (*f)->image());
}

class VocabRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabRoundTrip, IsByteIdentical) {
  Result<std::unique_ptr<File>> f =
      File::open(std::string("../shared/testdata/vocab/ggml-vocab-") + GetParam() + ".gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  Result<std::vector<uint8_t>> bytes = writer_from(**f).serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  expect_same_bytes(*bytes, (*f)->image());
}

INSTANTIATE_TEST_SUITE_P(Files, VocabRoundTrip,
                         ::testing::Values("llama-spm", "gpt-2", "bert-bge", "phi-3"));

TEST(GgufWriter, MatchesHandAssembledBytes) {
  // general.alignment 64, a uint32 and a string, then a 2x2 f32 tensor and a 3-element f32
  // tensor: the second tensor's offset is the first's 16 bytes padded to 64.
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7};
  std::vector<uint8_t> a_bytes(16), b_bytes(12);
  std::memcpy(a_bytes.data(), a.data(), 16);
  std::memcpy(b_bytes.data(), b.data(), 12);

  GgufBytes want;
  want.header(2, 3).kv_u32("general.alignment", 64).kv_u32("llama.block_count", 5);
  want.kv_string("general.name", "tiny");
  want.tensor_info("a", {2, 2}, 0, 0).tensor_info("b", {3}, 0, 64).pad_to(64);
  for (float x : a) want.f32(x);
  want.pad_to(64);
  for (float x : b) want.f32(x);
  want.pad_to(64);

  Writer w;
  w.set_alignment(64);
  w.set("llama.block_count", Value::uint32(5));
  w.set("general.name", Value::string("tiny"));
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {2, 2}, a_bytes).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::kF32, {3}, b_bytes).ok());
  Result<std::vector<uint8_t>> got = w.serialize();
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, want.bytes);

  Result<std::unique_ptr<File>> f = parse_bytes(*got);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset() % 64, 0u);
  const TensorInfo* tb = (*f)->find_tensor("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->offset, 64u);
  EXPECT_EQ(std::memcmp(tb->data, b.data(), 12), 0);
}

TEST(GgufWriter, EveryValueTypeRoundTrips) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::pair<std::string, Value>> values = {
      {"u8", Value::uint8(255)},
      {"i8", Value::int8(-128)},
      {"u16", Value::uint16(65535)},
      {"i16", Value::int16(-32768)},
      {"u32", Value::uint32(4294967295u)},
      {"i32", Value::int32(std::numeric_limits<int32_t>::min())},
      {"u64", Value::uint64(std::numeric_limits<uint64_t>::max())},
      {"i64", Value::int64(std::numeric_limits<int64_t>::min())},
      {"f32", Value::float32(1e-5f)},
      {"f32_neg_zero", Value::float32(-0.0f)},
      {"f32_nan", Value::float32(std::numeric_limits<float>::quiet_NaN())},
      {"f64_nan", Value::float64(nan)},
      {"f64", Value::float64(0.1)},
      {"bool_t", Value::boolean(true)},
      {"bool_f", Value::boolean(false)},
      {"str", Value::string(std::string("with\0nul and \xe2\x96\x81 utf-8", 22))},
      {"empty_str", Value::string("")},
      {"strs", Value::string_array({"<unk>", "<s>", ""})},
      {"floats", Value::float32_array({0.5f, -1.25f})},
      {"ints", Value::int32_array({-1, 0, 1})},
      {"empty_u64s", Value::array(ValueType::kUint64, {})},
      {"nested", Value::array(ValueType::kArray,
                              {Value::int32_array({1, 2}), Value::array(ValueType::kInt32, {}),
                               Value::array(ValueType::kArray, {Value::string_array({"x"})})})},
  };
  Writer w;
  for (const auto& [k, v] : values) w.set(k, v);
  Result<std::vector<uint8_t>> bytes = w.serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  Result<std::unique_ptr<File>> f = parse_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ((*f)->metadata().size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ((*f)->metadata()[i].first, values[i].first);
    EXPECT_TRUE((*f)->metadata()[i].second == values[i].second) << values[i].first;
  }
  EXPECT_TRUE(std::signbit(*(*f)->get_float("f32_neg_zero")));
  EXPECT_EQ((*f)->get_uint("u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ((*f)->get_string("str")->size(), 22u);
}

TEST(GgufWriter, SetReplacesInPlaceAndRemove) {
  Writer w;
  w.set("a", Value::uint32(1));
  w.set("b", Value::uint32(2));
  w.set("a", Value::string("one"));
  ASSERT_EQ(w.metadata().size(), 2u);
  EXPECT_EQ(w.metadata()[0].first, "a");
  EXPECT_EQ(*w.find("a")->as_string(), "one");
  EXPECT_TRUE(w.remove("a"));
  EXPECT_FALSE(w.remove("a"));
  EXPECT_EQ(w.find("a"), nullptr);
  EXPECT_EQ(w.metadata().size(), 1u);
}

TEST(GgufWriter, InconsistentValuesAreRejectedByKey) {
  struct Case {
    Value value;
    const char* expect;
  };
  std::vector<Case> cases = {
      {Value{ValueType::kUint8, uint64_t{300}}, "does not fit uint8"},
      {Value{ValueType::kInt16, int64_t{-40000}}, "does not fit int16"},
      {Value{ValueType::kUint32, int64_t{-1}}, "does not fit uint32"},
      {Value{ValueType::kString, uint64_t{1}}, "does not hold a string"},
      {Value{ValueType::kFloat32, 1e300}, "out of float32 range"},
      {Value::array(ValueType::kInt32, {Value::string("x")}), "element of type string"},
      {Value{static_cast<ValueType>(42), uint64_t{1}}, "unknown value type 42"},
  };
  for (const Case& c : cases) {
    Writer w;
    w.set("bad.key", c.value);
    Result<std::vector<uint8_t>> r = w.serialize();
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find("'bad.key'"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
  }
}

TEST(GgufWriter, BadAlignmentIsRejected) {
  Writer w;
  w.set_alignment(48);
  Result<std::vector<uint8_t>> r = w.serialize();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("general.alignment"), std::string::npos);
}

TEST(GgufWriter, AddTensorValidatesShapeAndSize) {
  Writer w;
  std::vector<uint8_t> data(72);
  EXPECT_TRUE(w.add_tensor_view("q", DType::kQ4_0, {64, 2}, data.data(), 72).ok());
  struct Case {
    std::string name;
    DType type;
    std::vector<uint64_t> dims;
    size_t size;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"q", DType::kF32, {18}, 72, "added twice"},
      {"", DType::kF32, {18}, 72, "name is empty"},
      {"x", DType::kF32, {}, 72, "0 dimensions"},
      {"x", DType::kF32, {1, 1, 1, 1, 18}, 72, "5 dimensions"},
      {"x", DType::kF32, {18, 0}, 72, "zero dimension"},
      {"x", DType::kQ4_0, {48}, 72, "block size 32"},
      {"x", DType::kF32, {17}, 72, "expected 68"},
      {"x", DType::kF32, {1ull << 40, 1ull << 40}, 72, "too many elements"},
  };
  for (const Case& c : cases) {
    Status s = w.add_tensor_view(c.name, c.type, c.dims, data.data(), c.size);
    ASSERT_FALSE(s.ok()) << c.expect;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find(c.expect), std::string::npos) << s.error().message;
  }
  EXPECT_EQ(w.tensor_count(), 1u);
}

class GgufWriterFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("strata-gguf-writer-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(GgufWriterFiles, WriteThenOpen) {
  Result<std::unique_ptr<File>> src = File::open("../shared/models/stories260K.gguf");
  ASSERT_TRUE(src.ok()) << src.error().message;
  Writer w = writer_from(**src);
  w.set("general.name", Value::string("stories copy"));
  std::string path = (dir_ / "copy.gguf").string();
  Status s = w.write(path);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  Result<std::unique_ptr<File>> f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->get_string("general.name"), "stories copy");
  ASSERT_EQ((*f)->tensors().size(), (*src)->tensors().size());
  for (size_t i = 0; i < (*f)->tensors().size(); ++i) {
    const TensorInfo& a = (*f)->tensors()[i];
    const TensorInfo& b = (*src)->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.dims, b.dims);
    ASSERT_EQ(a.n_bytes, b.n_bytes);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.n_bytes), 0) << a.name;
  }
}

TEST_F(GgufWriterFiles, OverwritesExistingFileAtomically) {
  std::string path = (dir_ / "out.gguf").string();
  { std::ofstream(path) << "old contents"; }
  Writer w;
  w.set("general.architecture", Value::string("llama"));
  ASSERT_TRUE(w.write(path).ok());
  Result<std::unique_ptr<File>> f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->get_string("general.architecture"), "llama");
}

TEST_F(GgufWriterFiles, FailedWriteLeavesNothing) {
  std::string path = (dir_ / "no-such-dir" / "out.gguf").string();
  Writer w;
  w.set("a", Value::uint32(1));
  Status s = w.write(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kIo);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  // An invalid value fails before anything is created.
  std::string path2 = (dir_ / "bad.gguf").string();
  w.set("b", Value{ValueType::kUint8, uint64_t{1000}});
  ASSERT_FALSE(w.write(path2).ok());
  EXPECT_FALSE(std::filesystem::exists(path2));
  EXPECT_FALSE(std::filesystem::exists(path2 + ".tmp"));
}

}  // namespace
}  // namespace strata::gguf
