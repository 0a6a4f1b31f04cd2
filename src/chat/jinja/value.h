// Runtime values of the Jinja interpreter, modelled on the Python objects jinja2 works with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace strata::jinja {

class Value;
class Callable;
class Interpreter;

using ValueList = std::vector<Value>;

// A Python dict: keys keep insertion order (Python >= 3.7), lookup is by Python equality.
struct Dict {
  std::vector<std::pair<Value, Value>> items;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts or overwrites, keeping the position of an existing key.
  void set(Value key, Value value);
};

// Arguments of one call: positional then keyword, as written at the call site.
struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;

  const Value* kwarg(std::string_view name) const;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,  // jinja2.Undefined: prints "", falsy, iterates empty, fails on attribute access
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // Python list, or tuple when is_tuple()
    kDict,
    kCallable,
    kNamespace,  // jinja2 namespace(): the one mutable object templates may assign into
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double f);
  static Value string(std::string s);
  static Value list(ValueList items, bool is_tuple = false);
  static Value dict(Dict d);
  static Value callable(std::shared_ptr<const Callable> c);
  static Value namespace_object(Dict d);
  // Converts caller-supplied JSON, keeping object key order; fails past `depth_left` levels.
  static Result<Value> from_json(const nlohmann::ordered_json& j, int depth_left = 256);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Python numbers include bool (bool subclasses int).
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_integral() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && is_tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return *str_; }
  const ValueList& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& namespace_dict() const { return *dict_; }
  const Callable& as_callable() const { return *callable_; }
  // For undefined values: why the value is undefined ("'x' is undefined"), used in error messages.
  std::string undefined_hint() const { return str_ ? *str_ : std::string("value is undefined"); }

  // Container nesting depth (0 for scalars), checked so hostile templates cannot build values
  // whose recursive printing or destruction would exhaust the stack.
  uint32_t depth() const { return depth_; }

  // Python truthiness (bool(x)); undefined is falsy.
  bool truthy() const;
  // Python type name as it appears in Python's error messages ("str", "list", "NoneType").
  std::string_view type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool is_tuple_ = false;
  bool b_ = false;
  uint32_t depth_ = 0;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::shared_ptr<const std::string> str_;  // string, or the hint of an undefined
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<Dict> dict_;  // dict (never mutated once built) or namespace (mutable)
  std::shared_ptr<const Callable> callable_;
};

// Something a template can call: a macro, a builtin global, or a bound method.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Result<Value> call(Interpreter& interp, CallArgs args, int line) const = 0;
  virtual std::string describe() const = 0;  // as Python would print it
};

// Python `==` (numbers compare by value across int/float/bool; containers element-wise).
bool py_equal(const Value& a, const Value& b);
// Python `<` ordering for sort/min/max/comparisons; error for unorderable types.
Result<int> py_compare(const Value& a, const Value& b);
// Python str(x): what `{{ x }}` prints. Containers print as their repr.
std::string py_str(const Value& v);
// Python repr(x).
std::string py_repr(const Value& v);

// Whether `j` nests arrays and objects more than `limit` deep. Copying, comparing and dump() of
// nlohmann JSON recurse once per level, so caller JSON already parsed elsewhere is measured with
// this (itself iterative) before anything walks it.
template <typename Json>
bool json_deeper_than(const Json& j, size_t limit) {
  std::vector<std::pair<const Json*, size_t>> pending = {{&j, 0}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    if (depth + 1 > limit) return true;
    for (const auto& child : *node) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace strata::jinja
