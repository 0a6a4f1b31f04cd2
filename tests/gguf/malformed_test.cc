// Hand-made GGUF images with exactly one thing wrong: each must be rejected with the right error
// code and a one-line message naming the key or tensor at fault.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf_bytes.h"

namespace strata::gguf {
namespace {

using testing::GgufBytes;
using testing::parse_bytes;

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;
constexpr uint32_t kTypeString = static_cast<uint32_t>(ValueType::kString);
constexpr uint32_t kTypeArray = static_cast<uint32_t>(ValueType::kArray);

// Expects parsing to fail with `code` and a one-line message containing every part of `parts`.
void expect_error(const std::vector<uint8_t>& bytes, ErrorCode code,
                  const std::vector<std::string>& parts) {
  Result<std::unique_ptr<File>> r = parse_bytes(bytes);
  ASSERT_FALSE(r.ok()) << "parsed a malformed file";
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  for (const std::string& p : parts) {
    EXPECT_NE(r.error().message.find(p), std::string::npos)
        << "message '" << r.error().message << "' lacks '" << p << "'";
  }
}

// One F32 tensor of 8 elements (32 bytes) after a single general.name key.
GgufBytes one_tensor_file(const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset,
                          size_t data_bytes) {
  GgufBytes b;
  b.header(1, 1).kv_string("general.name", "t").tensor_info("x", dims, type, offset);
  b.pad_to(32).fill(data_bytes, 0x3f);
  return b;
}

TEST(GgufMalformed, ValidBaselineParses) {
  GgufBytes b = one_tensor_file({8}, kF32, 0, 32);
  Result<std::unique_ptr<File>> r = parse_bytes(b.bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->get_string("general.name"), "t");
  ASSERT_EQ((*r)->tensors().size(), 1u);
  EXPECT_EQ((*r)->tensors()[0].n_bytes, 32u);
  EXPECT_EQ((*r)->tensors()[0].data, b.bytes.data() + b.bytes.size() - 32);
}

TEST(GgufMalformed, EmptyAndShortFiles) {
  expect_error({}, ErrorCode::kInvalidFile, {"too short"});
  expect_error({'G', 'G', 'U'}, ErrorCode::kInvalidFile, {"too short"});
  expect_error({'G', 'G', 'U', 'F', 3, 0}, ErrorCode::kInvalidFile, {"header", "end of file"});
}

TEST(GgufMalformed, BadMagic) {
  GgufBytes b;
  b.header(0, 0);
  b.bytes[0] = 'X';
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"not a GGUF file", "XGUF"});
}

TEST(GgufMalformed, Version1IsUnsupported) {
  GgufBytes b;
  b.header(0, 0, 1);
  expect_error(b.bytes, ErrorCode::kUnsupported, {"version 1"});
}

TEST(GgufMalformed, FutureVersionIsUnsupported) {
  GgufBytes b;
  b.header(0, 0, 4);
  expect_error(b.bytes, ErrorCode::kUnsupported, {"version 4"});
}

TEST(GgufMalformed, BigEndianIsUnsupported) {
  GgufBytes b;
  b.header(0, 0, 0x03000000);
  expect_error(b.bytes, ErrorCode::kUnsupported, {"big-endian"});
}

TEST(GgufMalformed, Version2Parses) {
  GgufBytes b;
  b.header(0, 1, 2).kv_u32("general.alignment", 16);
  Result<std::unique_ptr<File>> r = parse_bytes(b.bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->version(), 2u);
  EXPECT_EQ((*r)->alignment(), 16u);
}

TEST(GgufMalformed, KvCountBeyondFile) {
  GgufBytes b;
  b.header(0, 1'000'000'000'000).kv_u32("a", 1);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"metadata_kv_count 1000000000000"});
}

TEST(GgufMalformed, TensorCountBeyondFile) {
  GgufBytes b;
  b.header(~uint64_t{0}, 0).fill(100, 0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"tensor_count 18446744073709551615"});
}

TEST(GgufMalformed, KeyLengthBeyondFile) {
  GgufBytes b;
  b.header(0, 1).u64(1'000'000'000'000).fill(20, 'a');
  expect_error(b.bytes, ErrorCode::kInvalidFile,
               {"metadata key #0", "string length 1000000000000", "remaining 20 bytes"});
}

TEST(GgufMalformed, StringValueLengthBeyondFile) {
  GgufBytes b;
  b.header(0, 1).str("general.name").u32(kTypeString).u64(1'000'000'000'000).fill(200, 'x');
  expect_error(b.bytes, ErrorCode::kInvalidFile,
               {"metadata key 'general.name'", "string length 1000000000000",
                "exceeds remaining 200 bytes"});
}

TEST(GgufMalformed, ArrayCountBeyondFile) {
  // 10^12 uint8 elements declared in a 1 MB file.
  GgufBytes b;
  b.header(0, 1).str("tokenizer.ggml.token_type").u32(kTypeArray).u32(0).u64(1'000'000'000'000);
  b.fill(1 << 20, 1);
  expect_error(b.bytes, ErrorCode::kInvalidFile,
               {"metadata key 'tokenizer.ggml.token_type'", "array of 1000000000000"});
}

TEST(GgufMalformed, ArrayCountPastValueLimit) {
  // 2^24 one-byte elements are all present, but would cost ~800 MB parsed: over the limit.
  GgufBytes b;
  b.header(0, 1).str("huge").u32(kTypeArray).u32(0).u64(uint64_t{1} << 24);
  b.fill(size_t{1} << 24, 0);
  expect_error(b.bytes, ErrorCode::kOutOfRange, {"'huge'", "array of 16777216", "limit"});
}

TEST(GgufMalformed, NestedArrayCountPastValueLimitKeepsCode) {
  GgufBytes b;
  b.header(0, 1).str("huge").u32(kTypeArray).u32(kTypeArray).u64(1);
  b.u32(0).u64(uint64_t{1} << 24).fill(size_t{1} << 24, 0);
  expect_error(b.bytes, ErrorCode::kOutOfRange, {"'huge'[0]", "limit"});
}

TEST(GgufMalformed, TensorCountPastLimit) {
  GgufBytes b;
  b.header((uint64_t{1} << 20) + 1, 0).fill(((size_t{1} << 20) + 1) * 24, 0);
  expect_error(b.bytes, ErrorCode::kOutOfRange, {"tensor_count 1048577", "limit"});
}

TEST(GgufMalformed, StringArrayCountCheckedAgainstMinimumStringSize) {
  // 100 bytes cannot hold 20 strings: each needs at least its 8-byte length.
  GgufBytes b;
  b.header(0, 1).str("tokens").u32(kTypeArray).u32(kTypeString).u64(20).fill(100, 0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"'tokens'", "array of 20 string"});
}

TEST(GgufMalformed, ArrayElementErrorNamesIndex) {
  GgufBytes b;
  b.header(0, 1).str("tokens").u32(kTypeArray).u32(kTypeString).u64(3);
  b.str("a").str("b").u64(5000).fill(16, 'c');
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"'tokens'[2]", "string length 5000"});
}

TEST(GgufMalformed, UnknownValueType) {
  GgufBytes b;
  b.header(0, 1).str("general.weird").u32(13).u32(0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"'general.weird'", "unknown value type 13"});
}

TEST(GgufMalformed, UnknownArrayElementType) {
  GgufBytes b;
  b.header(0, 1).str("general.weird").u32(kTypeArray).u32(99).u64(0);
  expect_error(b.bytes, ErrorCode::kInvalidFile,
               {"'general.weird'", "unknown array element type 99"});
}

TEST(GgufMalformed, BoolOutOfRange) {
  GgufBytes b;
  b.header(0, 1).str("flag").u32(static_cast<uint32_t>(ValueType::kBool)).u8(2);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"'flag'", "bool value 2"});
}

TEST(GgufMalformed, NestedArraysParse) {
  // [[1, 2], [], [3]] as an array of arrays of int32.
  GgufBytes b;
  b.header(0, 1).str("nested").u32(kTypeArray).u32(kTypeArray).u64(3);
  b.u32(5).u64(2).u32(1).u32(2);
  b.u32(5).u64(0);
  b.u32(5).u64(1).u32(static_cast<uint32_t>(-3));
  Result<std::unique_ptr<File>> r = parse_bytes(b.bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Array* outer = (*r)->get_array("nested");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->element_type, ValueType::kArray);
  ASSERT_EQ(outer->values.size(), 3u);
  const Array* first = outer->values[0].as_array();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->element_type, ValueType::kInt32);
  ASSERT_EQ(first->values.size(), 2u);
  EXPECT_EQ(first->values[1].as_int(), 2);
  EXPECT_TRUE(outer->values[1].as_array()->values.empty());
  EXPECT_EQ(outer->values[2].as_array()->values[0].as_int(), -3);
}

TEST(GgufMalformed, ArraysNestedTooDeep) {
  // 100 levels of single-element arrays: rejected without recursing 100 deep.
  GgufBytes b;
  b.header(0, 1).str("deep").u32(kTypeArray);
  for (int i = 0; i < 100; ++i) b.u32(kTypeArray).u64(1);
  b.u32(0).u64(0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"'deep'", "nested more than 16"});
}

TEST(GgufMalformed, DuplicateKey) {
  GgufBytes b;
  b.header(0, 2).kv_u32("llama.block_count", 5).kv_u32("llama.block_count", 6);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"duplicate", "'llama.block_count'"});
}

TEST(GgufMalformed, KeyWithControlCharactersStaysOneLine) {
  GgufBytes b;
  b.header(0, 2).kv_u32("a\nb", 5).kv_u32("a\nb", 6);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"duplicate", "'a\\nb'"});
}

TEST(GgufMalformed, AlignmentNotPowerOfTwo) {
  GgufBytes b;
  b.header(0, 1).kv_u32("general.alignment", 48);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"general.alignment", "power of two", "48"});
}

TEST(GgufMalformed, AlignmentZero) {
  GgufBytes b;
  b.header(0, 1).kv_u32("general.alignment", 0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"general.alignment", "power of two", "0"});
}

TEST(GgufMalformed, AlignmentNotAnInteger) {
  GgufBytes b;
  b.header(0, 1).kv_string("general.alignment", "32");
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"general.alignment", "unsigned integer"});
}

TEST(GgufMalformed, AlignmentIsApplied) {
  // With alignment 64 the data section starts at the next multiple of 64.
  GgufBytes b;
  b.header(1, 1).kv_u32("general.alignment", 64).tensor_info("x", {8}, kF32, 0);
  size_t end_of_infos = b.bytes.size();
  b.pad_to(64).fill(32, 0);
  Result<std::unique_ptr<File>> r = parse_bytes(b.bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->data_offset(), (end_of_infos + 63) / 64 * 64);
}

TEST(GgufMalformed, TooManyDimensions) {
  expect_error(one_tensor_file({1, 1, 1, 1, 8}, kF32, 0, 32).bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "n_dimensions is 5"});
}

TEST(GgufMalformed, ZeroDimensions) {
  expect_error(one_tensor_file({}, kF32, 0, 32).bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "n_dimensions is 0"});
}

TEST(GgufMalformed, ZeroDim) {
  expect_error(one_tensor_file({8, 0}, kF32, 0, 32).bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "dimension 1 is 0"});
}

TEST(GgufMalformed, ElementCountOverflow) {
  expect_error(one_tensor_file({1ull << 32, 1ull << 32}, kF32, 0, 32).bytes,
               ErrorCode::kInvalidFile, {"tensor 'x'", "overflows"});
}

TEST(GgufMalformed, ByteSizeOverflow) {
  // 2^62 f32 elements fit int64 but their 2^64 bytes do not.
  expect_error(one_tensor_file({1ull << 31, 1ull << 31}, kF32, 0, 32).bytes,
               ErrorCode::kInvalidFile, {"tensor 'x'", "overflows"});
}

TEST(GgufMalformed, UnknownTensorType) {
  expect_error(one_tensor_file({8}, 77, 0, 32).bytes, ErrorCode::kUnsupported,
               {"tensor 'x'", "unknown tensor type 77"});
}

TEST(GgufMalformed, RowNotMultipleOfBlockSize) {
  // q4_0 packs 32 weights per 18-byte block; a row of 48 weights is not whole blocks.
  expect_error(one_tensor_file({48, 2}, kQ4_0, 0, 64).bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "row length 48", "block size 32"});
}

TEST(GgufMalformed, QuantizedTensorSize) {
  // 64 x 2 q4_0 weights = 4 blocks of 18 bytes.
  GgufBytes b = one_tensor_file({64, 2}, kQ4_0, 0, 72);
  Result<std::unique_ptr<File>> r = parse_bytes(b.bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->tensors()[0].n_bytes, 72u);
  EXPECT_EQ((*r)->tensors()[0].type, DType::kQ4_0);
  b.bytes.pop_back();
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"tensor 'x'", "past end of file", "size 72"});
}

TEST(GgufMalformed, MisalignedOffset) {
  expect_error(one_tensor_file({8}, kF32, 4, 64).bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "offset 4", "alignment 32"});
}

TEST(GgufMalformed, DataPastEndOfFile) {
  GgufBytes b = one_tensor_file({8}, kF32, 0, 31);
  expect_error(b.bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "data extends past end of file", "offset 0", "size 32",
                "file size " + std::to_string(b.bytes.size())});
}

TEST(GgufMalformed, HugeOffsetDoesNotWrap) {
  expect_error(one_tensor_file({8}, kF32, ~uint64_t{0} - 31, 64).bytes, ErrorCode::kInvalidFile,
               {"tensor 'x'", "past end of file"});
}

TEST(GgufMalformed, DataSectionPastEndOfFile) {
  GgufBytes b;
  b.header(1, 0).tensor_info("x", {8}, kF32, 0);
  b.bytes.push_back(0);
  // The infos end unaligned and nothing follows them, so the data section cannot start.
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"data section", "past the end"});
}

TEST(GgufMalformed, DuplicateTensorName) {
  GgufBytes b;
  b.header(2, 0).tensor_info("blk.0.attn_q.weight", {8}, kF32, 0);
  b.tensor_info("blk.0.attn_q.weight", {8}, kF32, 32).pad_to(32).fill(64, 0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"duplicate", "'blk.0.attn_q.weight'"});
}

TEST(GgufMalformed, OverlappingTensors) {
  GgufBytes b;
  b.header(2, 0).tensor_info("a", {16}, kF32, 0).tensor_info("b", {8}, kF32, 32);
  b.pad_to(32).fill(64, 0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"tensor 'b'", "overlaps tensor 'a'"});
}

TEST(GgufMalformed, SharedOffsetOverlaps) {
  GgufBytes b;
  b.header(2, 0).tensor_info("a", {8}, kF32, 0).tensor_info("b", {8}, kF32, 0);
  b.pad_to(32).fill(32, 0);
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"overlaps"});
}

TEST(GgufMalformed, TensorInfoTruncated) {
  GgufBytes b;
  b.header(1, 0).str("x").u32(4).u64(8).u64(8);  // dims 3 and 4 missing
  expect_error(b.bytes, ErrorCode::kInvalidFile, {"tensor 'x'", "unexpected end of file"});
}

TEST(GgufMalformed, VocabOnlyFileMayEndAfterMetadata) {
  GgufBytes b;
  b.header(0, 1).kv_string("general.architecture", "llama");
  Result<std::unique_ptr<File>> r = parse_bytes(b.bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE((*r)->tensors().empty());
}

TEST(GgufMalformed, ParseNullImage) {
  Result<std::unique_ptr<File>> r = File::parse(nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::gguf
