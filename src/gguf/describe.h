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

// llama.cpp's name of a general.file_type value (LLAMA_FTYPE): 15 -> "Q4_K_M", 1 -> "F16";
// "" for an id it has no name for.
std::string file_type_name(uint64_t id);

// Multi-line text: a summary (architecture, parameters, file type, context, vocabulary), a
// header line, one line per metadata key ("key: type = value"), then one line
// per tensor with aligned columns, then the totals.
std::string describe_text(const File& file, const DescribeOptions& options = {});

// {"summary": {"architecture", "parameters", "file_type", "file_type_name", "context_length",
//  "vocab_size"} (null where the file does not say), "version", "alignment", "data_offset",
//  "file_size", "tensor_bytes",
//  "metadata": [{"key", "type", "value"} (arrays: "element_type", "length", "value" = the first
//  items, "truncated")], "tensors": [{"name", "type", "shape", "offset", "bytes"}]}.
// Metadata is a list so that file order is kept. Strings that are not valid UTF-8 are replaced
// character-wise so the result can always be dumped.
nlohmann::json describe_json(const File& file, const DescribeOptions& options = {});

}  // namespace strata::gguf
