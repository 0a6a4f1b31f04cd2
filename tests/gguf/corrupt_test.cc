// Corrupted copies of stories260K.gguf: every truncation and thousands of seeded byte and bit
// mutations of the header, metadata and tensor infos. Each must give an error or a File whose
// views stay inside the image; run under AddressSanitizer to catch any read past the buffer.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gguf/describe.h"
#include "gguf/gguf.h"

namespace strata::gguf {
namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Parses `bytes` (whose heap block ends exactly at the image's end, so ASan sees any over-read)
// and, if it parsed, reads everything the File exposes. Returns whether it parsed.
bool parse_and_touch(const std::vector<uint8_t>& bytes) {
  Result<std::unique_ptr<File>> r =
      File::parse(MappedFile::from_memory(bytes.data(), bytes.size()));
  if (!r.ok()) {
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
    return false;
  }
  const File& f = **r;
  const uint8_t* begin = bytes.data();
  const uint8_t* end = begin + bytes.size();
  uint64_t checksum = 0;
  for (const TensorInfo& t : f.tensors()) {
    EXPECT_GE(t.data, begin);
    EXPECT_LE(t.n_bytes, static_cast<uint64_t>(end - t.data));
    if (t.data < begin || t.n_bytes > static_cast<uint64_t>(end - t.data)) continue;
    for (uint64_t i = 0; i < t.n_bytes; i += 61) checksum += t.data[i];
    checksum += t.data[t.n_bytes - 1];
  }
  for (const auto& [key, value] : f.metadata()) checksum += format_value(value).size();
  checksum += describe_text(f).size() + describe_json(f).dump().size();
  EXPECT_GT(checksum, 0u);
  return true;
}

class StoriesCorruptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    original_ = read_all("../shared/models/stories260K.gguf");
    ASSERT_EQ(original_.size(), 1185376u);
    Result<std::unique_ptr<File>> r =
        File::parse(MappedFile::from_memory(original_.data(), original_.size()));
    ASSERT_TRUE(r.ok()) << r.error().message;
    data_offset_ = (*r)->data_offset();
    ASSERT_GT(data_offset_, 14000u);
  }
  std::vector<uint8_t> original_;
  size_t data_offset_ = 0;
};

TEST_F(StoriesCorruptTest, EveryTruncationIsAnError) {
  // Every prefix through the end of the tensor infos and padding, then a stride through the data
  // (and the last few bytes): the last tensor ends at the end of the file, so no proper prefix is
  // a valid file.
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= data_offset_; ++n) lengths.push_back(n);
  for (size_t n = data_offset_ + 1; n < original_.size(); n += 4093) lengths.push_back(n);
  for (size_t n = original_.size() - 8; n < original_.size(); ++n) lengths.push_back(n);
  size_t errors = 0;
  for (size_t n : lengths) {
    std::vector<uint8_t> prefix(original_.begin(), original_.begin() + static_cast<ptrdiff_t>(n));
    bool parsed = parse_and_touch(prefix);
    EXPECT_FALSE(parsed) << "prefix of " << n << " bytes parsed";
    errors += parsed ? 0 : 1;
  }
  EXPECT_EQ(errors, lengths.size());
  EXPECT_TRUE(parse_and_touch(original_));
}

TEST_F(StoriesCorruptTest, SeededMutationsOfHeaderRegion) {
  std::mt19937_64 rng(20260202);
  std::uniform_int_distribution<size_t> position(0, data_offset_ - 1);
  std::vector<uint8_t> bytes = original_;
  size_t parsed = 0, rejected = 0;
  constexpr int kMutations = 4000;
  for (int i = 0; i < kMutations; ++i) {
    size_t pos = position(rng);
    // Thirds: flip one bit, set one random byte, or overwrite 8 bytes with a random or extreme
    // value (the width of every length, count, dim and offset field).
    std::vector<std::pair<size_t, uint8_t>> saved;
    int kind = static_cast<int>(rng() % 3);
    if (kind == 0) {
      saved.push_back({pos, bytes[pos]});
      bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    } else if (kind == 1) {
      saved.push_back({pos, bytes[pos]});
      bytes[pos] = static_cast<uint8_t>(rng());
    } else {
      uint64_t v = rng() % 2 == 0 ? rng() : (rng() % 2 == 0 ? ~uint64_t{0} : rng() % 64);
      for (size_t k = 0; k < 8 && pos + k < data_offset_; ++k) {
        saved.push_back({pos + k, bytes[pos + k]});
        bytes[pos + k] = static_cast<uint8_t>(v >> (8 * k));
      }
    }
    if (parse_and_touch(bytes)) {
      ++parsed;
    } else {
      ++rejected;
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) bytes[it->first] = it->second;
  }
  // Flips inside float scores or token text leave a valid file; flips in lengths and counts do
  // not. Both must occur, or the mutations are not reaching the parser's checks.
  EXPECT_GT(parsed, 100u);
  EXPECT_GT(rejected, 100u);
  EXPECT_EQ(parsed + rejected, static_cast<size_t>(kMutations));
  ASSERT_EQ(bytes, original_);
}

TEST(GgufCorrupt, SeededMutationsOfVocabFile) {
  std::vector<uint8_t> bytes = read_all("../shared/testdata/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_FALSE(bytes.empty());
  // The first 4 KiB hold the header, the small keys and the start of the token list.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<size_t> position(0, 4095);
  for (int i = 0; i < 150; ++i) {
    size_t pos = position(rng);
    uint8_t old = bytes[pos];
    bytes[pos] = static_cast<uint8_t>(rng());
    parse_and_touch(bytes);
    bytes[pos] = old;
  }
}

}  // namespace
}  // namespace strata::gguf
