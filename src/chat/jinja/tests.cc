// jinja2's builtin tests (jinja2/tests.py), on interpreter values.
#include <algorithm>
#include <cmath>

#include "chat/jinja/builtins.h"

namespace strata::jinja {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// Names of the filters jinja2 knows, for the `filter` test.
constexpr std::string_view kFilterNames[] = {
    "abs",      "attr",       "batch",    "capitalize", "center",  "count",   "d",      "default",
    "dictsort", "e",          "escape",   "first",      "float",   "format",  "indent", "int",
    "items",    "join",       "last",     "length",     "list",    "lower",   "map",    "max",
    "min",      "pprint",     "reject",   "rejectattr", "replace", "reverse", "round",  "safe",
    "select",   "selectattr", "sort",     "string",     "sum",     "title",   "tojson", "trim",
    "unique",   "upper",      "wordcount"};
constexpr std::string_view kTestNames[] = {
    "boolean",     "callable", "defined", "divisibleby", "eq",   "equalto",   "==",     "escaped",
    "even",        "false",    "filter",  "float",       "ge",   ">=",        "gt",     ">",
    "greaterthan", "in",       "integer", "iterable",    "le",   "<=",        "lower",  "lt",
    "<",           "lessthan", "mapping", "ne",          "!=",   "none",      "number", "odd",
    "sameas",      "sequence", "string",  "test",        "true", "undefined", "upper"};

Result<const Value*> one_arg(const CallArgs& args, std::string_view test) {
  if (args.positional.size() + args.keyword.size() != 1)
    return type_error("test '" + std::string(test) + "' takes exactly one argument");
  return args.positional.empty() ? &args.keyword[0].second : &args.positional[0];
}

Result<int> compare(const Value& a, const Value& b, std::string_view test) {
  if (a.is_undefined()) return type_error(a.undefined_hint());
  if (b.is_undefined()) return type_error(b.undefined_hint());
  auto c = py_compare(a, b);
  if (!c.ok())
    return type_error("test '" + std::string(test) + "' cannot compare '" +
                      std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'");
  return *c;
}

Result<int64_t> int_operand(const Value& v, std::string_view test) {
  if (v.is_undefined()) return type_error(v.undefined_hint());
  if (!v.is_integral())
    return type_error("test '" + std::string(test) + "' needs an integer, not " +
                      std::string(v.type_name()));
  return v.as_int();
}

}  // namespace

Result<bool> run_test(Interpreter& interp, std::string_view name, const Value& input,
                      const CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined") return !input.is_undefined();
  if (name == "undefined") return input.is_undefined();
  if (name == "none") return input.is_none();
  if (name == "boolean") return input.is_bool();
  if (name == "true") return input.is_bool() && input.as_bool();
  if (name == "false") return input.is_bool() && !input.as_bool();
  if (name == "string") return input.is_string();
  if (name == "mapping") return input.is_dict();
  if (name == "number") return input.is_number();
  if (name == "integer") return input.is_int();
  if (name == "float") return input.is_float();
  // jinja2's Undefined defines __iter__, __len__, __getitem__ and __call__, so it passes these.
  if (name == "iterable")
    return input.is_string() || input.is_list() || input.is_dict() || input.is_undefined();
  if (name == "sequence")
    return input.is_string() || input.is_list() || input.is_dict() || input.is_undefined();
  if (name == "callable") return input.is_callable() || input.is_undefined();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    std::string s = py_str(input);
    bool cased = false, ok = true;
    for (char c : s) {
      bool up = c >= 'A' && c <= 'Z', low = c >= 'a' && c <= 'z';
      cased = cased || up || low;
      if ((name == "lower" && up) || (name == "upper" && low)) ok = false;
    }
    return cased && ok;
  }
  if (name == "odd" || name == "even") {
    // jinja2: value % 2 == 1 (odd) / value % 2 == 0 (even), so floats work too.
    if (input.is_float()) {
      double r = std::fmod(input.as_double(), 2.0);
      if (r < 0) r += 2.0;
      return name == "odd" ? r == 1.0 : r == 0.0;
    }
    STRATA_ASSIGN_OR_RETURN(int64_t v, int_operand(input, name));
    bool odd = (v % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    STRATA_ASSIGN_OR_RETURN(const Value* arg, one_arg(args, name));
    STRATA_ASSIGN_OR_RETURN(int64_t v, int_operand(input, name));
    STRATA_ASSIGN_OR_RETURN(int64_t d, int_operand(*arg, name));
    if (d == 0) return type_error("integer division or modulo by zero");
    if (d == -1) return true;
    return v % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==" || name == "ne" || name == "!=") {
    STRATA_ASSIGN_OR_RETURN(const Value* arg, one_arg(args, name));
    bool eq = py_equal(input, *arg);
    return (name == "ne" || name == "!=") ? !eq : eq;
  }
  if (name == "lt" || name == "<" || name == "lessthan" || name == "le" || name == "<=" ||
      name == "gt" || name == ">" || name == "greaterthan" || name == "ge" || name == ">=") {
    STRATA_ASSIGN_OR_RETURN(const Value* arg, one_arg(args, name));
    STRATA_ASSIGN_OR_RETURN(int c, compare(input, *arg, name));
    if (name == "lt" || name == "<" || name == "lessthan") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == ">" || name == "greaterthan") return c > 0;
    return c >= 0;
  }
  if (name == "in") {
    STRATA_ASSIGN_OR_RETURN(const Value* arg, one_arg(args, name));
    if (arg->is_string()) {
      if (!input.is_string()) return type_error("'in <string>' requires string as left operand");
      return arg->as_string().find(input.as_string()) != std::string::npos;
    }
    if (arg->is_dict()) return arg->as_dict().find(input) != nullptr;
    if (arg->is_undefined()) return type_error(arg->undefined_hint());
    if (!arg->is_list())
      return type_error("argument of type '" + std::string(arg->type_name()) + "' is not iterable");
    for (const auto& item : arg->as_list())
      if (py_equal(item, input)) return true;
    return false;
  }
  if (name == "sameas") {
    STRATA_ASSIGN_OR_RETURN(const Value* arg, one_arg(args, name));
    if (input.kind() != arg->kind()) return false;
    switch (input.kind()) {
      case K::kNone:
      case K::kUndefined:
        return input.is_none();  // each Undefined is a distinct object
      case K::kBool:
      case K::kInt:
        return input.as_int() == arg->as_int();
      case K::kList:
        return &input.as_list() == &arg->as_list();
      case K::kDict:
        return &input.as_dict() == &arg->as_dict();
      case K::kNamespace:
        return &input.namespace_dict() == &arg->namespace_dict();
      case K::kCallable:
        return &input.as_callable() == &arg->as_callable();
      default:
        return py_equal(input, *arg);
    }
  }
  if (name == "filter" || name == "test") {
    if (!input.is_string()) return false;
    const std::string& wanted = input.as_string();
    if (name == "filter")
      return std::find(std::begin(kFilterNames), std::end(kFilterNames), wanted) !=
             std::end(kFilterNames);
    return std::find(std::begin(kTestNames), std::end(kTestNames), wanted) != std::end(kTestNames);
  }
  return make_error(ErrorCode::kUnsupported, "unsupported test '" + std::string(name) + "'");
}

}  // namespace strata::jinja
