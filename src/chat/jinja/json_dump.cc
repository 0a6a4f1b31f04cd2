#include "chat/jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

// json.dumps string encoding: ESCAPE_DCT for ", \, \b \f \n \r \t and \u00XX for other controls;
// with ensure_ascii also \uXXXX (UTF-16 surrogate pairs above U+FFFF) for non-ASCII.
void append_json_string(std::string_view text, bool ensure_ascii, std::string* out) {
  *out += '"';
  char buf[16];
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        *out += "\\\"";
        continue;
      case '\\':
        *out += "\\\\";
        continue;
      case '\b':
        *out += "\\b";
        continue;
      case '\f':
        *out += "\\f";
        continue;
      case '\n':
        *out += "\\n";
        continue;
      case '\r':
        *out += "\\r";
        continue;
      case '\t':
        *out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
      if (i + len > text.size()) len = 1;
      uint32_t cp = len == 1 ? c : (c & (0x7F >> len));
      for (size_t k = 1; k < len; ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                      0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
      i += len - 1;
    } else {
      *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options) : options_(options) {}

  Status write(const Value& v, int level, std::string* out) {
    if (out->size() > options_.max_bytes)
      return make_error(
          ErrorCode::kOutOfRange,
          "tojson: output size limit (" + std::to_string(options_.max_bytes) + " bytes) exceeded");
    switch (v.kind()) {
      case Value::Kind::kNone:
        *out += "null";
        return ok_status();
      case Value::Kind::kBool:
        *out += v.as_bool() ? "true" : "false";
        return ok_status();
      case Value::Kind::kInt:
        *out += std::to_string(v.as_int());
        return ok_status();
      case Value::Kind::kFloat:
        *out += float_text(v.as_double());
        return ok_status();
      case Value::Kind::kString:
        append_json_string(v.as_string(), options_.ensure_ascii, out);
        return ok_status();
      case Value::Kind::kList: {
        const auto& items = v.as_list();
        if (items.empty()) {
          *out += "[]";
          return ok_status();
        }
        *out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) *out += options_.item_separator;
          newline(level + 1, out);
          STRATA_RETURN_IF_ERROR(write(items[i], level + 1, out));
        }
        newline(level, out);
        *out += ']';
        return ok_status();
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& item : v.as_dict().items) entries.push_back(&item);
        if (entries.empty()) {
          *out += "{}";
          return ok_status();
        }
        if (options_.sort_keys) {
          bool failed = false;
          std::stable_sort(entries.begin(), entries.end(), [&](auto* a, auto* b) {
            auto c = py_compare(a->first, b->first);
            if (!c.ok()) failed = true;
            return c.ok() && *c < 0;
          });
          if (failed)
            return make_error(ErrorCode::kInvalidArgument,
                              "tojson: dict keys of mixed types cannot be sorted");
        }
        *out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) *out += options_.item_separator;
          newline(level + 1, out);
          STRATA_RETURN_IF_ERROR(write_key(entries[i]->first, out));
          *out += options_.key_separator;
          STRATA_RETURN_IF_ERROR(write(entries[i]->second, level + 1, out));
        }
        newline(level, out);
        *out += '}';
        return ok_status();
      }
      default:
        return make_error(
            ErrorCode::kInvalidArgument,
            "Object of type " + std::string(v.type_name()) + " is not JSON serializable");
    }
  }

 private:
  // Python's float repr, with json's spellings for non-finite values.
  static std::string float_text(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return py_float_repr(d);
  }

  // json.dumps coerces str/int/float/bool/None keys to strings and rejects the rest.
  Status write_key(const Value& key, std::string* out) {
    switch (key.kind()) {
      case Value::Kind::kString:
        append_json_string(key.as_string(), options_.ensure_ascii, out);
        return ok_status();
      case Value::Kind::kNone:
        *out += "\"null\"";
        return ok_status();
      case Value::Kind::kBool:
        *out += key.as_bool() ? "\"true\"" : "\"false\"";
        return ok_status();
      case Value::Kind::kInt:
        *out += '"';
        *out += std::to_string(key.as_int());
        *out += '"';
        return ok_status();
      case Value::Kind::kFloat:
        *out += '"';
        *out += float_text(key.as_double());
        *out += '"';
        return ok_status();
      default:
        return make_error(
            ErrorCode::kInvalidArgument,
            "keys must be str, int, float, bool or None, not " + std::string(key.type_name()));
    }
  }

  void newline(int level, std::string* out) const {
    if (!options_.indent) return;
    *out += '\n';
    for (int i = 0; i < level; ++i) *out += *options_.indent;
  }

  const JsonDumpOptions& options_;
};

}  // namespace

Result<std::string> json_dumps(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  JsonWriter writer(options);
  STRATA_RETURN_IF_ERROR(writer.write(value, 0, &out));
  return out;
}

}  // namespace strata::jinja
