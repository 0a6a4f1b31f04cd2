// Internal to the Jinja parser: the Parser class shared by parser.cc (statements) and
// expression_parser.cc (expressions). Not part of the public API.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/parser.h"

namespace strata::jinja::internal {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<StmtList> parse_all() {
    std::string end;
    STRATA_ASSIGN_OR_RETURN(StmtList body, parse_body({}, &end));
    return body;
  }

 private:
  // --- token helpers -------------------------------------------------------------------------
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const {
    return cur().type == TokenType::kOperator && cur().text == op;
  }
  bool is_name(std::string_view name) const {
    return cur().type == TokenType::kName && cur().text == name;
  }
  bool accept_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kData:
        return "template data";
      case TokenType::kVariableBegin:
        return "'{{'";
      case TokenType::kVariableEnd:
        return "'}}'";
      case TokenType::kBlockBegin:
        return "'{%'";
      case TokenType::kBlockEnd:
        return "'%}'";
      case TokenType::kEof:
        return "end of template";
      case TokenType::kString:
        return "string literal";
      case TokenType::kInteger:
      case TokenType::kFloat:
        return "number " + t.text;
      default:
        return "'" + t.text + "'";
    }
  }
  Error error_at(const Token& t, const std::string& what) const { return error_at(t.line, what); }
  static Error error_at(int line, const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument, "line " + std::to_string(line) + ": " + what);
  }
  Status expect_op(std::string_view op) {
    if (accept_op(op)) return ok_status();
    return error_at(cur(), "expected '" + std::string(op) + "', got " + describe(cur()));
  }
  Status expect_block_end() {
    if (cur().type == TokenType::kBlockEnd) {
      next();
      return ok_status();
    }
    return error_at(cur(), "expected end of statement '%}', got " + describe(cur()));
  }
  Result<std::string> expect_name() {
    if (cur().type != TokenType::kName)
      return error_at(cur(), "expected a name, got " + describe(cur()));
    std::string name = cur().text;
    next();
    return name;
  }
  ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // RAII guard against deep nesting (stack exhaustion on hostile input).
  struct DepthGuard {
    explicit DepthGuard(int* d) : depth(d) { ++*depth; }
    ~DepthGuard() { --*depth; }
    int* depth;
  };
  Status check_depth() const {
    if (depth_ > kMaxParseDepth)
      return error_at(cur(),
                      "template nests deeper than " + std::to_string(kMaxParseDepth) + " levels");
    return ok_status();
  }

  // Sets e's height from its finished subtrees and refuses a tree taller than kMaxParseDepth.
  // Recursion depth alone does not bound the tree: left-associative chains (`1 + 1 + ...`,
  // `x.a.a...`, `x|f|f...`, `f()()...`) are built in a loop, one level per link, and evaluating
  // the tree recurses once per level.
  Result<ExprPtr> finish(ExprPtr e);

  // Statements (parser.cc).
  // Parses until a block tag whose name is in end_tags; leaves the position after that name and
  // stores the name in *end. An empty end_tags means parse to the end of the template.
  Result<StmtList> parse_body(std::initializer_list<std::string_view> end_tags, std::string* end);
  Result<std::unique_ptr<Stmt>> parse_statement();
  Result<std::unique_ptr<Stmt>> parse_if(std::unique_ptr<Stmt> s);
  // Assignment targets: `a`, `a, b`, `(a, b)`; with_namespace also allows `ns.attr`.
  Status parse_targets(Stmt* s, bool with_namespace);
  Result<std::unique_ptr<Stmt>> parse_for(std::unique_ptr<Stmt> s);
  Result<std::unique_ptr<Stmt>> parse_set(std::unique_ptr<Stmt> s);
  Status parse_params(std::vector<MacroParam>* params);
  Result<std::unique_ptr<Stmt>> parse_macro(std::unique_ptr<Stmt> s);
  Result<std::unique_ptr<Stmt>> parse_call_block(std::unique_ptr<Stmt> s);
  Result<std::unique_ptr<Stmt>> parse_filter_block(std::unique_ptr<Stmt> s);
  Status parse_filter_chain(Stmt* s);

  // Expressions (expression_parser.cc), following jinja2/parser.py precedence.
  bool at_tuple_end(std::initializer_list<std::string_view> extra_end) const;
  // jinja2 parse_tuple: comma-separated expressions; a single one without comma is itself.
  Result<ExprPtr> parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                              bool explicit_parens);
  Result<ExprPtr> parse_expression(bool with_condexpr);
  Result<ExprPtr> binary(std::string op, ExprPtr left, ExprPtr right, int line);
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr target, int line);
  // Parses "(args, kw=value)" into e->children (after any existing ones) and e->kwargs.
  Status parse_call_args(Expr* e);
  Result<ExprPtr> parse_call(ExprPtr callee);
  // `| name` or `| name(args)`; input may be null (filter blocks, set blocks).
  Result<ExprPtr> parse_filter(ExprPtr input);
  Result<ExprPtr> parse_test(ExprPtr input);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace strata::jinja::internal
