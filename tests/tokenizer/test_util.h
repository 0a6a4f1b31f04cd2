// Shared helpers for the tokenizer tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace strata::tokenizer::testing {

inline const std::string kVocabDir = "../shared/testdata/vocab/";

inline std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Loads a GGUF's tokenizer, failing the test (and returning null) with the error message.
inline std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.ok()) << path << ": " << (file.ok() ? "" : file.error().message);
  if (!file.ok()) return nullptr;
  auto tokenizer = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tokenizer.ok()) << path << ": " << (tokenizer.ok() ? "" : tokenizer.error().message);
  if (!tokenizer.ok()) return nullptr;
  return std::move(*tokenizer);
}

// .inp: cases each followed by "\n__ggml_vocab_test__\n"; a trailing case without it counts too.
inline std::vector<std::string> parse_vocab_inputs(const std::string& data) {
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

// SentencePiece spec with <unk>, <s>, </s>, the 256 byte tokens, then `pieces` with `scores`.
inline VocabSpec spm_spec(const std::vector<std::string>& pieces,
                          const std::vector<float>& scores) {
  VocabSpec spec;
  spec.model = "llama";
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  spec.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    spec.tokens.push_back(name);
    spec.types.push_back(TokenType::kByte);
    spec.scores.push_back(0);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    spec.tokens.push_back(pieces[i]);
    spec.types.push_back(TokenType::kNormal);
    spec.scores.push_back(scores[i]);
  }
  spec.unk = 0;
  spec.bos = 1;
  spec.eos = 2;
  return spec;
}

// Id of the i-th piece added by spm_spec.
inline TokenId spm_piece(size_t i) { return static_cast<TokenId>(3 + 256 + i); }

}  // namespace strata::tokenizer::testing
