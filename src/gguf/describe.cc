// Text and JSON summaries of a GGUF file (describe.h).
#include "gguf/describe.h"

#include <algorithm>
#include <string_view>

#include "gguf/names.h"

namespace strata::gguf {
namespace {

std::string type_string(const Value& v) {
  if (const Array* a = v.as_array()) {
    return "array[" + std::string(value_type_name(a->element_type)) + "]";
  }
  return std::string(value_type_name(v.type));
}

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing past U+10FFFF), or 0 if the bytes there are not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return n;
}

// nlohmann::json refuses to dump invalid UTF-8, and file strings are untrusted: each byte that
// does not start a valid sequence becomes U+FFFD.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

nlohmann::json scalar_json(const Value& v, const DescribeOptions& options) {
  if (const std::string* s = v.as_string()) {
    if (options.max_string_bytes != 0 && s->size() > options.max_string_bytes) {
      return valid_utf8(std::string_view(*s).substr(0, options.max_string_bytes)) + "...";
    }
    return valid_utf8(*s);
  }
  if (std::optional<bool> b = v.as_bool()) return *b;
  if (const uint64_t* u = std::get_if<uint64_t>(&v.data)) return *u;
  if (const int64_t* i = std::get_if<int64_t>(&v.data)) return *i;
  if (const double* d = std::get_if<double>(&v.data)) return *d;
  return nullptr;
}

nlohmann::json value_json(const Value& v, const DescribeOptions& options) {
  const Array* a = v.as_array();
  if (a == nullptr) return scalar_json(v, options);
  nlohmann::json items = nlohmann::json::array();
  size_t shown = std::min(a->values.size(), options.max_array_items);
  for (size_t i = 0; i < shown; ++i) items.push_back(value_json(a->values[i], options));
  return items;
}

std::string pad_right(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string describe_text(const File& file, const DescribeOptions& options) {
  uint64_t tensor_bytes = 0;
  uint64_t tensor_elements = 0;
  for (const TensorInfo& t : file.tensors()) {
    tensor_bytes += t.n_bytes;
    tensor_elements += t.n_elements;
  }
  std::string out = "GGUF v" + std::to_string(file.version()) + ", " +
                    std::to_string(file.metadata().size()) + " metadata keys, " +
                    std::to_string(file.tensors().size()) + " tensors, alignment " +
                    std::to_string(file.alignment()) + ", ";
  // A file without tensors has no data section (vocab-only files end after their metadata).
  if (!file.tensors().empty()) out += "data at offset " + std::to_string(file.data_offset()) + ", ";
  out += "file size " + std::to_string(file.image().size()) + " bytes\n";
  out += "metadata:\n";
  for (const auto& [key, value] : file.metadata()) {
    out += "  ";
    append_escaped(&out, key, '\0');
    out += ": " + type_string(value) + " = " +
           format_value(value, options.max_array_items, options.max_string_bytes) + "\n";
  }
  if (file.tensors().empty()) return out;

  // Column widths from the widest cell of each column.
  std::vector<std::string> names, shapes;
  size_t name_w = 4, type_w = 4, shape_w = 5;
  for (const TensorInfo& t : file.tensors()) {
    std::string name;
    append_escaped(&name, t.name, '\0');
    names.push_back(std::move(name));
    shapes.push_back(shape_string(t.dims));
    name_w = std::max(name_w, names.back().size());
    type_w = std::max(type_w, dtype_name(t.type).size());
    shape_w = std::max(shape_w, shapes.back().size());
  }
  out += "tensors:\n  " + pad_right("name", name_w) + "  " + pad_right("type", type_w) + "  " +
         pad_right("shape", shape_w) + "  bytes\n";
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const TensorInfo& t = file.tensors()[i];
    out += "  " + pad_right(names[i], name_w) + "  " +
           pad_right(std::string(dtype_name(t.type)), type_w) + "  " +
           pad_right(shapes[i], shape_w) + "  " + std::to_string(t.n_bytes) + "\n";
  }
  out += "total: " + std::to_string(file.tensors().size()) + " tensors, " +
         std::to_string(tensor_elements) + " elements, " + std::to_string(tensor_bytes) +
         " bytes\n";
  return out;
}

nlohmann::json describe_json(const File& file, const DescribeOptions& options) {
  nlohmann::json metadata = nlohmann::json::array();
  for (const auto& [key, value] : file.metadata()) {
    nlohmann::json entry;
    entry["key"] = valid_utf8(key);
    entry["type"] = std::string(value_type_name(value.type));
    if (const Array* a = value.as_array()) {
      entry["element_type"] = std::string(value_type_name(a->element_type));
      entry["length"] = a->values.size();
      entry["truncated"] = a->values.size() > options.max_array_items;
    }
    entry["value"] = value_json(value, options);
    metadata.push_back(std::move(entry));
  }
  nlohmann::json tensors = nlohmann::json::array();
  uint64_t tensor_bytes = 0;
  for (const TensorInfo& t : file.tensors()) {
    tensors.push_back({{"name", valid_utf8(t.name)},
                       {"type", std::string(dtype_name(t.type))},
                       {"shape", t.dims},
                       {"offset", t.offset},
                       {"bytes", t.n_bytes}});
    tensor_bytes += t.n_bytes;
  }
  return {{"version", file.version()},         {"alignment", file.alignment()},
          {"data_offset", file.data_offset()}, {"file_size", file.image().size()},
          {"tensor_bytes", tensor_bytes},      {"metadata", std::move(metadata)},
          {"tensors", std::move(tensors)}};
}

}  // namespace strata::gguf
