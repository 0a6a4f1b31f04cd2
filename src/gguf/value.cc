// Metadata values: typed accessors, construction helpers, equality and text rendering.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "gguf/gguf.h"
#include "gguf/names.h"

namespace strata::gguf {
namespace {

bool is_float(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }

// Shortest decimal that reads back as the same float32 / float64.
std::string shortest(double v, bool as_float32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::to_chars_result r = as_float32 ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                                      : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

void append_value(std::string* out, const Value& v, size_t max_items, size_t max_string) {
  if (const std::string* s = std::get_if<std::string>(&v.data)) {
    out->push_back('"');
    if (max_string != 0 && s->size() > max_string) {
      append_escaped(out, std::string_view(*s).substr(0, max_string), '"');
      *out += "...\" (" + std::to_string(s->size()) + " bytes)";
    } else {
      append_escaped(out, *s, '"');
      out->push_back('"');
    }
    return;
  }
  if (const Array* a = std::get_if<Array>(&v.data)) {
    out->push_back('[');
    size_t shown = std::min(a->values.size(), max_items);
    for (size_t i = 0; i < shown; ++i) {
      if (i != 0) *out += ", ";
      append_value(out, a->values[i], max_items, max_string);
    }
    if (shown < a->values.size()) {
      *out += shown == 0 ? "..." : ", ...";
      *out += "] (" + std::to_string(a->values.size()) + " items)";
    } else {
      out->push_back(']');
    }
    return;
  }
  if (const bool* b = std::get_if<bool>(&v.data)) {
    *out += *b ? "true" : "false";
  } else if (const double* d = std::get_if<double>(&v.data)) {
    *out += shortest(*d, v.type == ValueType::kFloat32);
  } else if (const uint64_t* u = std::get_if<uint64_t>(&v.data)) {
    *out += std::to_string(*u);
  } else if (const int64_t* i = std::get_if<int64_t>(&v.data)) {
    *out += std::to_string(*i);
  }
}

}  // namespace

std::optional<int64_t> Value::as_int() const {
  if (!is_integer_type(type)) return std::nullopt;
  if (const uint64_t* u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const int64_t* i = std::get_if<int64_t>(&data)) return *i;
  return std::nullopt;
}

std::optional<uint64_t> Value::as_uint() const {
  if (!is_integer_type(type)) return std::nullopt;
  if (const uint64_t* u = std::get_if<uint64_t>(&data)) return *u;
  if (const int64_t* i = std::get_if<int64_t>(&data)) {
    if (*i < 0) return std::nullopt;
    return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (is_float(type)) {
    if (const double* d = std::get_if<double>(&data)) return *d;
    return std::nullopt;
  }
  if (!is_integer_type(type)) return std::nullopt;
  if (const uint64_t* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
  if (const int64_t* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  const bool* b = type == ValueType::kBool ? std::get_if<bool>(&data) : nullptr;
  return b ? std::optional<bool>(*b) : std::nullopt;
}

const std::string* Value::as_string() const {
  return type == ValueType::kString ? std::get_if<std::string>(&data) : nullptr;
}

const Array* Value::as_array() const {
  return type == ValueType::kArray ? std::get_if<Array>(&data) : nullptr;
}

Value Value::string_array(const std::vector<std::string>& values) {
  Array a{ValueType::kString, {}};
  a.values.reserve(values.size());
  for (const std::string& s : values) a.values.push_back(Value::string(s));
  return {ValueType::kArray, std::move(a)};
}

Value Value::float32_array(const std::vector<float>& values) {
  Array a{ValueType::kFloat32, {}};
  a.values.reserve(values.size());
  for (float f : values) a.values.push_back(Value::float32(f));
  return {ValueType::kArray, std::move(a)};
}

Value Value::int32_array(const std::vector<int32_t>& values) {
  Array a{ValueType::kInt32, {}};
  a.values.reserve(values.size());
  for (int32_t i : values) a.values.push_back(Value::int32(i));
  return {ValueType::kArray, std::move(a)};
}

bool operator==(const Array& a, const Array& b) {
  return a.element_type == b.element_type && a.values == b.values;
}

bool operator==(const Value& a, const Value& b) {
  if (a.type != b.type || a.data.index() != b.data.index()) return false;
  const double* x = std::get_if<double>(&a.data);
  const double* y = std::get_if<double>(&b.data);
  if (x != nullptr && y != nullptr && std::isnan(*x) && std::isnan(*y)) return true;
  return a.data == b.data;
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

std::string format_value(const Value& value, size_t max_array_items, size_t max_string_bytes) {
  std::string out;
  append_value(&out, value, max_array_items, max_string_bytes);
  return out;
}

void append_escaped(std::string* out, std::string_view text, char quote) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\\':
        *out += "\\\\";
        break;
      default:
        if (ch == quote) {
          out->push_back('\\');
          out->push_back(ch);
          break;
        }
        // UTF-8 bytes (>= 0x80) pass through so that token text stays readable; only control
        // characters are hex-escaped.
        if (c < 0x20 || c == 0x7f) {
          *out += "\\x";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(ch);
        }
    }
  }
}

std::string quoted_name(std::string_view name) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  append_escaped(&out, name.substr(0, kMaxShown), '\'');
  if (name.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

std::string shape_string(const std::vector<uint64_t>& dims, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < n && i < dims.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

}  // namespace strata::gguf
