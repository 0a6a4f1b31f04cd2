// Python str/dict/list methods callable from templates, printf-style formatting, and the
// argument binding shared by all builtins.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "chat/jinja/builtins.h"
#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

class BoundMethod : public Callable {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  Result<Value> call(Interpreter& interp, CallArgs args, int) const override {
    return run_method(interp, self_, name_, args);
  }
  std::string describe() const override {
    return "<built-in method " + name_ + " of " + std::string(self_.type_name()) + " object>";
  }

 private:
  Value self_;
  std::string name_;
};

constexpr std::string_view kStringMethods[] = {
    "strip",    "lstrip",  "rstrip",  "split",   "rsplit",       "splitlines",  "startswith",
    "endswith", "upper",   "lower",   "title",   "capitalize",   "replace",     "format",
    "join",     "find",    "rfind",   "count",   "index",        "isdigit",     "isalpha",
    "isalnum",  "isspace", "isupper", "islower", "removeprefix", "removesuffix"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values", "copy"};
constexpr std::string_view kListMethods[] = {"index", "count", "copy"};
// Methods that mutate: jinja2's ImmutableSandboxedEnvironment refuses them.
constexpr std::string_view kDictMutators[] = {"update", "pop", "popitem", "setdefault", "clear"};
constexpr std::string_view kListMutators[] = {"append", "pop",  "insert",  "extend",
                                              "remove", "sort", "reverse", "clear"};

template <size_t N>
bool contains(const std::string_view (&names)[N], std::string_view name) {
  for (auto n : names)
    if (n == name) return true;
  return false;
}

Value unsafe(const Value& self, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                          std::string(self.type_name()) + "' object is unsafe.");
}

Result<std::optional<std::string>> optional_string(const std::optional<Value>& v,
                                                   std::string_view what) {
  if (!v || v->is_none()) return std::optional<std::string>();
  if (!v->is_string())
    return type_error(std::string(what) + " must be str or None, not " +
                      std::string(v->type_name()));
  return std::optional<std::string>(v->as_string());
}

Value string_list(std::vector<std::string> parts) {
  ValueList items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

// startswith/endswith accept a str or a tuple of str.
Result<bool> affix_match(const std::string& s, const Value& affix, bool prefix) {
  ValueList options = affix.is_list() ? affix.as_list() : ValueList{affix};
  for (const auto& o : options) {
    if (!o.is_string())
      return type_error("startswith/endswith first arg must be str or a tuple of str");
    const std::string& a = o.as_string();
    if (a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) == 0
                                        : s.compare(s.size() - a.size(), a.size(), a) == 0))
      return true;
  }
  return false;
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}

// str.format with positional {} / {0} and keyword {name} fields (no format specs).
Result<std::string> str_format(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos) return type_error("Single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos)
      return type_error("unsupported format spec in str.format: {" + field + "}");
    const Value* v = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t index = field.empty() ? auto_index++ : static_cast<size_t>(std::atoi(field.c_str()));
      if (index >= args.positional.size())
        return type_error("Replacement index " + std::to_string(index) + " out of range");
      v = &args.positional[index];
    } else {
      v = args.kwarg(field);
      if (!v) return type_error("KeyError: '" + field + "'");
    }
    out += py_str(*v);
    i = close;
  }
  return out;
}

Result<Value> string_method(Interpreter& interp, const std::string& s, std::string_view name,
                            const CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"chars"}));
    STRATA_ASSIGN_OR_RETURN(auto chars, optional_string(a[0], name));
    std::optional<std::string_view> view;
    if (chars) view = *chars;
    return Value::string(py_strip(s, view, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"sep", "maxsplit"}));
    STRATA_ASSIGN_OR_RETURN(auto sep, optional_string(a[0], name));
    if (sep && sep->empty()) return type_error("empty separator");
    STRATA_ASSIGN_OR_RETURN(int64_t maxsplit, arg_int(a[1], -1, "maxsplit"));
    std::optional<std::string_view> view;
    if (sep) view = *sep;
    if (sep &&
        s.size() / sep->size() >= static_cast<size_t>(interp.options().max_loop_iterations)) {
      size_t count = 1;
      for (size_t p = s.find(*sep); p != std::string::npos; p = s.find(*sep, p + sep->size()))
        ++count;
      STRATA_RETURN_IF_ERROR(interp.check_list_size(count));
    } else if (!sep && s.size() / 2 >= static_cast<size_t>(interp.options().max_loop_iterations)) {
      size_t words = 0;  // ASCII-whitespace word count, enough for a size guard
      for (size_t i = 0; i < s.size(); ++i)
        words += !py_is_space_ascii(s[i]) && (i == 0 || py_is_space_ascii(s[i - 1]));
      STRATA_RETURN_IF_ERROR(interp.check_list_size(words));
    }
    auto parts = name == "split" ? py_split(s, view, static_cast<long>(maxsplit))
                                 : py_rsplit(s, view, static_cast<long>(maxsplit));
    STRATA_RETURN_IF_ERROR(interp.charge_steps(static_cast<int64_t>(parts.size())));
    return string_list(std::move(parts));
  }
  if (name == "splitlines") {
    STRATA_RETURN_IF_ERROR(
        interp.check_list_size(static_cast<size_t>(std::count(s.begin(), s.end(), '\n'))));
    return string_list(py_splitlines(s));
  }
  if (name == "startswith" || name == "endswith") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"affix", "start", "end"}, 1));
    // Optional start/end are code point indices, clamped like a slice.
    auto offsets = utf8_offsets(s);
    int64_t n = static_cast<int64_t>(offsets.size()) - 1;
    const auto clamp = [n](int64_t i) {
      return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n);
    };
    STRATA_ASSIGN_OR_RETURN(int64_t start, arg_int(a[1], 0, "start"));
    STRATA_ASSIGN_OR_RETURN(int64_t end, arg_int(a[2], n, "end"));
    start = clamp(start);
    end = clamp(end);
    if (start > end) return Value::boolean(false);
    std::string part =
        s.substr(offsets[static_cast<size_t>(start)],
                 offsets[static_cast<size_t>(end)] - offsets[static_cast<size_t>(start)]);
    STRATA_ASSIGN_OR_RETURN(bool r, affix_match(part, *a[0], name == "startswith"));
    return Value::boolean(r);
  }
  if (name == "upper") return Value::string(py_upper(s));
  if (name == "lower") return Value::string(py_lower(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "replace") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"old", "new", "count"}, 2));
    if (!a[0]->is_string() || !a[1]->is_string())
      return type_error("replace() arguments must be str");
    STRATA_ASSIGN_OR_RETURN(int64_t count, arg_int(a[2], -1, "count"));
    size_t growth =
        a[0]->as_string().empty() ? s.size() + 1 : s.size() / a[0]->as_string().size() + 1;
    if (a[1]->as_string().size() > a[0]->as_string().size())
      STRATA_RETURN_IF_ERROR(interp.check_size(
          s.size() + growth * (a[1]->as_string().size() - a[0]->as_string().size())));
    return Value::string(
        py_replace(s, a[0]->as_string(), a[1]->as_string(), static_cast<long>(count)));
  }
  if (name == "format") {
    STRATA_ASSIGN_OR_RETURN(std::string out, str_format(s, args));
    STRATA_RETURN_IF_ERROR(interp.check_size(out.size()));
    return Value::string(std::move(out));
  }
  if (name == "join") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"iterable"}, 1));
    STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(*a[0]));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        return type_error("sequence item " + std::to_string(i) + ": expected str instance, " +
                          std::string(items[i].type_name()) + " found");
      if (i) out += s;
      out += items[i].as_string();
      STRATA_RETURN_IF_ERROR(interp.check_size(out.size()));
    }
    return Value::string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"sub"}, 1));
    if (!a[0]->is_string()) return type_error("must be str, not " + std::string(a[0]->type_name()));
    const std::string& sub = a[0]->as_string();
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
    if (p == std::string::npos) {
      if (name == "index") return type_error("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
  }
  if (name == "isdigit")
    return Value::boolean(all_chars(s, [](char c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha")
    return Value::boolean(
        all_chars(s, [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }));
  if (name == "isalnum")
    return Value::boolean(
        all_chars(s, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }));
  if (name == "isspace")
    return Value::boolean(!s.empty() && py_strip(s, std::nullopt, true, true).empty());
  if (name == "isupper" || name == "islower") {
    bool cased = false, ok = true;
    for (char c : s) {
      bool up = c >= 'A' && c <= 'Z', low = c >= 'a' && c <= 'z';
      cased = cased || up || low;
      if ((name == "isupper" && low) || (name == "islower" && up)) ok = false;
    }
    return Value::boolean(cased && ok);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"affix"}, 1));
    if (!a[0]->is_string()) return type_error(std::string(name) + "() argument must be str");
    const std::string& x = a[0]->as_string();
    STRATA_ASSIGN_OR_RETURN(bool match, affix_match(s, *a[0], name == "removeprefix"));
    if (!match) return Value::string(s);
    return Value::string(name == "removeprefix" ? s.substr(x.size())
                                                : s.substr(0, s.size() - x.size()));
  }
  return type_error("unsupported str method '" + std::string(name) + "'");
}

Result<Value> dict_method(const Value& self, std::string_view name, const CallArgs& args) {
  const Dict& d = self.as_dict();
  if (name == "get") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"key", "default"}, 1));
    if (const Value* v = d.find(*a[0])) return *v;
    return a[1] ? *a[1] : Value::none();
  }
  if (name == "copy") return self;
  ValueList out;
  out.reserve(d.items.size());
  for (const auto& [k, v] : d.items) {
    if (name == "items") out.push_back(Value::list({k, v}, true));
    if (name == "keys") out.push_back(k);
    if (name == "values") out.push_back(v);
  }
  return Value::list(std::move(out));
}

Result<Value> list_method(const Value& self, std::string_view name, const CallArgs& args) {
  if (name == "copy") return Value::list(self.as_list());
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"value"}, 1));
  int64_t count = 0;
  const auto& items = self.as_list();
  for (size_t i = 0; i < items.size(); ++i) {
    if (!py_equal(items[i], *a[0])) continue;
    if (name == "index") return Value::integer(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") return type_error(py_repr(*a[0]) + " is not in list");
  return Value::integer(count);
}

}  // namespace

Result<BoundArgs> bind_args(const CallArgs& args, std::string_view what,
                            std::initializer_list<std::string_view> names, size_t required) {
  BoundArgs bound(names.size());
  if (args.positional.size() > names.size())
    return type_error(std::string(what) + "() takes at most " + std::to_string(names.size()) +
                      " arguments (" + std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (const auto& [k, v] : args.keyword) {
    size_t i = 0;
    for (auto n : names) {
      if (n == k) break;
      ++i;
    }
    if (i == names.size())
      return type_error(std::string(what) + "() got an unexpected keyword argument '" + k + "'");
    if (bound[i])
      return type_error(std::string(what) + "() got multiple values for argument '" + k + "'");
    bound[i] = v;
  }
  for (size_t i = 0; i < required; ++i)
    if (!bound[i])
      return type_error(std::string(what) + "() missing required argument '" +
                        std::string(names.begin()[i]) + "'");
  return bound;
}

Result<int64_t> arg_int(const std::optional<Value>& v, int64_t fallback, std::string_view what) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_integral())
    return type_error(std::string(what) + " must be an integer, not " +
                      std::string(v->type_name()));
  return v->as_int();
}

Result<std::string> arg_string(const std::optional<Value>& v, std::string fallback,
                               std::string_view what) {
  if (!v) return fallback;
  if (!v->is_string())
    return type_error(std::string(what) + " must be a string, not " + std::string(v->type_name()));
  return v->as_string();
}

bool arg_bool(const std::optional<Value>& v, bool fallback) { return v ? v->truthy() : fallback; }

std::optional<Value> lookup_method(const Value& self, std::string_view name) {
  if (!name.empty() && name[0] == '_') return unsafe(self, name);
  const auto bound = [&] {
    return Value::callable(std::make_shared<BoundMethod>(self, std::string(name)));
  };
  if (self.is_string() && contains(kStringMethods, name)) return bound();
  if (self.is_dict()) {
    if (contains(kDictMethods, name)) return bound();
    if (contains(kDictMutators, name)) return unsafe(self, name);
  }
  if (self.is_list()) {
    if (contains(kListMethods, name)) return bound();
    if (contains(kListMutators, name)) return unsafe(self, name);
  }
  return std::nullopt;
}

Result<Value> run_method(Interpreter& interp, const Value& self, std::string_view name,
                         const CallArgs& args) {
  if (self.is_string()) return string_method(interp, self.as_string(), name, args);
  if (self.is_dict()) return dict_method(self, name, args);
  if (self.is_list()) return list_method(self, name, args);
  return type_error("'" + std::string(self.type_name()) + "' object has no attribute '" +
                    std::string(name) + "'");
}

// printf-style `format % args`: %[(key)][flags][width][.precision]conversion, with Python's
// conversions s r a d i u f F e E g G x X o c and %%; numbers are formatted by C's snprintf,
// which CPython's formatting matches for these conversions.
Result<std::string> percent_format(const std::string& format, const Value& args) {
  ValueList values = args.is_tuple() ? args.as_list() : ValueList{args};
  std::string out;
  size_t next = 0;
  bool used_mapping = false;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) return type_error("incomplete format");
    if (format[i] == '%') {
      out += '%';
      continue;
    }
    const Value* v = nullptr;
    if (format[i] == '(') {
      size_t close = format.find(')', i);
      if (close == std::string::npos) return type_error("incomplete format key");
      if (!args.is_dict()) return type_error("format requires a mapping");
      v = args.as_dict().find(std::string_view(format).substr(i + 1, close - i - 1));
      if (!v) return type_error("KeyError: '" + format.substr(i + 1, close - i - 1) + "'");
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < format.size() && std::string_view("-+ 0#").find(format[i]) != std::string_view::npos)
      flags += format[i++];
    int width = 0, precision = -1;
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])) &&
           width < 10000)
      width = width * 10 + (format[i++] - '0');
    if (i < format.size() && format[i] == '.') {
      precision = 0;
      ++i;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])) &&
             precision < 10000)
        precision = precision * 10 + (format[i++] - '0');
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
    if (i >= format.size()) return type_error("incomplete format");
    if (width >= 10000 || precision >= 10000)
      return type_error("format width or precision too large");
    char c = format[i];
    if (!v) {
      if (next >= values.size()) return type_error("not enough arguments for format string");
      v = &values[next++];
    }
    std::string piece;
    if (c == 's' || c == 'r' || c == 'a') {
      piece = c == 's' ? py_str(*v) : py_repr(*v);
      if (precision >= 0) {
        auto offsets = utf8_offsets(piece);
        if (static_cast<size_t>(precision) + 1 < offsets.size())
          piece.resize(offsets[static_cast<size_t>(precision)]);
      }
      size_t len = utf8_length(piece);
      if (static_cast<size_t>(width) > len) {
        std::string pad(static_cast<size_t>(width) - len, ' ');
        piece = flags.find('-') != std::string::npos ? piece + pad : pad + piece;
      }
    } else if (std::string_view("diufFeEgGxXoc").find(c) != std::string_view::npos) {
      if (!v->is_number() && !(c == 'c' && v->is_string()))
        return type_error(std::string("%") + c + " format: a real number is required, not " +
                          std::string(v->type_name()));
      if (c == 'c') {
        if (v->is_string()) {
          if (utf8_length(v->as_string()) != 1) return type_error("%c requires int or char");
          piece = v->as_string();
        } else {
          int64_t cp = v->as_int();
          if (cp < 0 || cp > 0x10FFFF) return type_error("%c arg not in range(0x110000)");
          append_utf8(static_cast<char32_t>(cp), &piece);
        }
      } else {
        std::string spec = "%" + flags + (width ? std::to_string(width) : "") +
                           (precision >= 0 ? "." + std::to_string(precision) : "");
        std::vector<char> buf(static_cast<size_t>(width + std::max(precision, 0)) + 400);
        if (std::string_view("fFeEgG").find(c) != std::string_view::npos) {
          spec += c;
          std::snprintf(buf.data(), buf.size(), spec.c_str(), v->as_double());
        } else {
          double d = v->as_double();
          if (v->is_float() && !(std::fabs(d) < 9.2e18))
            return type_error("cannot convert float to integer");
          long long n = v->is_float() ? static_cast<long long>(d) : v->as_int();
          spec += "ll";
          spec += (c == 'i' || c == 'u') ? 'd' : c;
          std::snprintf(buf.data(), buf.size(), spec.c_str(), n);
        }
        piece = buf.data();
      }
    } else {
      return type_error(std::string("unsupported format character '") + c + "'");
    }
    out += piece;
  }
  if (!used_mapping && next < values.size())
    return type_error("not all arguments converted during string formatting");
  return out;
}

}  // namespace strata::jinja
