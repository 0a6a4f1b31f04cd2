// The nesting depth of JSON text, measured before it is parsed. Parsers and the code that walks a
// parsed document (nlohmann's dump(), schema converters, template values) recurse once per level,
// so a 40 KB body of "[[[[..." would overflow a thread's stack; input that crosses a trust
// boundary (a request body, a schema file, a template's messages) is measured with this first and
// refused past kMaxJsonDepth. Public, because the server and the CLI measure what they read.
#pragma once

#include <cstddef>
#include <string_view>

namespace strata {

// Deeper than any schema, tool definition or message a client sends in practice (JSON Schema
// Store's deepest schemas nest under 40 levels), shallow enough that every recursive walk of a
// document stays far inside a thread's stack.
inline constexpr size_t kMaxJsonDepth = 512;

// The deepest nesting of arrays and objects in `text` (0 for a scalar), ignoring brackets inside
// strings. Linear, allocation-free, and defined for any bytes: malformed text yields a depth the
// parser will refuse anyway.
inline size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace strata
