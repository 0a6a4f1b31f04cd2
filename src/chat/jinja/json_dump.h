// Python json.dumps for template values, as transformers' `tojson` filter calls it.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "chat/jinja/value.h"

namespace strata::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps indent: nullopt = one line; N spaces or a string
  std::string item_separator = ", ";  // json.dumps default; "," when indent is set
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;     // transformers passes False: non-ASCII stays UTF-8
  size_t max_bytes = 64u << 20;  // fail instead of building a larger string
};

// Serializes like json.dumps; fails (TypeError in Python) for undefined, callables, namespaces.
Result<std::string> json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace strata::jinja
