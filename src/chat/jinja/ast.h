// Syntax tree of a parsed Jinja template (expressions and statements).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace strata::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtList = std::vector<std::unique_ptr<Stmt>>;

enum class ExprKind : uint8_t {
  kLiteral,   // literal
  kName,      // name
  kList,      // children = items
  kTuple,     // children = items
  kDict,      // children = key0, value0, key1, value1, ...
  kGetAttr,   // children[0].name
  kGetItem,   // children[0][children[1]]
  kSlice,     // children[0][children[1]:children[2]:children[3]]; missing parts are null
  kCall,      // children[0](children[1..], kwargs)
  kFilter,    // children[0] | name(children[1..], kwargs); children[0] null inside filter blocks
  kTest,      // children[0] is [not] name(children[1..], kwargs)
  kUnary,     // op children[0]: "not", "-", "+"
  kBinary,    // children[0] op children[1]: + - * / // % ** ~ and or
  kCompare,   // children[0] ops[0] children[1] ops[1] children[2] ... (a chain)
  kCondExpr,  // children[1] if children[0] else children[2] (children[2] may be null)
};

// Trees are freed iteratively (ast.cc): a tree built from hostile input, or by code other than
// the parser, must not overflow the stack when it is destroyed.
struct Expr {
  Expr() = default;
  Expr(Expr&&) = default;
  Expr& operator=(Expr&&) = default;
  ~Expr();

  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  int height = 1;  // nodes on the longest path down to a leaf; the parser bounds it
  Value literal;
  std::string name;      // variable, attribute, filter or test name; operator for kUnary/kBinary
  bool negated = false;  // kTest: "is not"
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare operators: == != < <= > >= in notin
};

enum class StmtKind : uint8_t {
  kData,         // text
  kPrint,        // {{ expr }}
  kIf,           // branches (cond, body) ..., else_body
  kFor,          // for targets in expr [if cond] body else else_body
  kSet,          // set targets = expr, or set targets[0].attr = expr
  kSetBlock,     // set targets[0] [| filters] body endset
  kMacro,        // macro name(params) body
  kCallBlock,    // call(params) expr body
  kFilterBlock,  // filter filters body
  kBreak,
  kContinue,
  kScope,  // body rendered as is ({% generation %} passthrough)
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  Stmt() = default;
  Stmt(Stmt&&) = default;
  Stmt& operator=(Stmt&&) = default;
  ~Stmt();

  StmtKind kind = StmtKind::kData;
  int line = 0;
  std::string text;                  // kData text; kMacro name
  std::string attr;                  // kSet namespace attribute (set ns.attr = ...)
  ExprPtr expr;                      // value / iterable / call expression
  ExprPtr cond;                      // kFor loop filter
  std::vector<std::string> targets;  // loop or set targets (more than one = tuple unpacking)
  std::vector<ExprPtr> filters;  // kFilterBlock / kSetBlock filter chain (kFilter with no input)
  std::vector<std::pair<ExprPtr, StmtList>> branches;  // kIf
  StmtList body;
  StmtList else_body;
  std::vector<MacroParam> params;  // kMacro / kCallBlock caller params
};

}  // namespace strata::jinja
