// Writer::add_tensor_generator: generated tensors produce the same file as the same bytes added
// up front, through both serialize() and write(), and are validated like any other tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace strata::gguf {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + salt);
  return v;
}

// A writer with metadata and three F32 tensors; the middle ones either owned or generated.
Writer make_writer(bool generated, int* calls) {
  Writer w;
  w.set("general.architecture", Value::string("test"));
  EXPECT_TRUE(w.add_tensor("a", DType::kF32, {3}, pattern(12, 1)).ok());
  const std::vector<uint8_t> b = pattern(4 * 8 * 5, 2);
  const std::vector<uint8_t> c = pattern(34 * 2, 3);  // Q8_0: 2 blocks of 34 bytes
  if (generated) {
    EXPECT_TRUE(w.add_tensor_generator("b", DType::kF32, {8, 5}, [b, calls](uint8_t* dst) {
                   ++*calls;
                   std::copy(b.begin(), b.end(), dst);
                 }).ok());
    EXPECT_TRUE(w.add_tensor_generator("c", DType::kQ8_0, {32, 2}, [c, calls](uint8_t* dst) {
                   ++*calls;
                   std::copy(c.begin(), c.end(), dst);
                 }).ok());
  } else {
    EXPECT_TRUE(w.add_tensor("b", DType::kF32, {8, 5}, b).ok());
    EXPECT_TRUE(w.add_tensor("c", DType::kQ8_0, {32, 2}, c).ok());
  }
  return w;
}

TEST(GgufWriterGenerator, SerializeMatchesOwnedBytesAndReadsBack) {
  int calls = 0;
  Result<std::vector<uint8_t>> want = make_writer(false, &calls).serialize();
  Result<std::vector<uint8_t>> got = make_writer(true, &calls).serialize();
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(*got, *want);

  Result<std::unique_ptr<File>> f = File::parse(MappedFile::from_memory(got->data(), got->size()));
  ASSERT_TRUE(f.ok()) << f.error().message;
  const TensorInfo* b = (*f)->find_tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(b->data, b->data + b->n_bytes), pattern(160, 2));
}

TEST(GgufWriterGenerator, WriteStreamsTheSameFile) {
  int calls = 0;
  Result<std::vector<uint8_t>> want = make_writer(false, &calls).serialize();
  ASSERT_TRUE(want.ok());
  const std::string path =
      ::testing::TempDir() + "/writer_generator_" + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(make_writer(true, &calls).write(path).ok());
  EXPECT_EQ(calls, 2);
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  EXPECT_EQ(got, *want);
}

TEST(GgufWriterGenerator, RejectsBadShapesAndMissingGenerator) {
  Writer w;
  auto noop = [](uint8_t*) {};
  EXPECT_EQ(w.add_tensor_generator("x", DType::kQ4_0, {31, 2}, noop).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor_generator("x", DType::kF32, {0}, noop).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor_generator("x", DType::kF32, {4}, nullptr).error().code,
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(w.add_tensor_generator("x", DType::kF32, {4}, noop).ok());
  EXPECT_EQ(w.add_tensor_generator("x", DType::kF32, {4}, noop).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.tensor_count(), 1u);
}

}  // namespace
}  // namespace strata::gguf
