// Every GGUF vocabulary in ../shared/testdata/vocab against its .inp/.out test vectors (HF
// transformers' ids, no BOS, special tokens not parsed), one test case per vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

const std::string kVocabDir = "../shared/testdata/vocab/";

std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// .inp: cases each followed by "\n__ggml_vocab_test__\n"; a trailing case without it counts too.
std::vector<std::string> parse_inputs(const std::string& data) {
  static const std::string kSeparator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t next = data.find(kSeparator, pos);
    if (next == std::string::npos) {
      cases.push_back(data.substr(pos));
      break;
    }
    cases.push_back(data.substr(pos, next - pos));
    pos = next + kSeparator.size();
  }
  return cases;
}

// .out: one line per case, ids separated by spaces.
std::vector<std::vector<TokenId>> parse_outputs(const std::string& data) {
  std::vector<std::vector<TokenId>> cases;
  std::istringstream lines(data);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<TokenId> row;
    long long id = 0;
    while (ids >> id) row.push_back(static_cast<TokenId>(id));
    cases.push_back(row);
  }
  return cases;
}

std::unique_ptr<Tokenizer> load(const std::string& path) {
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.ok()) << path << ": " << (file.ok() ? "" : file.error().message);
  if (!file.ok()) return nullptr;
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.ok()) << path << ": " << (tokenizer.ok() ? "" : tokenizer.error().message);
  if (!tokenizer.ok()) return nullptr;
  return std::move(*tokenizer);
}

struct VocabCase {
  std::string name;
  std::string dir;  // where the .inp/.out live; the .gguf is looked for there too
};

class VocabFileTest : public ::testing::TestWithParam<VocabCase> {};

TEST_P(VocabFileTest, MatchesReferenceIds) {
  const VocabCase& param = GetParam();
  const std::string base = param.dir + "ggml-vocab-" + param.name + ".gguf";
  if (!std::filesystem::exists(base)) {
    GTEST_SKIP() << "missing " << base << " (place a GGUF of this model there to run these cases)";
  }
  auto tokenizer = load(base);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<std::string> inputs = parse_inputs(read_binary(base + ".inp"));
  const std::vector<std::vector<TokenId>> outputs = parse_outputs(read_binary(base + ".out"));
  ASSERT_FALSE(inputs.empty());
  ASSERT_EQ(inputs.size(), outputs.size());
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> ids = tokenizer->encode(inputs[i], false, false);
    EXPECT_EQ(ids, outputs[i]) << param.name << " case " << i << ": '" << inputs[i] << "'";
    if (ids != outputs[i]) ++failures;
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Vocab, VocabFileTest,
    ::testing::Values(VocabCase{"llama-spm", kVocabDir}, VocabCase{"phi-3", kVocabDir},
                      VocabCase{"gpt-2", kVocabDir}, VocabCase{"deepseek-llm", kVocabDir},
                      VocabCase{"deepseek-coder", kVocabDir}, VocabCase{"falcon", kVocabDir},
                      VocabCase{"starcoder", kVocabDir}, VocabCase{"bert-bge", kVocabDir},
                      VocabCase{"command-r", kVocabDir + "inp-out-only/"},
                      VocabCase{"gemma-4", kVocabDir + "inp-out-only/"},
                      VocabCase{"llama-bpe", kVocabDir + "inp-out-only/"},
                      VocabCase{"qwen2", kVocabDir + "inp-out-only/"},
                      VocabCase{"qwen35", kVocabDir + "inp-out-only/"}),
    [](const ::testing::TestParamInfo<VocabCase>& info) {
      std::string name = info.param.name;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace strata::tokenizer
