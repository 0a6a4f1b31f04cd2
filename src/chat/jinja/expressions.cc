// Expression evaluation: names, attribute/item access, calls, operators with Python semantics.
#include <cmath>

#include "chat/jinja/builtins.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

bool checked_add(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
bool checked_sub(int64_t a, int64_t b, int64_t* r) { return !__builtin_sub_overflow(a, b, r); }
bool checked_mul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

Error overflow() {
  return make_error(ErrorCode::kOutOfRange, "integer overflow in template arithmetic");
}

Error unsupported_operands(const std::string& op, const Value& a, const Value& b) {
  return type_error("unsupported operand type(s) for " + op + ": '" + std::string(a.type_name()) +
                    "' and '" + std::string(b.type_name()) + "'");
}

}  // namespace

Result<Value> Interpreter::call(const Value& callee, CallArgs args, int line) {
  if (callee.is_callable()) {
    auto result = callee.as_callable().call(*this, std::move(args), line);
    if (!result.ok()) return at_line(result.error(), line);
    return result;
  }
  if (callee.is_undefined()) return at_line(type_error(callee.undefined_hint()), line);
  return at_line(type_error("'" + std::string(callee.type_name()) + "' object is not callable"),
                 line);
}

Result<Value> Interpreter::apply_filter(std::string_view name, const Value& input,
                                        const CallArgs& args, int line) {
  auto result = run_filter(*this, name, input, args);
  if (!result.ok()) return at_line(result.error(), line);
  if (result->is_string()) {
    auto status = check_size(result->as_string().size());
    if (!status.ok()) return at_line(status.error(), line);
  }
  return result;
}

Result<bool> Interpreter::apply_test(std::string_view name, const Value& input,
                                     const CallArgs& args, int line) {
  auto result = run_test(*this, name, input, args);
  if (!result.ok()) return at_line(result.error(), line);
  return result;
}

Result<Value> Interpreter::get_attr(const Value& object, std::string_view name) {
  if (object.is_undefined()) return type_error(object.undefined_hint());
  if (auto method = lookup_method(object, name)) return *method;
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(name)) return *v;
    return Value::undefined("'dict object' has no attribute '" + std::string(name) + "'");
  }
  if (object.is_namespace()) {
    if (const Value* v = object.namespace_dict().find(name)) return *v;
  }
  std::string type =
      object.is_none() ? "'None'" : "'" + std::string(object.type_name()) + " object'";
  return Value::undefined(type + " has no attribute '" + std::string(name) + "'");
}

Result<Value> Interpreter::get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) return type_error(object.undefined_hint());
  if (object.is_dict()) {
    if (const Value* v = object.as_dict().find(key)) return *v;
  } else if ((object.is_list() || object.is_string()) && key.is_integral()) {
    int64_t index = key.as_int();
    if (object.is_list()) {
      const auto& items = object.as_list();
      int64_t n = static_cast<int64_t>(items.size());
      if (index < 0) index += n;
      if (index >= 0 && index < n) return items[static_cast<size_t>(index)];
    } else {
      const std::string& s = object.as_string();
      auto offsets = utf8_offsets(s);
      int64_t n = static_cast<int64_t>(offsets.size()) - 1;
      if (index < 0) index += n;
      if (index >= 0 && index < n) {
        size_t at = static_cast<size_t>(index);
        return Value::string(s.substr(offsets[at], offsets[at + 1] - offsets[at]));
      }
    }
  }
  // jinja2's getitem falls back to attribute lookup for string keys.
  if (key.is_string()) return get_attr(object, key.as_string());
  return Value::undefined("'" + std::string(object.type_name()) + " object' has no item " +
                          py_repr(key));
}

Result<CallArgs> Interpreter::eval_args(const Expr& expr, size_t first_child,
                                        const std::shared_ptr<Frame>& frame) {
  CallArgs args;
  for (size_t i = first_child; i < expr.children.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(Value v, eval(*expr.children[i], frame));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [name, e] : expr.kwargs) {
    STRATA_ASSIGN_OR_RETURN(Value v, eval(*e, frame));
    args.keyword.emplace_back(name, std::move(v));
  }
  return args;
}

Result<Value> Interpreter::eval(const Expr& expr, const std::shared_ptr<Frame>& frame) {
  if (nesting_depth_ >= kMaxNestingDepth)
    return at_line(make_error(ErrorCode::kOutOfRange,
                              "recursion depth limit exceeded (expressions nest too deeply)"),
                   expr.line);
  STRATA_RETURN_IF_ERROR(charge_steps(1));
  ++nesting_depth_;
  auto result = eval_inner(expr, frame);
  --nesting_depth_;
  return result;
}

Result<Value> Interpreter::eval_inner(const Expr& expr, const std::shared_ptr<Frame>& frame) {
  const auto child = [&](size_t i) { return eval(*expr.children[i], frame); };
  switch (expr.kind) {
    case ExprKind::kLiteral:
      return expr.literal;
    case ExprKind::kName: {
      if (const Value* v = frame->lookup(expr.name)) return *v;
      return Value::undefined("'" + expr.name + "' is undefined");
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (size_t i = 0; i < expr.children.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(Value v, child(i));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items), expr.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        STRATA_ASSIGN_OR_RETURN(Value k, child(i));
        STRATA_ASSIGN_OR_RETURN(Value v, child(i + 1));
        if (k.is_dict() || k.is_namespace() || (k.is_list() && !k.is_tuple()))
          return at_line(type_error("unhashable type: '" + std::string(k.type_name()) + "'"),
                         expr.line);
        d.set(std::move(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kGetAttr: {
      STRATA_ASSIGN_OR_RETURN(Value obj, child(0));
      auto r = get_attr(obj, expr.name);
      if (!r.ok()) return at_line(r.error(), expr.line);
      return r;
    }
    case ExprKind::kGetItem: {
      STRATA_ASSIGN_OR_RETURN(Value obj, child(0));
      STRATA_ASSIGN_OR_RETURN(Value key, child(1));
      auto r = get_item(obj, key);
      if (!r.ok()) return at_line(r.error(), expr.line);
      return r;
    }
    case ExprKind::kSlice: {
      STRATA_ASSIGN_OR_RETURN(Value obj, child(0));
      Value parts[3];
      for (size_t i = 0; i < 3; ++i) {
        if (!expr.children[i + 1]) continue;
        STRATA_ASSIGN_OR_RETURN(parts[i], child(i + 1));
      }
      auto r = eval_slice(obj, parts[0], parts[1], parts[2]);
      if (!r.ok()) return at_line(r.error(), expr.line);
      return r;
    }
    case ExprKind::kCall: {
      STRATA_ASSIGN_OR_RETURN(Value callee, child(0));
      STRATA_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, frame));
      return call(callee, std::move(args), expr.line);
    }
    case ExprKind::kFilter: {
      Value input;
      if (expr.children[0]) {
        STRATA_ASSIGN_OR_RETURN(input, child(0));
      }
      STRATA_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, frame));
      return apply_filter(expr.name, input, args, expr.line);
    }
    case ExprKind::kTest: {
      STRATA_ASSIGN_OR_RETURN(Value input, child(0));
      STRATA_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, frame));
      STRATA_ASSIGN_OR_RETURN(bool result, apply_test(expr.name, input, args, expr.line));
      return Value::boolean(result != expr.negated);
    }
    case ExprKind::kUnary: {
      STRATA_ASSIGN_OR_RETURN(Value v, child(0));
      if (expr.name == "not") return Value::boolean(!v.truthy());
      if (v.is_undefined()) return at_line(type_error(v.undefined_hint()), expr.line);
      if (!v.is_number())
        return at_line(type_error("bad operand type for unary " + expr.name + ": '" +
                                  std::string(v.type_name()) + "'"),
                       expr.line);
      if (expr.name == "+") return v.is_float() ? v : Value::integer(v.as_int());
      if (v.is_float()) return Value::floating(-v.as_double());
      int64_t r;
      if (!checked_sub(0, v.as_int(), &r)) return at_line(overflow(), expr.line);
      return Value::integer(r);
    }
    case ExprKind::kBinary: {
      STRATA_ASSIGN_OR_RETURN(Value a, child(0));
      if (expr.name == "and") return a.truthy() ? child(1) : Result<Value>(a);
      if (expr.name == "or") return a.truthy() ? Result<Value>(a) : child(1);
      STRATA_ASSIGN_OR_RETURN(Value b, child(1));
      auto r = eval_binary(expr.name, a, b);
      if (!r.ok()) return at_line(r.error(), expr.line);
      return r;
    }
    case ExprKind::kCompare: {
      STRATA_ASSIGN_OR_RETURN(Value left, child(0));
      for (size_t i = 0; i < expr.ops.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(Value right, child(i + 1));
        auto r = eval_compare(expr.ops[i], left, right);
        if (!r.ok()) return at_line(r.error(), expr.line);
        if (!*r) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::kCondExpr: {
      STRATA_ASSIGN_OR_RETURN(Value cond, child(0));
      if (cond.truthy()) return child(1);
      if (expr.children[2]) return child(2);
      return Value::undefined("the inline if-expression on line " + std::to_string(expr.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Result<bool> Interpreter::eval_compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in" || op == "notin") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string())
        return type_error("'in <string>' requires string as left operand, not " +
                          std::string(a.type_name()));
      found = b.as_string().find(a.as_string()) != std::string::npos;
    } else if (b.is_list()) {
      for (const auto& item : b.as_list()) found = found || py_equal(item, a);
    } else if (b.is_dict()) {
      found = b.as_dict().find(a) != nullptr;
    } else if (b.is_undefined()) {
      found = false;  // Undefined iterates empty, so Python's `in` finds nothing
    } else {
      return type_error("argument of type '" + std::string(b.type_name()) + "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  if (a.is_undefined()) return type_error(a.undefined_hint());
  if (b.is_undefined()) return type_error(b.undefined_hint());
  auto c = py_compare(a, b);
  if (!c.ok())
    return type_error("'" + op + "' not supported between instances of '" +
                      std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'");
  if (op == "<") return *c < 0;
  if (op == "<=") return *c <= 0;
  if (op == ">") return *c > 0;
  return *c >= 0;
}

Result<Value> Interpreter::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string text = py_str(a);
    std::string right = py_str(b);
    STRATA_RETURN_IF_ERROR(check_size(text.size() + right.size()));
    STRATA_RETURN_IF_ERROR(charge_steps(static_cast<int64_t>((text.size() + right.size()) / 64)));
    return Value::string(text + right);
  }
  if (a.is_undefined()) return type_error(a.undefined_hint());
  if (b.is_undefined()) return type_error(b.undefined_hint());
  const bool ints = a.is_integral() && b.is_integral();
  const bool numbers = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (!checked_add(a.as_int(), b.as_int(), &r)) return overflow();
      return Value::integer(r);
    }
    if (numbers) return Value::floating(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      STRATA_RETURN_IF_ERROR(check_size(a.as_string().size() + b.as_string().size()));
      STRATA_RETURN_IF_ERROR(
          charge_steps(static_cast<int64_t>((a.as_string().size() + b.as_string().size()) / 64)));
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      STRATA_RETURN_IF_ERROR(check_list_size(a.as_list().size() + b.as_list().size()));
      STRATA_RETURN_IF_ERROR(
          charge_steps(static_cast<int64_t>(a.as_list().size() + b.as_list().size())));
      ValueList items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(items), a.is_tuple());
    }
    if (a.is_string() || a.is_list())
      return type_error("can only concatenate " + std::string(a.type_name()) + " (not \"" +
                        std::string(b.type_name()) + "\") to " + std::string(a.type_name()));
    return unsupported_operands(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (!checked_sub(a.as_int(), b.as_int(), &r)) return overflow();
      return Value::integer(r);
    }
    if (numbers) return Value::floating(a.as_double() - b.as_double());
    return unsupported_operands(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (!checked_mul(a.as_int(), b.as_int(), &r)) return overflow();
      return Value::integer(r);
    }
    if (numbers) return Value::floating(a.as_double() * b.as_double());
    const Value& seq = a.is_integral() ? b : a;
    const Value& count = a.is_integral() ? a : b;
    if (count.is_integral() && (seq.is_string() || seq.is_list())) {
      int64_t n = std::max<int64_t>(0, count.as_int());
      size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
      if (unit > 0 && static_cast<uint64_t>(n) > options_.max_output_bytes / unit + 1)
        return check_size(options_.max_output_bytes + 1).error();
      STRATA_RETURN_IF_ERROR(check_size(unit * static_cast<size_t>(n)));
      if (seq.is_list()) STRATA_RETURN_IF_ERROR(check_list_size(unit * static_cast<size_t>(n)));
      STRATA_RETURN_IF_ERROR(
          charge_steps(static_cast<int64_t>(unit) * n / (seq.is_string() ? 64 : 1)));
      if (seq.is_string()) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq.as_string();
        return Value::string(std::move(out));
      }
      ValueList items;
      for (int64_t i = 0; i < n; ++i)
        items.insert(items.end(), seq.as_list().begin(), seq.as_list().end());
      return Value::list(std::move(items), seq.is_tuple());
    }
    return unsupported_operands(op, a, b);
  }
  if (op == "/") {
    if (!numbers) return unsupported_operands(op, a, b);
    if (b.as_double() == 0.0) return type_error("division by zero");
    return Value::floating(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) {
      STRATA_ASSIGN_OR_RETURN(std::string text, percent_format(a.as_string(), b));
      STRATA_RETURN_IF_ERROR(check_size(text.size()));
      return Value::string(std::move(text));
    }
    if (!numbers) return unsupported_operands(op, a, b);
    if (b.as_double() == 0.0)
      return type_error(op == "%" ? "integer division or modulo by zero"
                                  : "integer division or modulo by zero");
    if (ints) {
      int64_t x = a.as_int(), y = b.as_int();
      if (x == INT64_MIN && y == -1) return overflow();
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {  // Python floors toward negative infinity
        --q;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    // CPython's float_divmod: the quotient comes from fmod so that x == q*y + r stays exact.
    double x = a.as_double(), y = b.as_double();
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0.0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    double floordiv = 0.0;
    if (div != 0.0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, x / y);
    }
    return Value::floating(op == "//" ? floordiv : mod);
  }
  if (op == "**") {
    if (!numbers) return unsupported_operands(op, a, b);
    if (ints && b.as_int() >= 0) {
      int64_t base = a.as_int(), exp = b.as_int(), r = 1;
      while (exp > 0) {
        if (exp & 1)
          if (!checked_mul(r, base, &r)) return overflow();
        exp >>= 1;
        if (exp > 0 && !checked_mul(base, base, &base)) return overflow();
      }
      return Value::integer(r);
    }
    if (a.as_double() == 0.0 && b.as_double() < 0)
      return type_error("0.0 cannot be raised to a negative power");
    return Value::floating(std::pow(a.as_double(), b.as_double()));
  }
  return type_error("unknown operator '" + op + "'");
}

Result<Value> Interpreter::eval_slice(const Value& object, const Value& start_v,
                                      const Value& stop_v, const Value& step_v) {
  if (object.is_undefined()) return type_error(object.undefined_hint());
  if (!object.is_list() && !object.is_string())
    return Value::undefined("'" + std::string(object.type_name()) + " object' cannot be sliced");
  for (const Value* v : {&start_v, &stop_v, &step_v})
    if (!v->is_undefined() && !v->is_none() && !v->is_integral())
      return type_error("slice indices must be integers or None");
  std::vector<size_t> offsets;
  int64_t n;
  if (object.is_string()) {
    offsets = utf8_offsets(object.as_string());
    n = static_cast<int64_t>(offsets.size()) - 1;
  } else {
    n = static_cast<int64_t>(object.as_list().size());
  }
  const auto given = [](const Value& v) { return v.is_integral(); };
  int64_t step = given(step_v) ? step_v.as_int() : 1;
  if (step == 0) return type_error("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  const auto adjust = [&](const Value& v, int64_t fallback) {
    if (!given(v)) return fallback;
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t start = adjust(start_v, step < 0 ? n - 1 : 0);
  int64_t stop = adjust(stop_v, step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  STRATA_RETURN_IF_ERROR(charge_steps(static_cast<int64_t>(picks.size())));
  if (object.is_string()) {
    std::string out;
    const std::string& s = object.as_string();
    for (int64_t i : picks) {
      size_t at = static_cast<size_t>(i);
      out.append(s, offsets[at], offsets[at + 1] - offsets[at]);
    }
    return Value::string(std::move(out));
  }
  ValueList items;
  for (int64_t i : picks) items.push_back(object.as_list()[static_cast<size_t>(i)]);
  return Value::list(std::move(items), object.is_tuple());
}

}  // namespace strata::jinja
