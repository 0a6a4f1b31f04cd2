// Summaries of a GGUF file for `strata info`: header facts, metadata (long arrays and strings
// abbreviated) and the tensor table (name, type, shape, bytes), as text or as JSON.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/gguf.h"

namespace strata::gguf {

struct DescribeOptions {
  size_t max_array_items = 8;     // arrays longer than this show their first items and the count
  size_t max_string_bytes = 200;  // longer strings (e.g. chat templates) are cut; 0 = no limit
};

// Multi-line text: a header line, one line per metadata key ("key: type = value"), then one line
// per tensor with aligned columns, then the totals.
std::string describe_text(const File& file, const DescribeOptions& options = {});

// {"version", "alignment", "data_offset", "file_size", "tensor_bytes",
//  "metadata": [{"key", "type", "value"} (arrays: "element_type", "length", "value" = the first
//  items, "truncated")], "tensors": [{"name", "type", "shape", "offset", "bytes"}]}.
// Metadata is a list so that file order is kept. Strings that are not valid UTF-8 are replaced
// character-wise so the result can always be dumped.
nlohmann::json describe_json(const File& file, const DescribeOptions& options = {});

}  // namespace strata::gguf
