// The global functions templates can call: jinja2's range/namespace/dict plus transformers'
// raise_exception and strftime_now.
#include <cmath>
#include <ctime>

#include "chat/jinja/builtins.h"
#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

using GlobalFn = Result<Value> (*)(Interpreter&, const CallArgs&);

class GlobalFunction : public Callable {
 public:
  GlobalFunction(std::string name, GlobalFn fn) : name_(std::move(name)), fn_(fn) {}
  Result<Value> call(Interpreter& interp, CallArgs args, int) const override {
    return fn_(interp, args);
  }
  std::string describe() const override { return "<function " + name_ + ">"; }

 private:
  std::string name_;
  GlobalFn fn_;
};

Result<Value> global_range(Interpreter& interp, const CallArgs& args) {
  if (!args.keyword.empty()) return type_error("range() takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3)
    return type_error("range expected 1 to 3 arguments, got " +
                      std::to_string(args.positional.size()));
  int64_t v[3] = {0, 0, 1};
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (!args.positional[i].is_integral())
      return type_error("'" + std::string(args.positional[i].type_name()) +
                        "' object cannot be interpreted as an integer");
  }
  if (args.positional.size() == 1) {
    v[1] = args.positional[0].as_int();
  } else {
    v[0] = args.positional[0].as_int();
    v[1] = args.positional[1].as_int();
    if (args.positional.size() == 3) v[2] = args.positional[2].as_int();
  }
  if (v[2] == 0) return type_error("range() arg 3 must not be zero");
  // Length computed in long double to stay clear of int64 overflow on hostile bounds.
  long double span = static_cast<long double>(v[1]) - static_cast<long double>(v[0]);
  long double count = span / static_cast<long double>(v[2]);
  int64_t n = count <= 0 ? 0 : static_cast<int64_t>(std::ceil(count));
  if (n > interp.options().max_loop_iterations)
    return make_error(ErrorCode::kOutOfRange,
                      "range() of " + std::to_string(n) +
                          " items passes the loop iteration limit (" +
                          std::to_string(interp.options().max_loop_iterations) + ")");
  STRATA_RETURN_IF_ERROR(interp.charge_steps(n));
  ValueList items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) items.push_back(Value::integer(v[0] + i * v[2]));
  return Value::list(std::move(items));
}

Result<Dict> dict_from_args(const CallArgs& args, std::string_view what) {
  Dict d;
  if (args.positional.size() > 1)
    return type_error(std::string(what) + " expected at most 1 positional argument");
  if (args.positional.size() == 1) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else if (src.is_list()) {
      for (const auto& pair : src.as_list()) {
        if (!pair.is_list() || pair.as_list().size() != 2)
          return type_error(std::string(what) + ": sequence elements must be key/value pairs");
        d.set(pair.as_list()[0], pair.as_list()[1]);
      }
    } else if (!src.is_undefined()) {
      return type_error("'" + std::string(src.type_name()) + "' object is not iterable");
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
  return d;
}

Result<Value> global_namespace(Interpreter&, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(Dict d, dict_from_args(args, "namespace()"));
  for (const auto& [k, v] : d.items)
    if (v.is_namespace()) return type_error("a namespace cannot be stored inside a namespace");
  return Value::namespace_object(std::move(d));
}

Result<Value> global_dict(Interpreter&, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(Dict d, dict_from_args(args, "dict()"));
  return Value::dict(std::move(d));
}

Result<Value> global_raise_exception(Interpreter& interp, const CallArgs& args) {
  std::string message = args.positional.empty() ? "" : py_str(args.positional[0]);
  return interp.raise_from_template(std::move(message));
}

// transformers' strftime_now(fmt) = datetime.now().strftime(fmt); CPython hands the format to
// the C library's strftime, so glibc's strftime gives the same text.
Result<Value> global_strftime_now(Interpreter& interp, const CallArgs& args) {
  STRATA_ASSIGN_OR_RETURN(auto a, bind_args(args, "strftime_now", {"format"}, 1));
  if (!a[0]->is_string())
    return type_error("strftime() argument 1 must be str, not " + std::string(a[0]->type_name()));
  const std::string& format = a[0]->as_string();
  if (format.find('\0') != std::string::npos) return type_error("embedded null character");
  std::tm tm{};
  if (interp.options().now) {
    tm = *interp.options().now;
    std::tm copy = tm;
    time_t t = timegm(&copy);  // fills tm_wday/tm_yday for the pinned date
    gmtime_r(&t, &tm);
  } else {
    time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  if (format.empty()) return Value::string("");
  for (size_t size = 256 + format.size() * 16; size <= interp.options().max_output_bytes + 256;
       size *= 4) {
    std::string buf(size, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
    if (n > 0) {
      buf.resize(n);
      return Value::string(std::move(buf));
    }
  }
  return Value::string("");
}

}  // namespace

Dict make_globals() {
  Dict d;
  const auto add = [&](const char* name, GlobalFn fn) {
    d.items.emplace_back(Value::string(name),
                         Value::callable(std::make_shared<GlobalFunction>(name, fn)));
  };
  add("range", global_range);
  add("namespace", global_namespace);
  add("dict", global_dict);
  add("raise_exception", global_raise_exception);
  add("strftime_now", global_strftime_now);
  return d;
}

}  // namespace strata::jinja
