// jinja2's builtin filters (jinja2/filters.py) plus transformers' `tojson`.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "chat/jinja/builtins.h"
#include "chat/jinja/json_dump.h"
#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// jinja2 make_attrgetter: "a.b.0" walks getitem one part at a time (digits index lists).
Result<Value> attribute_of(Interpreter& interp, Value item, const Value& attribute) {
  if (!attribute.is_string()) return interp.get_item(item, attribute);
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits =
        !part.empty() && part.size() < 18 && std::all_of(part.begin(), part.end(), ::isdigit);
    Value key = digits ? Value::integer(std::atoll(part.c_str())) : Value::string(part);
    STRATA_ASSIGN_OR_RETURN(item, interp.get_item(item, key));
    if (dot == std::string::npos) return item;
    start = dot + 1;
  }
}

// jinja2 ignore_case: strings compare lower-cased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.as_string()));
  return v;
}

Status sort_values(ValueList* keys, std::vector<size_t>* order, bool reverse) {
  Status status = ok_status();
  std::stable_sort(order->begin(), order->end(), [&](size_t a, size_t b) {
    auto c = py_compare((*keys)[a], (*keys)[b]);
    if (!c.ok()) {
      if (status.ok()) status = c.error();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  return status;
}

Result<Value> filter_length(const Value& input) {
  switch (input.kind()) {
    case Value::Kind::kUndefined:
      return Value::integer(0);
    case Value::Kind::kString:
      return Value::integer(static_cast<int64_t>(utf8_length(input.as_string())));
    case Value::Kind::kList:
      return Value::integer(static_cast<int64_t>(input.as_list().size()));
    case Value::Kind::kDict:
      return Value::integer(static_cast<int64_t>(input.as_dict().items.size()));
    default:
      return type_error("object of type '" + std::string(input.type_name()) + "' has no len()");
  }
}

Result<Value> filter_tojson(Interpreter& interp, const Value& input, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(
      auto a, bind_args(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}));
  JsonDumpOptions options;
  options.max_bytes = interp.options().max_output_bytes;
  options.ensure_ascii = arg_bool(a[0], false);
  if (a[1] && !a[1]->is_none()) {
    if (a[1]->is_integral()) {
      int64_t n = a[1]->as_int();
      if (n > 4096)
        return make_error(ErrorCode::kOutOfRange,
                          "tojson indent " + std::to_string(n) + " is too large");
      options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
    } else if (a[1]->is_string()) {
      options.indent = a[1]->as_string().substr(0, 4096);
    } else {
      return type_error("tojson indent must be an int or a str");
    }
    options.item_separator = ",";
  }
  if (a[2] && !a[2]->is_none()) {
    if (!a[2]->is_list() || a[2]->as_list().size() != 2 || !a[2]->as_list()[0].is_string() ||
        !a[2]->as_list()[1].is_string())
      return type_error("tojson separators must be a pair of strings");
    options.item_separator = a[2]->as_list()[0].as_string();
    options.key_separator = a[2]->as_list()[1].as_string();
  }
  options.sort_keys = arg_bool(a[3], false);
  STRATA_ASSIGN_OR_RETURN(std::string text, json_dumps(input, options));
  return Value::string(std::move(text));
}

// jinja2 do_indent: every line but the first (unless first=True) gets the prefix; blank lines
// only with blank=True.
Result<Value> filter_indent(Interpreter& interp, const Value& input, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, "indent", {"width", "first", "blank"}));
  std::string prefix;
  if (a[0] && a[0]->is_string()) {
    prefix = a[0]->as_string();
  } else {
    STRATA_ASSIGN_OR_RETURN(int64_t width, arg_int(a[0], 4, "indent width"));
    if (width > 4096) return make_error(ErrorCode::kOutOfRange, "indent width is too large");
    prefix = std::string(static_cast<size_t>(std::max<int64_t>(0, width)), ' ');
  }
  std::string text = py_str(input) + "\n";
  auto lines = py_splitlines(text);
  STRATA_RETURN_IF_ERROR(interp.check_size(text.size() + lines.size() * prefix.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (arg_bool(a[2], false) || !lines[i].empty()) out += prefix;
    }
    out += lines[i];
  }
  if (arg_bool(a[1], false)) out = prefix + out;
  return Value::string(std::move(out));
}

// jinja2 do_title: words start after runs of whitespace, '-', '(', '{', '[' or '<'.
std::string jinja_title(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (py_is_space_ascii(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') {
      out += c;
      ++i;
      continue;
    }
    size_t end = i;
    while (end < s.size() && !(py_is_space_ascii(s[end]) || s[end] == '-' || s[end] == '(' ||
                               s[end] == '{' || s[end] == '[' || s[end] == '<'))
      ++end;
    // item[0].upper() + item[1:].lower()
    std::string_view word(s.data() + i, end - i);
    size_t first_len = utf8_offsets(word)[1];
    out += py_upper(word.substr(0, first_len));
    out += py_lower(word.substr(first_len));
    i = end;
  }
  return out;
}

Result<Value> filter_select(Interpreter& interp, std::string_view name, const Value& input,
                            const CallArgs& args) {
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep_if = name == "select" || name == "selectattr";
  size_t next = 0;
  Value attribute;
  if (by_attr) {
    if (args.positional.empty())
      return type_error(std::string(name) + "() needs an attribute name");
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string())
      return type_error(std::string(name) + "() test name must be a string");
    test = args.positional[next++].as_string();
  }
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<long>(next),
                              args.positional.end());
  test_args.keyword = args.keyword;
  STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
  ValueList out;
  for (const auto& item : items) {
    STRATA_RETURN_IF_ERROR(interp.charge_steps(1));
    Value subject = item;
    if (by_attr) {
      STRATA_ASSIGN_OR_RETURN(subject, attribute_of(interp, item, attribute));
    }
    bool pass;
    if (test.empty()) {
      pass = subject.truthy();
    } else {
      STRATA_ASSIGN_OR_RETURN(pass, run_test(interp, test, subject, test_args));
    }
    if (pass == keep_if) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> filter_map(Interpreter& interp, const Value& input, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
  ValueList out;
  if (const Value* attribute = args.kwarg("attribute")) {
    const Value* fallback = args.kwarg("default");
    for (const auto& item : items) {
      STRATA_ASSIGN_OR_RETURN(Value v, attribute_of(interp, item, *attribute));
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string())
    return type_error("map() needs a filter name or attribute=");
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const auto& item : items) {
    STRATA_RETURN_IF_ERROR(interp.charge_steps(1));
    STRATA_ASSIGN_OR_RETURN(Value v,
                            run_filter(interp, args.positional[0].as_string(), item, filter_args));
    out.push_back(std::move(v));
  }
  return Value::list(std::move(out));
}

// sort, unique, min, max share jinja2's (case_sensitive, attribute) key handling.
Result<Value> filter_ordering(Interpreter& interp, std::string_view name, const Value& input,
                              const CallArgs& args) {
  BoundArgs a;
  if (name == "sort") {
    STRATA_ASSIGN_OR_RETURN(a, bind_args(args, name, {"reverse", "case_sensitive", "attribute"}));
  } else {
    STRATA_ASSIGN_OR_RETURN(a, bind_args(args, name, {"case_sensitive", "attribute"}));
    a.insert(a.begin(), std::nullopt);
  }
  bool reverse = arg_bool(a[0], false), case_sensitive = arg_bool(a[1], false);
  STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
  STRATA_RETURN_IF_ERROR(interp.charge_steps(static_cast<int64_t>(items.size()) * 8));
  ValueList keys;
  for (const auto& item : items) {
    Value key = item;
    if (a[2] && !a[2]->is_none()) {
      STRATA_ASSIGN_OR_RETURN(key, attribute_of(interp, item, *a[2]));
    }
    keys.push_back(sort_key(key, case_sensitive));
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (name == "unique") {
    ValueList out, seen;
    for (size_t i = 0; i < items.size(); ++i) {
      bool dup = false;
      for (const auto& s : seen) dup = dup || py_equal(s, keys[i]);
      if (dup) continue;
      seen.push_back(keys[i]);
      out.push_back(items[i]);
    }
    return Value::list(std::move(out));
  }
  STRATA_RETURN_IF_ERROR(sort_values(&keys, &order, reverse));
  if (name == "min" || name == "max") {
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    return items[name == "min" ? order.front() : order.back()];
  }
  ValueList out;
  for (size_t i : order) out.push_back(items[i]);
  return Value::list(std::move(out));
}

Result<Value> filter_dictsort(Interpreter& interp, const Value& input, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, "dictsort", {"case_sensitive", "by", "reverse"}));
  if (input.is_undefined()) return type_error(input.undefined_hint());
  if (!input.is_dict())
    return type_error("dictsort() needs a mapping, not " + std::string(input.type_name()));
  STRATA_ASSIGN_OR_RETURN(std::string by, arg_string(a[1], "key", "dictsort by"));
  if (by != "key" && by != "value")
    return type_error("You can only sort by either \"key\" or \"value\"");
  ValueList pairs, keys;
  for (const auto& [k, v] : input.as_dict().items) {
    pairs.push_back(Value::list({k, v}, true));
    keys.push_back(sort_key(by == "key" ? k : v, arg_bool(a[0], false)));
  }
  std::vector<size_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  STRATA_RETURN_IF_ERROR(interp.charge_steps(static_cast<int64_t>(pairs.size()) * 8));
  STRATA_RETURN_IF_ERROR(sort_values(&keys, &order, arg_bool(a[2], false)));
  ValueList out;
  for (size_t i : order) out.push_back(pairs[i]);
  return Value::list(std::move(out));
}

Result<Value> filter_join(Interpreter& interp, const Value& input, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, "join", {"d", "attribute"}));
  std::string sep = a[0] ? py_str(*a[0]) : "";
  STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (a[1] && !a[1]->is_none()) {
      STRATA_ASSIGN_OR_RETURN(item, attribute_of(interp, item, *a[1]));
    }
    if (i) out += sep;
    out += py_str(item);
    STRATA_RETURN_IF_ERROR(interp.check_size(out.size()));
  }
  return Value::string(std::move(out));
}

Result<Value> filter_number(const Value& input, const CallArgs& args, bool want_int) {
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, want_int ? "int" : "float", {"default", "base"}));
  Value fallback = a[0] ? *a[0] : (want_int ? Value::integer(0) : Value::floating(0.0));
  if (input.is_number()) {
    if (!want_int) return Value::floating(input.as_double());
    if (!input.is_float()) return Value::integer(input.as_int());
    double d = input.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (!input.is_string()) return fallback;
  std::string s = py_strip(input.as_string(), std::nullopt, true, true);
  std::string digits;
  for (char c : s)
    if (c != '_') digits += c;
  if (digits.empty()) return fallback;
  errno = 0;
  char* end = nullptr;
  if (want_int) {
    STRATA_ASSIGN_OR_RETURN(int64_t base, arg_int(a[1], 10, "int base"));
    if (base < 2 || base > 36) base = 10;
    long long v = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
    if (end && *end == '\0' && errno == 0) return Value::integer(v);
    // jinja2 falls back to int(float(value)).
  }
  double d = std::strtod(digits.c_str(), &end);
  if (!end || *end != '\0' || errno == ERANGE) return fallback;
  if (!want_int) return Value::floating(d);
  if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
  return Value::integer(static_cast<int64_t>(d));
}

Result<Value> filter_batch(Interpreter& interp, const Value& input, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, "batch", {"linecount", "fill_with"}, 1));
  STRATA_ASSIGN_OR_RETURN(int64_t n, arg_int(a[0], 1, "batch linecount"));
  if (n <= 0) return type_error("batch linecount must be positive");
  STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
  STRATA_RETURN_IF_ERROR(interp.check_size(static_cast<size_t>(std::min<int64_t>(n, INT32_MAX))));
  ValueList out, row;
  for (auto& item : items) {
    row.push_back(std::move(item));
    if (static_cast<int64_t>(row.size()) == n) out.push_back(Value::list(std::exchange(row, {})));
  }
  if (!row.empty()) {
    if (a[1] && !a[1]->is_none())
      while (static_cast<int64_t>(row.size()) < n) row.push_back(*a[1]);
    out.push_back(Value::list(std::move(row)));
  }
  return Value::list(std::move(out));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

Result<Value> run_filter(Interpreter& interp, std::string_view name, const Value& input,
                         const CallArgs& args) {
  if (name == "tojson") return filter_tojson(interp, input, args);
  if (name == "length" || name == "count") return filter_length(input);
  if (name == "string") return Value::string(py_str(input));
  if (name == "safe") return Value::string(py_str(input));  // autoescape is off: Markup == str
  if (name == "escape" || name == "e") return Value::string(html_escape(py_str(input)));
  if (name == "pprint") return Value::string(py_repr(input));
  if (name == "upper") return Value::string(py_upper(py_str(input)));
  if (name == "lower") return Value::string(py_lower(py_str(input)));
  if (name == "capitalize") return Value::string(py_capitalize(py_str(input)));
  if (name == "title") return Value::string(jinja_title(py_str(input)));
  if (name == "trim") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"chars"}));
    std::optional<std::string> chars;
    if (a[0] && !a[0]->is_none()) chars = py_str(*a[0]);
    std::optional<std::string_view> view;
    if (chars) view = *chars;
    return Value::string(py_strip(py_str(input), view, true, true));
  }
  if (name == "default" || name == "d") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"default_value", "boolean"}));
    Value fallback = a[0] ? *a[0] : Value::string("");
    if (input.is_undefined() || (arg_bool(a[1], false) && !input.truthy())) return fallback;
    return input;
  }
  if (name == "first" || name == "last") {
    STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
    if (items.empty())
      return Value::undefined("No " + std::string(name) + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
    return Value::list(std::move(items));
  }
  if (name == "items") {
    if (input.is_undefined()) return Value::list({});
    if (!input.is_dict()) return type_error("Can only get item pairs from a mapping.");
    ValueList out;
    for (const auto& [k, v] : input.as_dict().items) out.push_back(Value::list({k, v}, true));
    return Value::list(std::move(out));
  }
  if (name == "reverse") {
    if (input.is_string()) {
      auto offsets = utf8_offsets(input.as_string());
      std::string out;
      for (size_t i = offsets.size() - 1; i > 0; --i)
        out.append(input.as_string(), offsets[i - 1], offsets[i] - offsets[i - 1]);
      return Value::string(std::move(out));
    }
    STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "join") return filter_join(interp, input, args);
  if (name == "replace") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"old", "new", "count"}, 2));
    STRATA_ASSIGN_OR_RETURN(int64_t count, arg_int(a[2], -1, "replace count"));
    std::string s = py_str(input), old_text = py_str(*a[0]), new_text = py_str(*a[1]);
    size_t hits = old_text.empty() ? s.size() + 1 : s.size() / old_text.size() + 1;
    if (new_text.size() > old_text.size())
      STRATA_RETURN_IF_ERROR(
          interp.check_size(s.size() + hits * (new_text.size() - old_text.size())));
    return Value::string(py_replace(s, old_text, new_text, static_cast<long>(count)));
  }
  // These call int()/float()/str.splitlines on the input, which fails for Undefined in jinja2.
  if (input.is_undefined() && (name == "indent" || name == "int" || name == "float"))
    return type_error(input.undefined_hint());
  if (name == "indent" && !input.is_string())  // jinja2 appends "\n" to the value: str only
    return type_error("can only concatenate " + std::string(input.type_name()) +
                      " (not \"str\") to " + std::string(input.type_name()));
  if (name == "indent") return filter_indent(interp, input, args);
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return filter_select(interp, name, input, args);
  if (name == "map") return filter_map(interp, input, args);
  if (name == "sort" || name == "unique" || name == "min" || name == "max")
    return filter_ordering(interp, name, input, args);
  if (name == "dictsort") return filter_dictsort(interp, input, args);
  if (name == "int") return filter_number(input, args, true);
  if (name == "float") return filter_number(input, args, false);
  if (name == "abs") {
    if (input.is_float()) return Value::floating(std::fabs(input.as_double()));
    if (input.is_integral() && input.as_int() != INT64_MIN)
      return Value::integer(std::llabs(input.as_int()));
    return type_error("bad operand type for abs(): '" + std::string(input.type_name()) + "'");
  }
  if (name == "round") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"precision", "method"}));
    STRATA_ASSIGN_OR_RETURN(int64_t precision, arg_int(a[0], 0, "round precision"));
    STRATA_ASSIGN_OR_RETURN(std::string method, arg_string(a[1], "common", "round method"));
    if (!input.is_number()) return type_error("round() needs a number");
    // Python's round(int, ndigits) returns the int unchanged for ndigits >= 0.
    if (input.is_integral() && precision >= 0 && method == "common")
      return Value::integer(input.as_int());
    if (precision < -300 || precision > 300) return Value::floating(input.as_double());
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = input.as_double() * scale;
    // Python's round() (jinja2's "common") rounds half to even.
    double r = method == "ceil"    ? std::ceil(x)
               : method == "floor" ? std::floor(x)
                                   : std::nearbyint(x);
    if (method != "common" && method != "ceil" && method != "floor")
      return type_error("method must be common, ceil or floor");
    return Value::floating(r / scale);
  }
  if (name == "sum") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"attribute", "start"}));
    STRATA_ASSIGN_OR_RETURN(ValueList items, interp.iterate_values(input));
    Value total = a[1] ? *a[1] : Value::integer(0);
    for (const auto& item : items) {
      Value v = item;
      if (a[0] && !a[0]->is_none()) {
        STRATA_ASSIGN_OR_RETURN(v, attribute_of(interp, item, *a[0]));
      }
      if (!total.is_number() || !v.is_number())
        return type_error("unsupported operand type(s) for +: '" + std::string(total.type_name()) +
                          "' and '" + std::string(v.type_name()) + "'");
      int64_t r;
      if (total.is_integral() && v.is_integral() &&
          !__builtin_add_overflow(total.as_int(), v.as_int(), &r)) {
        total = Value::integer(r);
      } else {
        total = Value::floating(total.as_double() + v.as_double());
      }
    }
    return total;
  }
  if (name == "batch") return filter_batch(interp, input, args);
  if (name == "center") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"width"}));
    STRATA_ASSIGN_OR_RETURN(int64_t width, arg_int(a[0], 80, "center width"));
    std::string s = py_str(input);
    int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value::string(s);
    STRATA_RETURN_IF_ERROR(interp.check_size(static_cast<size_t>(width)));
    int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
    return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                         std::string(static_cast<size_t>(pad - left), ' '));
  }
  if (name == "wordcount") {
    int64_t words = 0;
    bool in_word = false;
    for (char c : py_str(input)) {
      bool word_char = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                       static_cast<unsigned char>(c) >= 0x80;
      if (word_char && !in_word) ++words;
      in_word = word_char;
    }
    return Value::integer(words);
  }
  if (name == "attr") {
    STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, name, {"name"}, 1));
    if (!a[0]->is_string()) return type_error("attr() name must be a string");
    // jinja2's attr filter uses getattr only: dict keys are not attributes.
    if (input.is_undefined()) return type_error(input.undefined_hint());
    if (auto method = lookup_method(input, a[0]->as_string())) return *method;
    if (input.is_namespace())
      if (const Value* v = input.namespace_dict().find(a[0]->as_string())) return *v;
    return Value::undefined("'" + std::string(input.type_name()) + " object' has no attribute '" +
                            a[0]->as_string() + "'");
  }
  if (name == "format") {
    if (!args.keyword.empty())
      return type_error("format filter: keyword arguments are not supported");
    Value tuple = Value::list(args.positional, true);
    STRATA_ASSIGN_OR_RETURN(std::string text, percent_format(py_str(input), tuple));
    return Value::string(std::move(text));
  }
  return make_error(ErrorCode::kUnsupported, "unsupported filter '" + std::string(name) + "'");
}

}  // namespace strata::jinja
