// Jinja lexer: splits template source into data and tag tokens the way jinja2's Lexer does with
// trim_blocks=True, lstrip_blocks=True and keep_trailing_newline=False.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace strata::jinja {

enum class TokenType : uint8_t {
  kData,           // literal template text (also the body of {% raw %})
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the decoded value
  kInteger,
  kFloat,
  kOperator,  // text holds the operator: "+", "//", "(", ...
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0.0;
};

// Tokenizes the whole template; the last token is kEof. Errors name the line.
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace strata::jinja
