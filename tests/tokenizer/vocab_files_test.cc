// Every GGUF vocabulary in ../shared/testdata/vocab against its .inp/.out test vectors (HF
// transformers' ids, no BOS, special tokens not parsed), one test case per vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer {
namespace {

using testing::kVocabDir;
using testing::load_tokenizer;
using testing::parse_vocab_inputs;
using testing::read_binary;

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

struct VocabCase {
  std::string name;
  std::string dir;  // where the .inp/.out live; the .gguf is looked for there too
};

void PrintTo(const VocabCase& c, std::ostream* os) { *os << c.name; }

class VocabFileTest : public ::testing::TestWithParam<VocabCase> {};

TEST_P(VocabFileTest, MatchesReferenceIds) {
  const VocabCase& param = GetParam();
  const std::string base = param.dir + "ggml-vocab-" + param.name + ".gguf";
  if (!std::filesystem::exists(base)) {
    GTEST_SKIP() << "missing " << base << " (place a GGUF of this model there to run these cases)";
  }
  auto tokenizer = load_tokenizer(base);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<std::string> inputs = parse_vocab_inputs(read_binary(base + ".inp"));
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

// decode(encode(text)) == text for every vocabulary that keeps text verbatim (all but BERT, which
// lower-cases), over the multilingual llama-spm test strings, with and without special tokens.
class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, DecodeInvertsEncode) {
  auto tokenizer = load_tokenizer(kVocabDir + "ggml-vocab-" + GetParam() + ".gguf");
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_GT(tokenizer->n_vocab(), 1000u);
  const std::vector<std::string> texts =
      parse_vocab_inputs(read_binary(kVocabDir + "ggml-vocab-llama-spm.gguf.inp"));
  ASSERT_EQ(texts.size(), 46u);
  for (const std::string& text : texts) {
    const std::vector<TokenId> ids = tokenizer->encode(text, true, false);
    if (tokenizer->add_bos() && tokenizer->bos() >= 0) {
      ASSERT_FALSE(ids.empty());
      EXPECT_EQ(ids.front(), tokenizer->bos());
    }
    EXPECT_EQ(tokenizer->decode(ids), text) << GetParam();
  }
}

// One Tokenizer shared by several threads gives every thread the single-threaded results.
TEST(Concurrency, ConcurrentEncodeMatchesSequential) {
  const std::vector<std::string> texts =
      parse_vocab_inputs(read_binary(kVocabDir + "ggml-vocab-llama-spm.gguf.inp"));
  for (const char* name : {"gpt-2", "llama-spm", "deepseek-llm"}) {
    auto tokenizer = load_tokenizer(kVocabDir + "ggml-vocab-" + name + ".gguf");
    ASSERT_NE(tokenizer, nullptr);
    std::vector<std::vector<TokenId>> expected;
    for (const std::string& text : texts) expected.push_back(tokenizer->encode(text, true, true));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 20; ++round) {
          for (size_t i = 0; i < texts.size(); ++i) {
            if (tokenizer->encode(texts[i], true, true) != expected[i]) ++mismatches[t];
            if (tokenizer->decode(expected[i]) != texts[i]) ++mismatches[t];
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << name << " thread " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocab, RoundTripTest,
                         ::testing::Values("baichuan", "gpt-neox", "llama-spm", "phi-3", "gpt-2",
                                           "deepseek-llm", "deepseek-coder", "falcon", "starcoder"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace strata::tokenizer
