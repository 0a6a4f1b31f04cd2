// Recursive-descent parser from lexer tokens to the statement tree, following jinja2's grammar
// and operator precedence (jinja2/parser.py).
#pragma once

#include <vector>

#include "base/result.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace strata::jinja {

// Deepest statement or expression nesting accepted, and the tallest expression tree (each link of
// a chain such as `a + b + c`, `x.a.b`, `x|f|g` or `f()()` is one level), so that parsing and
// evaluation stay within the stack. The chat templates in the test data reach 12 levels.
inline constexpr int kMaxParseDepth = 128;

// Parses a whole template. Errors name the line and what was expected or is unsupported.
Result<StmtList> parse_template(std::vector<Token> tokens);

}  // namespace strata::jinja
