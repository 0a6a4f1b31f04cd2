#include "chat/jinja/interpreter.h"

#include <cmath>

#include "chat/jinja/builtins.h"
#include "chat/jinja/parser.h"
#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

// Deepest container nesting a template may build or receive (printing and destroying values
// recurse over it).
constexpr uint32_t kMaxValueDepth = 256;

Error type_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// A macro defined with {% macro %}, or the `caller` of a {% call %} block. It holds its defining
// scope weakly: frames never own themselves through a macro stored in them.
class MacroCallable : public Callable {
 public:
  MacroCallable(const Stmt* stmt, std::weak_ptr<Frame> closure, std::weak_ptr<Frame> fallback,
                std::string name)
      : stmt_(stmt),
        closure_(std::move(closure)),
        fallback_(std::move(fallback)),
        name_(std::move(name)) {}

  Result<Value> call(Interpreter& interp, CallArgs args, int line) const override {
    std::shared_ptr<Frame> closure = closure_.lock();
    if (!closure) closure = fallback_.lock();
    Value caller;
    bool has_caller = false;
    for (size_t i = 0; i < args.keyword.size(); ++i) {
      if (args.keyword[i].first == "caller") {
        caller = args.keyword[i].second;
        has_caller = true;
        args.keyword.erase(args.keyword.begin() + static_cast<long>(i));
        break;
      }
    }
    return interp.call_macro(*stmt_, closure, std::move(args), has_caller ? &caller : nullptr,
                             line);
  }
  std::string describe() const override { return "<Macro '" + name_ + "'>"; }

 private:
  const Stmt* stmt_;
  std::weak_ptr<Frame> closure_;
  std::weak_ptr<Frame> fallback_;
  std::string name_;
};

// loop.cycle(a, b, ...): the argument at loop.index0 modulo their count. Like jinja2's
// LoopContext, it follows the loop's current index.
class LoopCycle : public Callable {
 public:
  explicit LoopCycle(std::shared_ptr<const int64_t> index0) : index0_(std::move(index0)) {}
  Result<Value> call(Interpreter&, CallArgs args, int) const override {
    if (args.positional.empty()) return type_error("no items for cycling given");
    return args.positional[static_cast<size_t>(*index0_) % args.positional.size()];
  }
  std::string describe() const override { return "<bound method LoopContext.cycle>"; }

 private:
  std::shared_ptr<const int64_t> index0_;
};

}  // namespace

const Value* Frame::lookup(std::string_view name) const {
  for (const Frame* f = this; f; f = f->parent.get())
    for (const auto& [k, v] : f->vars)
      if (k == name) return &v;
  return nullptr;
}

void Frame::set(std::string_view name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(value));
}

Result<ValueList> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return ValueList{};
    case Value::Kind::kList:
      return value.as_list();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [k, v] : value.as_dict().items) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      const std::string& s = value.as_string();
      auto offsets = utf8_offsets(s);
      for (size_t i = 0; i + 1 < offsets.size(); ++i)
        chars.push_back(Value::string(s.substr(offsets[i], offsets[i + 1] - offsets[i])));
      return chars;
    }
    default:
      return type_error("'" + std::string(value.type_name()) + "' object is not iterable");
  }
}

Interpreter::Interpreter(const RenderOptions& options) : options_(options) {
  globals_ = std::make_shared<Frame>();
  for (auto& [k, v] : make_globals().items)
    globals_->vars.emplace_back(k.as_string(), std::move(v));
}

Result<std::string> Interpreter::render(const StmtList& body, const Dict& context) {
  auto frame = std::make_shared<Frame>();
  frame->parent = globals_;
  for (const auto& [k, v] : context.items) {
    if (!k.is_string()) continue;
    if (v.depth() > kMaxValueDepth) return type_error("template context nests too deeply");
    frame->set(k.as_string(), v);
  }
  std::string out;
  STRATA_RETURN_IF_ERROR(exec_body(body, frame, &out));
  return out;
}

Status Interpreter::check_size(size_t size) const {
  if (size > options_.max_output_bytes)
    return make_error(ErrorCode::kOutOfRange,
                      "output size limit (" + std::to_string(options_.max_output_bytes) +
                          " bytes) exceeded; raise RenderOptions::max_output_bytes");
  return ok_status();
}

Status Interpreter::charge_iterations(int64_t n) {
  iterations_ += n;
  if (iterations_ > options_.max_loop_iterations)
    return make_error(ErrorCode::kOutOfRange,
                      "loop iteration limit (" + std::to_string(options_.max_loop_iterations) +
                          ") exceeded; raise RenderOptions::max_loop_iterations");
  return ok_status();
}

Result<ValueList> Interpreter::iterate_values(const Value& value) {
  // A string becomes one value per code point; refuse before materializing a huge list.
  if (value.is_string() &&
      value.as_string().size() > static_cast<size_t>(options_.max_loop_iterations))
    STRATA_RETURN_IF_ERROR(check_list_size(utf8_length(value.as_string())));
  STRATA_ASSIGN_OR_RETURN(ValueList items, iterate(value));
  STRATA_RETURN_IF_ERROR(charge_steps(static_cast<int64_t>(items.size())));
  return items;
}

Status Interpreter::check_list_size(size_t items) const {
  if (items > static_cast<size_t>(options_.max_loop_iterations))
    return make_error(ErrorCode::kOutOfRange,
                      "list size limit (" + std::to_string(options_.max_loop_iterations) +
                          " items, RenderOptions::max_loop_iterations) exceeded");
  return ok_status();
}

Status Interpreter::charge_steps(int64_t n) {
  steps_ += n;
  if (steps_ > options_.max_steps)
    return make_error(ErrorCode::kOutOfRange, "evaluation step limit (" +
                                                  std::to_string(options_.max_steps) +
                                                  ") exceeded; raise RenderOptions::max_steps");
  return ok_status();
}

Error Interpreter::raise_from_template(std::string message) {
  raised_by_template_ = true;
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Error Interpreter::at_line(const Error& error, int line) const {
  if (raised_by_template_ || error.message.rfind("line ", 0) == 0) return error;
  return make_error(error.code, "line " + std::to_string(line) + ": " + error.message);
}

Status Interpreter::append_output(std::string* out, std::string_view text) const {
  STRATA_RETURN_IF_ERROR(check_size(out->size() + text.size()));
  out->append(text);
  return ok_status();
}

// ---- statements --------------------------------------------------------------------------------

// Set and filter blocks render their body in an inner scope, as jinja2 does (frame.inner()):
// assignments inside do not leak out.
std::shared_ptr<Frame> Interpreter::child_frame(const std::shared_ptr<Frame>& parent) {
  auto frame = std::make_shared<Frame>();
  frame->parent = parent;
  return frame;
}

Result<Flow> Interpreter::exec_body(const StmtList& body, const std::shared_ptr<Frame>& frame,
                                    std::string* out) {
  for (const auto& stmt : body) {
    STRATA_ASSIGN_OR_RETURN(Flow flow, exec(*stmt, frame, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Flow> Interpreter::exec(const Stmt& stmt, const std::shared_ptr<Frame>& frame,
                               std::string* out) {
  if (nesting_depth_ >= kMaxNestingDepth)
    return at_line(make_error(ErrorCode::kOutOfRange,
                              "recursion depth limit exceeded (statements nest too deeply)"),
                   stmt.line);
  ++nesting_depth_;
  auto result = exec_inner(stmt, frame, out);
  --nesting_depth_;
  return result;
}

Result<Flow> Interpreter::exec_inner(const Stmt& stmt, const std::shared_ptr<Frame>& frame,
                                     std::string* out) {
  switch (stmt.kind) {
    case StmtKind::kData:
      STRATA_RETURN_IF_ERROR(append_output(out, stmt.text));
      return Flow::kNormal;
    case StmtKind::kPrint: {
      STRATA_ASSIGN_OR_RETURN(Value v, eval(*stmt.expr, frame));
      auto status = append_output(out, py_str(v));
      if (!status.ok()) return at_line(status.error(), stmt.line);
      return Flow::kNormal;
    }
    case StmtKind::kIf:
      for (const auto& [cond, body] : stmt.branches) {
        STRATA_ASSIGN_OR_RETURN(Value v, eval(*cond, frame));
        if (v.truthy()) return exec_body(body, frame, out);
      }
      return exec_body(stmt.else_body, frame, out);
    case StmtKind::kFor:
      return exec_for(stmt, frame, out);
    case StmtKind::kSet: {
      STRATA_ASSIGN_OR_RETURN(Value v, eval(*stmt.expr, frame));
      STRATA_RETURN_IF_ERROR(exec_set(stmt, frame, std::move(v)));
      return Flow::kNormal;
    }
    case StmtKind::kSetBlock: {
      std::string text;
      STRATA_RETURN_IF_ERROR(exec_body(stmt.body, child_frame(frame), &text));
      STRATA_ASSIGN_OR_RETURN(
          Value v, apply_filter_chain(stmt.filters, Value::string(std::move(text)), frame));
      STRATA_RETURN_IF_ERROR(exec_set(stmt, frame, std::move(v)));
      return Flow::kNormal;
    }
    case StmtKind::kMacro: {
      auto macro = std::make_shared<MacroCallable>(&stmt, frame, globals_, stmt.text);
      frame->set(stmt.text, Value::callable(std::move(macro)));
      return Flow::kNormal;
    }
    case StmtKind::kCallBlock: {
      const Expr& call_expr = *stmt.expr;
      STRATA_ASSIGN_OR_RETURN(Value callee, eval(*call_expr.children[0], frame));
      STRATA_ASSIGN_OR_RETURN(CallArgs args, eval_args(call_expr, 1, frame));
      auto caller = std::make_shared<MacroCallable>(&stmt, frame, globals_, "caller");
      args.keyword.emplace_back("caller", Value::callable(std::move(caller)));
      STRATA_ASSIGN_OR_RETURN(Value result, call(callee, std::move(args), stmt.line));
      auto status = append_output(out, py_str(result));
      if (!status.ok()) return at_line(status.error(), stmt.line);
      return Flow::kNormal;
    }
    case StmtKind::kFilterBlock: {
      std::string text;
      STRATA_RETURN_IF_ERROR(exec_body(stmt.body, child_frame(frame), &text));
      STRATA_ASSIGN_OR_RETURN(
          Value v, apply_filter_chain(stmt.filters, Value::string(std::move(text)), frame));
      auto status = append_output(out, py_str(v));
      if (!status.ok()) return at_line(status.error(), stmt.line);
      return Flow::kNormal;
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kScope:
      return exec_body(stmt.body, frame, out);
  }
  return Flow::kNormal;
}

Result<Value> Interpreter::apply_filter_chain(const std::vector<ExprPtr>& filters, Value input,
                                              const std::shared_ptr<Frame>& frame) {
  for (const auto& f : filters) {
    STRATA_ASSIGN_OR_RETURN(CallArgs args, eval_args(*f, 1, frame));
    STRATA_ASSIGN_OR_RETURN(input, apply_filter(f->name, input, args, f->line));
  }
  return input;
}

Status Interpreter::assign_targets(const std::vector<std::string>& targets, const Value& value,
                                   Frame* frame, int line) {
  if (targets.size() == 1) {
    frame->set(targets[0], value);
    return ok_status();
  }
  auto items = iterate(value);
  if (!items.ok() || value.is_undefined()) {
    return at_line(
        type_error("cannot unpack non-iterable " + std::string(value.type_name()) + " object"),
        line);
  }
  if (items->size() != targets.size()) {
    return at_line(
        type_error(items->size() > targets.size()
                       ? "too many values to unpack (expected " + std::to_string(targets.size()) +
                             ")"
                       : "not enough values to unpack (expected " + std::to_string(targets.size()) +
                             ", got " + std::to_string(items->size()) + ")"),
        line);
  }
  for (size_t i = 0; i < targets.size(); ++i) frame->set(targets[i], (*items)[i]);
  return ok_status();
}

Status Interpreter::exec_set(const Stmt& stmt, const std::shared_ptr<Frame>& frame, Value value) {
  if (value.depth() > kMaxValueDepth)
    return at_line(
        make_error(ErrorCode::kOutOfRange,
                   "value nests deeper than " + std::to_string(kMaxValueDepth) + " levels"),
        stmt.line);
  if (stmt.attr.empty()) return assign_targets(stmt.targets, value, frame.get(), stmt.line);
  const Value* target = frame->lookup(stmt.targets[0]);
  if (!target || !target->is_namespace())
    return at_line(type_error("can only assign attributes of a namespace() object; '" +
                              stmt.targets[0] + "' is not one"),
                   stmt.line);
  // A namespace that (indirectly) held itself would never be freed; no template needs that.
  std::vector<const Value*> pending{&value};
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    if (v->is_namespace())
      return at_line(type_error("a namespace cannot be stored inside a namespace"), stmt.line);
    if (v->is_list())
      for (const auto& item : v->as_list()) pending.push_back(&item);
    if (v->is_dict())
      for (const auto& item : v->as_dict().items) pending.push_back(&item.second);
  }
  STRATA_RETURN_IF_ERROR(charge_steps(1));
  target->namespace_dict().set(Value::string(stmt.attr), std::move(value));
  return ok_status();
}

Result<Flow> Interpreter::exec_for(const Stmt& stmt, const std::shared_ptr<Frame>& frame,
                                   std::string* out) {
  STRATA_ASSIGN_OR_RETURN(Value iterable, eval(*stmt.expr, frame));
  auto items_or = iterate_values(iterable);
  if (!items_or.ok()) return at_line(items_or.error(), stmt.line);
  ValueList items = std::move(items_or).value();
  if (stmt.cond) {
    // jinja2 filters before the loop runs, so loop.length counts only the kept items.
    ValueList kept;
    auto filter_frame = std::make_shared<Frame>();
    filter_frame->parent = frame;
    for (auto& item : items) {
      STRATA_RETURN_IF_ERROR(charge_iterations(1));
      STRATA_RETURN_IF_ERROR(assign_targets(stmt.targets, item, filter_frame.get(), stmt.line));
      STRATA_ASSIGN_OR_RETURN(Value keep, eval(*stmt.cond, filter_frame));
      if (keep.truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    // The else block runs in the enclosing scope.
    return exec_body(stmt.else_body, frame, out);
  }
  const int64_t length = static_cast<int64_t>(items.size());
  // The `loop` keys and loop.cycle are built once per loop, not per iteration.
  enum LoopKey {
    kIndex,
    kIndex0,
    kRevindex,
    kRevindex0,
    kFirst,
    kLast,
    kLength,
    kDepth,
    kDepth0,
    kCycle,
    kPrevitem,
    kNextitem,
    kKeyCount
  };
  static constexpr const char* kKeyNames[kKeyCount] = {"index",  "index0", "revindex", "revindex0",
                                                       "first",  "last",   "length",   "depth",
                                                       "depth0", "cycle",  "previtem", "nextitem"};
  Value keys[kKeyCount];
  for (int k = 0; k < kKeyCount; ++k) keys[k] = Value::string(kKeyNames[k]);
  auto cycle_index = std::make_shared<int64_t>(0);
  Value cycle = Value::callable(std::make_shared<LoopCycle>(cycle_index));
  std::shared_ptr<Frame> loop_frame;
  // jinja2 clears its "no iteration" flag at the end of the loop body, so `else` also runs when
  // every iteration left through break or continue.
  bool body_completed = false;
  for (int64_t i = 0; i < length; ++i) {
    auto status = charge_iterations(1);
    if (!status.ok()) return at_line(status.error(), stmt.line);
    const Value& item = items[static_cast<size_t>(i)];
    // Each iteration gets a fresh scope: jinja2 does not carry `set`s over to the next one.
    // Macros hold frames weakly, so the previous iteration's frame is reusable once emptied.
    if (!loop_frame || loop_frame.use_count() > 1) {
      loop_frame = std::make_shared<Frame>();
      loop_frame->parent = frame;
    } else {
      loop_frame->vars.clear();
    }
    STRATA_RETURN_IF_ERROR(assign_targets(stmt.targets, item, loop_frame.get(), stmt.line));
    *cycle_index = i;
    Dict loop;
    loop.items.reserve(kKeyCount);
    const auto put = [&](LoopKey key, Value v) {
      loop.items.emplace_back(keys[key], std::move(v));
    };
    put(kIndex, Value::integer(i + 1));
    put(kIndex0, Value::integer(i));
    put(kRevindex, Value::integer(length - i));
    put(kRevindex0, Value::integer(length - i - 1));
    put(kFirst, Value::boolean(i == 0));
    put(kLast, Value::boolean(i == length - 1));
    put(kLength, Value::integer(length));
    put(kDepth, Value::integer(1));
    put(kDepth0, Value::integer(0));
    put(kCycle, cycle);
    if (i > 0) put(kPrevitem, items[static_cast<size_t>(i - 1)]);
    if (i + 1 < length) put(kNextitem, items[static_cast<size_t>(i + 1)]);
    loop_frame->set("loop", Value::dict(std::move(loop)));
    STRATA_ASSIGN_OR_RETURN(Flow flow, exec_body(stmt.body, loop_frame, out));
    if (flow == Flow::kNormal) body_completed = true;
    if (flow == Flow::kBreak) break;
  }
  if (!body_completed) return exec_body(stmt.else_body, frame, out);
  return Flow::kNormal;
}

Result<Value> Interpreter::call_macro(const Stmt& macro, const std::shared_ptr<Frame>& closure,
                                      CallArgs args, const Value* caller, int line) {
  if (macro_depth_ >= options_.max_recursion_depth)
    return at_line(
        make_error(ErrorCode::kOutOfRange,
                   "recursion depth limit (" + std::to_string(options_.max_recursion_depth) +
                       " nested macro calls) exceeded; raise RenderOptions::max_recursion_depth"),
        line);
  auto frame = std::make_shared<Frame>();
  frame->parent = closure ? closure : globals_;
  const auto& params = macro.params;
  ValueList varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params.size()) {
      frame->set(params[i].name, std::move(args.positional[i]));
    } else {
      varargs.push_back(std::move(args.positional[i]));
    }
  }
  Dict kwargs;
  for (auto& [name, value] : args.keyword) {
    bool is_param = false;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].name != name) continue;
      if (i < args.positional.size())
        return at_line(type_error("macro '" + macro.text + "' got multiple values for argument '" +
                                  name + "'"),
                       line);
      is_param = true;
    }
    if (is_param) {
      frame->set(name, std::move(value));
    } else {
      kwargs.items.emplace_back(Value::string(name), std::move(value));
    }
  }
  // Defaults are evaluated at call time, in the macro's scope (they may use earlier arguments).
  for (size_t i = args.positional.size(); i < params.size(); ++i) {
    bool given = false;
    for (const auto& [k, v] : frame->vars) given = given || k == params[i].name;
    if (given) continue;
    if (params[i].default_value) {
      STRATA_ASSIGN_OR_RETURN(Value v, eval(*params[i].default_value, frame));
      frame->set(params[i].name, std::move(v));
    } else {
      frame->set(params[i].name,
                 Value::undefined("parameter '" + params[i].name + "' was not provided"));
    }
  }
  frame->set("varargs", Value::list(std::move(varargs), /*is_tuple=*/true));
  frame->set("kwargs", Value::dict(std::move(kwargs)));
  if (caller) frame->set("caller", *caller);
  ++macro_depth_;
  std::string text;
  auto flow = exec_body(macro.body, frame, &text);
  --macro_depth_;
  if (!flow.ok()) return flow.error();
  return Value::string(std::move(text));
}

}  // namespace strata::jinja
