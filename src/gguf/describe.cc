// Text and JSON summaries of a GGUF file (describe.h).
#include "gguf/describe.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
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

// What the summary shows, from the metadata and the tensor table.
struct Summary {
  std::string architecture;
  uint64_t parameters = 0;
  std::optional<uint64_t> file_type, context, vocab;
  std::string main_type;  // the type holding most matrix elements, when file_type is unset
};

Summary summarize(const File& file) {
  Summary s;
  s.architecture = file.get_string("general.architecture").value_or("");
  s.file_type = file.get_uint("general.file_type");
  s.context = file.get_uint(s.architecture + ".context_length");
  if (const Array* tokens = file.get_array("tokenizer.ggml.tokens")) {
    s.vocab = tokens->values.size();
  } else {
    s.vocab = file.get_uint(s.architecture + ".vocab_size");
  }
  std::map<std::string, uint64_t> matrix_elements;
  for (const TensorInfo& t : file.tensors()) {
    s.parameters += t.n_elements;
    if (t.dims.size() >= 2) matrix_elements[std::string(dtype_name(t.type))] += t.n_elements;
  }
  uint64_t most = 0;
  for (const auto& [type, n] : matrix_elements) {
    if (n > most) {
      most = n;
      s.main_type = type;
    }
  }
  return s;
}

// 289344 -> "289.3K", 6738415616 -> "6.74B".
std::string human_count(uint64_t n) {
  char text[32];
  if (n >= 1'000'000'000) {
    std::snprintf(text, sizeof(text), "%.2fB", n / 1e9);
  } else if (n >= 1'000'000) {
    std::snprintf(text, sizeof(text), "%.1fM", n / 1e6);
  } else if (n >= 1'000) {
    std::snprintf(text, sizeof(text), "%.1fK", n / 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(n));
  }
  return text;
}

std::string file_type_text(const Summary& s) {
  if (!s.file_type) {
    return "not set" + (s.main_type.empty() ? "" : " (most weights " + s.main_type + ")");
  }
  const std::string name = file_type_name(*s.file_type);
  return (name.empty() ? "unknown" : name) +
         " (general.file_type = " + std::to_string(*s.file_type) + ")";
}

std::string summary_text(const Summary& s) {
  auto or_unknown = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("not set");
  };
  std::string architecture;
  append_escaped(&architecture, s.architecture, '\0');  // untrusted: kept on one line
  return "architecture: " + (architecture.empty() ? "not set" : architecture) + "\n" +
         "parameters:   " + human_count(s.parameters) + " (" + std::to_string(s.parameters) +
         ")\n" + "file type:    " + file_type_text(s) + "\n" +
         "context:      " + or_unknown(s.context) + "\n" + "vocab:        " + or_unknown(s.vocab) +
         "\n";
}

std::string pad_right(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string file_type_name(uint64_t id) {
  // llama.h's enum llama_ftype (4-6 and 33-35 are retired ids).
  static const std::map<uint64_t, const char*> kNames = {
      {0, "ALL_F32"},  {1, "F16"},      {2, "Q4_0"},       {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},      {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},    {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},    {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},    {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},    {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"},
  };
  const auto it = kNames.find(id);
  return it == kNames.end() ? "" : it->second;
}

std::string describe_text(const File& file, const DescribeOptions& options) {
  uint64_t tensor_bytes = 0;
  uint64_t tensor_elements = 0;
  for (const TensorInfo& t : file.tensors()) {
    tensor_bytes += t.n_bytes;
    tensor_elements += t.n_elements;
  }
  std::string out = summary_text(summarize(file));
  out += "GGUF v" + std::to_string(file.version()) + ", " + std::to_string(file.metadata().size()) +
         " metadata keys, " + std::to_string(file.tensors().size()) + " tensors, alignment " +
         std::to_string(file.alignment()) + ", ";
  // A file without tensors has no data section (vocab-only files end after their metadata).
  if (!file.tensors().empty()) out += "data at offset " + std::to_string(file.data_offset()) + ", ";
  out += "file size " + std::to_string(file.image().size()) + " bytes\n";
  out += "metadata:\n";
  for (const auto& [key, value] : file.metadata()) {
    out += "  ";
    append_escaped(&out, key, '\0');
    out += ": " + type_string(value) + " = " +
           format_value(value, options.max_array_items, options.max_string_bytes);
    const std::optional<uint64_t> id = value.as_uint();
    if (key == "general.file_type" && id && !file_type_name(*id).empty()) {
      out += " (" + file_type_name(*id) + ")";
    }
    out += "\n";
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
  const Summary s = summarize(file);
  auto or_null = [](const std::optional<uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  const std::string type_name = s.file_type ? file_type_name(*s.file_type) : "";
  nlohmann::json summary = {
      {"architecture", s.architecture.empty() ? nlohmann::json(nullptr)
                                              : nlohmann::json(valid_utf8(s.architecture))},
      {"parameters", s.parameters},
      {"file_type", or_null(s.file_type)},
      {"file_type_name", type_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(type_name)},
      {"context_length", or_null(s.context)},
      {"vocab_size", or_null(s.vocab)}};
  return {{"summary", std::move(summary)},    {"version", file.version()},
          {"alignment", file.alignment()},    {"data_offset", file.data_offset()},
          {"file_size", file.image().size()}, {"tensor_bytes", tensor_bytes},
          {"metadata", std::move(metadata)},  {"tensors", std::move(tensors)}};
}

}  // namespace strata::gguf
