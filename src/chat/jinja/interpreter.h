// Tree-walking interpreter for the Jinja statement tree, with jinja2's scoping rules and the
// sandbox limits of RenderOptions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/render_options.h"
#include "chat/jinja/value.h"

namespace strata::jinja {

// Variables of one scope; loops, macro calls and blocks get a child frame.
struct Frame {
  std::shared_ptr<Frame> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* lookup(std::string_view name) const;
  void set(std::string_view name, Value value);
};

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& options);

  // Renders `body` with `context` as the template's variables (over the builtin globals).
  Result<std::string> render(const StmtList& body, const Dict& context);

  // Shared with the builtin filters, tests, methods and callables.
  const RenderOptions& options() const { return options_; }
  Result<Value> call(const Value& callee, CallArgs args, int line);
  Result<Value> apply_filter(std::string_view name, const Value& input, const CallArgs& args,
                             int line);
  Result<bool> apply_test(std::string_view name, const Value& input, const CallArgs& args,
                          int line);
  Result<Value> get_attr(const Value& object, std::string_view name);
  Result<Value> get_item(const Value& object, const Value& key);
  // Fails when a string or list of `size` bytes/items would pass the output limit.
  Status check_size(size_t size) const;
  // Fails when a list of `items` elements would pass the size limit (max_loop_iterations).
  Status check_list_size(size_t items) const;
  // iterate() with the list size limit applied and the work charged as evaluation steps.
  Result<ValueList> iterate_values(const Value& value);
  // Charges loop iterations / evaluation steps against the limits.
  Status charge_iterations(int64_t n);
  Status charge_steps(int64_t n);
  // raise_exception(): the template's own message, reported without a line prefix.
  Error raise_from_template(std::string message);

  // Runs a macro (or a call block's caller) body with the given arguments.
  Result<Value> call_macro(const Stmt& macro, const std::shared_ptr<Frame>& closure, CallArgs args,
                           const Value* caller, int line);

 private:
  static std::shared_ptr<Frame> child_frame(const std::shared_ptr<Frame>& parent);
  Result<Flow> exec_body(const StmtList& body, const std::shared_ptr<Frame>& frame,
                         std::string* out);
  Result<Flow> exec(const Stmt& stmt, const std::shared_ptr<Frame>& frame, std::string* out);
  Result<Flow> exec_inner(const Stmt& stmt, const std::shared_ptr<Frame>& frame, std::string* out);
  Result<Flow> exec_for(const Stmt& stmt, const std::shared_ptr<Frame>& frame, std::string* out);
  Status exec_set(const Stmt& stmt, const std::shared_ptr<Frame>& frame, Value value);
  Status assign_targets(const std::vector<std::string>& targets, const Value& value, Frame* frame,
                        int line);
  Result<Value> apply_filter_chain(const std::vector<ExprPtr>& filters, Value input,
                                   const std::shared_ptr<Frame>& frame);
  Status append_output(std::string* out, std::string_view text) const;

  Result<Value> eval(const Expr& expr, const std::shared_ptr<Frame>& frame);
  Result<Value> eval_inner(const Expr& expr, const std::shared_ptr<Frame>& frame);
  Result<CallArgs> eval_args(const Expr& expr, size_t first_child,
                             const std::shared_ptr<Frame>& frame);
  Result<Value> eval_binary(const std::string& op, const Value& a, const Value& b);
  Result<bool> eval_compare(const std::string& op, const Value& a, const Value& b);
  Result<Value> eval_slice(const Value& object, const Value& start, const Value& stop,
                           const Value& step);
  // Prefixes "line N: " unless the message already has a location or came from raise_exception.
  Error at_line(const Error& error, int line) const;

  const RenderOptions& options_;
  std::shared_ptr<Frame> globals_;
  // Statements being executed plus expressions being evaluated, across macro calls: the parser
  // bounds each template's nesting, but a macro call starts that nesting again, so without one
  // shared bound 64 nested calls of a deeply nested macro would need tens of MiB of stack.
  static constexpr int kMaxNestingDepth = 1000;
  int macro_depth_ = 0;
  int nesting_depth_ = 0;
  int64_t iterations_ = 0;
  int64_t steps_ = 0;
  bool raised_by_template_ = false;
};

// Python iteration over a value: list/tuple items, dict keys, string characters; undefined
// iterates empty; anything else is "'X' object is not iterable".
Result<ValueList> iterate(const Value& value);

}  // namespace strata::jinja
