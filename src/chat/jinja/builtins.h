// Builtin filters, tests, methods and globals of the interpreter (jinja2's defaults plus the
// globals transformers adds), and the argument binding they share.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/value.h"

namespace strata::jinja {

using BoundArgs = std::vector<std::optional<Value>>;

// Binds call arguments to parameter `names` the way Python does (positional first, then by
// keyword); the first `required` parameters must be given. `what` names the callee in errors.
Result<BoundArgs> bind_args(const CallArgs& args, std::string_view what,
                            std::initializer_list<std::string_view> names, size_t required = 0);

// Argument conversions with Python-like errors.
Result<int64_t> arg_int(const std::optional<Value>& v, int64_t fallback, std::string_view what);
Result<std::string> arg_string(const std::optional<Value>& v, std::string fallback,
                               std::string_view what);
bool arg_bool(const std::optional<Value>& v, bool fallback);

// jinja2 filters; unknown names fail with "unsupported filter 'name'".
Result<Value> run_filter(Interpreter& interp, std::string_view name, const Value& input,
                         const CallArgs& args);
// jinja2 tests; unknown names fail with "unsupported test 'name'".
Result<bool> run_test(Interpreter& interp, std::string_view name, const Value& input,
                      const CallArgs& args);

// Attribute lookup of Python methods on str/dict/list (`"a".upper`, `d.items`): a bound method,
// an undefined that fails as unsafe when used (mutating methods, `_private` names, as jinja2's
// ImmutableSandboxedEnvironment does), or nullopt when there is no such method.
std::optional<Value> lookup_method(const Value& self, std::string_view name);
Result<Value> run_method(Interpreter& interp, const Value& self, std::string_view name,
                         const CallArgs& args);

// range, namespace, dict, raise_exception, strftime_now, cycler-free jinja2 globals.
Dict make_globals();

// Python's printf-style `format % args` (%s %r %d %i %f %x %%); a tuple supplies several.
Result<std::string> percent_format(const std::string& format, const Value& args);

// Python str(x) for filters that stringify (join, string, trim, ...).
inline std::string to_text(const Value& v) { return py_str(v); }

}  // namespace strata::jinja
