// Rendering of names and shapes read from a file inside one-line error messages and listings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::gguf {

// Appends `text` to `out` with `quote`, backslashes and control characters escaped (\n, \t,
// \xNN), so untrusted names can never break a message across lines.
void append_escaped(std::string* out, std::string_view text, char quote);

// 'name' in single quotes, escaped and cut to its first 80 bytes, for error messages.
std::string quoted_name(std::string_view name);

// "[64, 512]" from the first `n` dims.
std::string shape_string(const std::vector<uint64_t>& dims, size_t n);
inline std::string shape_string(const std::vector<uint64_t>& dims) {
  return shape_string(dims, dims.size());
}

}  // namespace strata::gguf
