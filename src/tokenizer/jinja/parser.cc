#include "tokenizer/jinja/parser.h"

#include <initializer_list>
#include <string_view>

namespace strata::jinja {
namespace {

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
  Error error_at(const Token& t, const std::string& what) const {
    return make_error(ErrorCode::kInvalidArgument, "line " + std::to_string(t.line) + ": " + what);
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

  // --- statements ----------------------------------------------------------------------------
  // Parses until a block tag whose name is in end_tags; leaves the position after that name and
  // stores the name in *end. An empty end_tags means parse to the end of the template.
  Result<StmtList> parse_body(std::initializer_list<std::string_view> end_tags, std::string* end) {
    StmtList body;
    DepthGuard guard(&depth_);
    STRATA_RETURN_IF_ERROR(check_depth());
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::kEof) {
        if (end_tags.size() == 0) return body;
        std::string names;
        for (auto n : end_tags) names += (names.empty() ? "'" : " or '") + std::string(n) + "'";
        return error_at(t, "unexpected end of template, expected " + names);
      }
      if (t.type == TokenType::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kData;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokenType::kVariableBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kPrint;
        s->line = t.line;
        STRATA_ASSIGN_OR_RETURN(s->expr, parse_tuple(true, {}, false));
        if (cur().type != TokenType::kVariableEnd)
          return error_at(cur(), "expected end of print statement '}}', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::kBlockBegin) {
        next();
        if (cur().type != TokenType::kName)
          return error_at(cur(), "expected a statement name, got " + describe(cur()));
        for (auto tag : end_tags) {
          if (cur().text == tag) {
            *end = cur().text;
            next();
            return body;
          }
        }
        STRATA_ASSIGN_OR_RETURN(auto stmt, parse_statement());
        body.push_back(std::move(stmt));
      } else {
        return error_at(t, "unexpected " + describe(t));
      }
    }
  }

  Result<std::unique_ptr<Stmt>> parse_statement() {
    const Token& t = cur();
    auto s = std::make_unique<Stmt>();
    s->line = t.line;
    std::string name = t.text;
    next();
    if (name == "if") return parse_if(std::move(s));
    if (name == "for") return parse_for(std::move(s));
    if (name == "set") return parse_set(std::move(s));
    if (name == "macro") return parse_macro(std::move(s));
    if (name == "call") return parse_call_block(std::move(s));
    if (name == "filter") return parse_filter_block(std::move(s));
    if (name == "generation") {
      s->kind = StmtKind::kScope;
      STRATA_RETURN_IF_ERROR(expect_block_end());
      std::string end;
      STRATA_ASSIGN_OR_RETURN(s->body, parse_body({"endgeneration"}, &end));
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return error_at(t, "'" + name + "' outside of a for loop");
      s->kind = name == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
    static constexpr std::string_view kUnsupported[] = {"include", "import",   "from", "extends",
                                                        "block",   "with",     "do",   "autoescape",
                                                        "trans",   "pluralize"};
    for (auto u : kUnsupported)
      if (name == u) return error_at(t, "unsupported statement '" + name + "'");
    return error_at(t, "unknown statement '" + name + "'");
  }

  Result<std::unique_ptr<Stmt>> parse_if(std::unique_ptr<Stmt> s) {
    s->kind = StmtKind::kIf;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(false, {}, false));
      STRATA_RETURN_IF_ERROR(expect_block_end());
      std::string end;
      STRATA_ASSIGN_OR_RETURN(StmtList body, parse_body({"elif", "else", "endif"}, &end));
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") continue;
      if (end == "else") {
        STRATA_RETURN_IF_ERROR(expect_block_end());
        STRATA_ASSIGN_OR_RETURN(s->else_body, parse_body({"endif"}, &end));
      }
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
  }

  // Assignment targets: `a`, `a, b`, `(a, b)`; with_namespace also allows `ns.attr`.
  Status parse_targets(Stmt* s, bool with_namespace) {
    bool paren = accept_op("(");
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::string name, expect_name());
      if (with_namespace && !paren && s->targets.empty() && is_op(".")) {
        next();
        STRATA_ASSIGN_OR_RETURN(s->attr, expect_name());
        s->targets.push_back(name);
        return ok_status();
      }
      s->targets.push_back(name);
      if (!accept_op(",")) break;
      if (paren && is_op(")")) break;
    }
    if (paren) STRATA_RETURN_IF_ERROR(expect_op(")"));
    return ok_status();
  }

  Result<std::unique_ptr<Stmt>> parse_for(std::unique_ptr<Stmt> s) {
    s->kind = StmtKind::kFor;
    STRATA_RETURN_IF_ERROR(parse_targets(s.get(), false));
    if (!is_name("in")) return error_at(cur(), "expected 'in' in for loop, got " + describe(cur()));
    next();
    STRATA_ASSIGN_OR_RETURN(s->expr, parse_tuple(false, {"recursive", "if"}, false));
    if (is_name("if")) {
      next();
      STRATA_ASSIGN_OR_RETURN(s->cond, parse_expression(true));
    }
    if (is_name("recursive")) return error_at(cur(), "unsupported construct 'recursive' for loop");
    STRATA_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    ++loop_depth_;
    auto body = parse_body({"endfor", "else"}, &end);
    --loop_depth_;
    if (!body.ok()) return body.error();
    s->body = std::move(body).value();
    if (end == "else") {
      STRATA_RETURN_IF_ERROR(expect_block_end());
      STRATA_ASSIGN_OR_RETURN(s->else_body, parse_body({"endfor"}, &end));
    }
    STRATA_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Result<std::unique_ptr<Stmt>> parse_set(std::unique_ptr<Stmt> s) {
    STRATA_RETURN_IF_ERROR(parse_targets(s.get(), true));
    if (accept_op("=")) {
      s->kind = StmtKind::kSet;
      STRATA_ASSIGN_OR_RETURN(s->expr, parse_tuple(true, {}, false));
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
    s->kind = StmtKind::kSetBlock;
    if (s->targets.size() != 1) return error_at(cur(), "a set block assigns exactly one name");
    STRATA_RETURN_IF_ERROR(parse_filter_chain(s.get()));
    STRATA_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    STRATA_ASSIGN_OR_RETURN(s->body, parse_body({"endset"}, &end));
    STRATA_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Status parse_params(std::vector<MacroParam>* params) {
    STRATA_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      if (!params->empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
      MacroParam p;
      STRATA_ASSIGN_OR_RETURN(p.name, expect_name());
      if (accept_op("=")) {
        STRATA_ASSIGN_OR_RETURN(p.default_value, parse_expression(true));
      } else if (!params->empty() && params->back().default_value) {
        return error_at(cur(), "non-default argument '" + p.name + "' follows default argument");
      }
      params->push_back(std::move(p));
    }
    next();
    return ok_status();
  }

  Result<std::unique_ptr<Stmt>> parse_macro(std::unique_ptr<Stmt> s) {
    s->kind = StmtKind::kMacro;
    STRATA_ASSIGN_OR_RETURN(s->text, expect_name());
    STRATA_RETURN_IF_ERROR(parse_params(&s->params));
    STRATA_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    auto body = parse_body({"endmacro"}, &end);
    loop_depth_ = saved_loops;
    if (!body.ok()) return body.error();
    s->body = std::move(body).value();
    if (cur().type == TokenType::kName && cur().text == s->text) next();  // {% endmacro name %}
    STRATA_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Result<std::unique_ptr<Stmt>> parse_call_block(std::unique_ptr<Stmt> s) {
    s->kind = StmtKind::kCallBlock;
    if (is_op("(")) STRATA_RETURN_IF_ERROR(parse_params(&s->params));
    STRATA_ASSIGN_OR_RETURN(s->expr, parse_expression(true));
    if (s->expr->kind != ExprKind::kCall) return error_at(cur(), "expected a call after 'call'");
    STRATA_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    auto body = parse_body({"endcall"}, &end);
    loop_depth_ = saved_loops;
    if (!body.ok()) return body.error();
    s->body = std::move(body).value();
    STRATA_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Result<std::unique_ptr<Stmt>> parse_filter_block(std::unique_ptr<Stmt> s) {
    s->kind = StmtKind::kFilterBlock;
    STRATA_ASSIGN_OR_RETURN(ExprPtr first, parse_filter(nullptr));
    s->filters.push_back(std::move(first));
    STRATA_RETURN_IF_ERROR(parse_filter_chain(s.get()));
    STRATA_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    STRATA_ASSIGN_OR_RETURN(s->body, parse_body({"endfilter"}, &end));
    STRATA_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Status parse_filter_chain(Stmt* s) {
    while (accept_op("|")) {
      STRATA_ASSIGN_OR_RETURN(ExprPtr f, parse_filter(nullptr));
      s->filters.push_back(std::move(f));
    }
    return ok_status();
  }

  // --- expressions ---------------------------------------------------------------------------
  bool at_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    TokenType t = cur().type;
    if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || t == TokenType::kEof ||
        is_op(")"))
      return true;
    if (t == TokenType::kName)
      for (auto e : extra_end)
        if (cur().text == e) return true;
    return false;
  }

  // jinja2 parse_tuple: comma-separated expressions; a single one without comma is itself.
  Result<ExprPtr> parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                              bool explicit_parens) {
    int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
      if (at_tuple_end(extra_end)) break;
      STRATA_ASSIGN_OR_RETURN(ExprPtr e, parse_expression(with_condexpr));
      items.push_back(std::move(e));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens)
        return error_at(cur(), "expected an expression, got " + describe(cur()));
    }
    auto e = make(ExprKind::kTuple, line);
    e->children = std::move(items);
    return e;
  }

  Result<ExprPtr> parse_expression(bool with_condexpr) {
    DepthGuard guard(&depth_);
    STRATA_RETURN_IF_ERROR(check_depth());
    if (!with_condexpr) return parse_or();
    int line = cur().line;
    STRATA_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
    while (is_name("if")) {
      next();
      auto cond = make(ExprKind::kCondExpr, line);
      STRATA_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
      ExprPtr otherwise;
      if (is_name("else")) {
        next();
        STRATA_ASSIGN_OR_RETURN(otherwise, parse_expression(true));
      }
      cond->children.push_back(std::move(test));
      cond->children.push_back(std::move(expr));
      cond->children.push_back(std::move(otherwise));
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(ExprKind::kBinary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  Result<ExprPtr> parse_or() {
    STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (is_name("or")) {
      int line = cur().line;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
      left = binary("or", std::move(left), std::move(right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (is_name("and")) {
      int line = cur().line;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
      left = binary("and", std::move(left), std::move(right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (is_name("not")) {
      DepthGuard guard(&depth_);
      STRATA_RETURN_IF_ERROR(check_depth());
      auto e = make(ExprKind::kUnary, cur().line);
      e->name = "not";
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
      e->children.push_back(std::move(operand));
      return e;
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    int line = cur().line;
    STRATA_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    ExprPtr chain;
    while (true) {
      std::string op;
      if (cur().type == TokenType::kOperator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!chain) {
        chain = make(ExprKind::kCompare, line);
        chain->children.push_back(std::move(first));
      }
      STRATA_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
      chain->ops.push_back(op);
      chain->children.push_back(std::move(operand));
    }
    return chain ? std::move(chain) : std::move(first);
  }

  Result<ExprPtr> parse_math1() {
    STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
    while (is_op("+") || is_op("-")) {
      std::string op = cur().text;
      int line = cur().line;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
      left = binary(op, std::move(left), std::move(right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_concat() {
    STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
    while (is_op("~")) {
      int line = cur().line;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
      left = binary("~", std::move(left), std::move(right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
    STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().text;
      int line = cur().line;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
      left = binary(op, std::move(left), std::move(right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_pow() {
    STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
      int line = cur().line;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
      left = binary("**", std::move(left), std::move(right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(&depth_);
    STRATA_RETURN_IF_ERROR(check_depth());
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(ExprKind::kUnary, cur().line);
      node->name = cur().text;
      next();
      STRATA_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node->children.push_back(std::move(operand));
    } else {
      STRATA_ASSIGN_OR_RETURN(node, parse_primary());
    }
    STRATA_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (with_filter) {
      while (true) {
        if (is_op("|")) {
          next();
          STRATA_ASSIGN_OR_RETURN(node, parse_filter(std::move(node)));
        } else if (is_name("is")) {
          next();
          STRATA_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
        } else if (is_op("(")) {
          STRATA_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
        } else {
          break;
        }
      }
    }
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& t = cur();
    int line = t.line;
    switch (t.type) {
      case TokenType::kName: {
        auto e = make(ExprKind::kLiteral, line);
        if (t.text == "true" || t.text == "True") {
          e->literal = Value::boolean(true);
        } else if (t.text == "false" || t.text == "False") {
          e->literal = Value::boolean(false);
        } else if (t.text == "none" || t.text == "None") {
          e->literal = Value::none();
        } else {
          e->kind = ExprKind::kName;
          e->name = t.text;
        }
        next();
        return e;
      }
      case TokenType::kString: {
        std::string text;
        while (cur().type == TokenType::kString) {  // adjacent literals concatenate
          text += cur().text;
          next();
        }
        auto e = make(ExprKind::kLiteral, line);
        e->literal = Value::string(std::move(text));
        return e;
      }
      case TokenType::kInteger:
      case TokenType::kFloat: {
        auto e = make(ExprKind::kLiteral, line);
        e->literal = t.type == TokenType::kInteger ? Value::integer(t.int_value)
                                                   : Value::floating(t.float_value);
        next();
        return e;
      }
      default:
        break;
    }
    if (accept_op("(")) {
      STRATA_ASSIGN_OR_RETURN(ExprPtr e, parse_tuple(true, {}, true));
      STRATA_RETURN_IF_ERROR(expect_op(")"));
      return e;
    }
    if (accept_op("[")) {
      auto e = make(ExprKind::kList, line);
      while (!is_op("]")) {
        if (!e->children.empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
        if (is_op("]")) break;
        STRATA_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
        e->children.push_back(std::move(item));
      }
      next();
      return e;
    }
    if (accept_op("{")) {
      auto e = make(ExprKind::kDict, line);
      while (!is_op("}")) {
        if (!e->children.empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
        if (is_op("}")) break;
        STRATA_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
        STRATA_RETURN_IF_ERROR(expect_op(":"));
        STRATA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        e->children.push_back(std::move(key));
        e->children.push_back(std::move(value));
      }
      next();
      return e;
    }
    return error_at(t, "unexpected " + describe(t));
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      int line = cur().line;
      if (accept_op(".")) {
        if (cur().type == TokenType::kInteger) {  // x.0 is x[0]
          auto e = make(ExprKind::kGetItem, line);
          auto index = make(ExprKind::kLiteral, line);
          index->literal = Value::integer(cur().int_value);
          next();
          e->children.push_back(std::move(node));
          e->children.push_back(std::move(index));
          node = std::move(e);
          continue;
        }
        auto e = make(ExprKind::kGetAttr, line);
        STRATA_ASSIGN_OR_RETURN(e->name, expect_name());
        e->children.push_back(std::move(node));
        node = std::move(e);
      } else if (accept_op("[")) {
        STRATA_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node), line));
      } else if (is_op("(")) {
        STRATA_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    bool is_slice = false;
    if (!is_op(":")) {
      STRATA_ASSIGN_OR_RETURN(parts[0], parse_expression(true));
    }
    if (accept_op(":")) {
      is_slice = true;
      if (!is_op("]") && !is_op(":")) {
        STRATA_ASSIGN_OR_RETURN(parts[1], parse_expression(true));
      }
      if (accept_op(":") && !is_op("]")) {
        STRATA_ASSIGN_OR_RETURN(parts[2], parse_expression(true));
      }
    }
    STRATA_RETURN_IF_ERROR(expect_op("]"));
    auto e = make(is_slice ? ExprKind::kSlice : ExprKind::kGetItem, line);
    e->children.push_back(std::move(target));
    e->children.push_back(std::move(parts[0]));
    if (is_slice) {
      e->children.push_back(std::move(parts[1]));
      e->children.push_back(std::move(parts[2]));
    }
    return e;
  }

  // Parses "(args, kw=value)" into e->children (after any existing ones) and e->kwargs.
  Status parse_call_args(Expr* e) {
    STRATA_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!is_op(")")) {
      if (!first) STRATA_RETURN_IF_ERROR(expect_op(","));
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**"))
        return error_at(cur(), "unsupported construct '*args'/'**kwargs' in a call");
      if (cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
          peek().text == "=") {
        std::string name = cur().text;
        next();
        next();
        STRATA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        e->kwargs.emplace_back(std::move(name), std::move(value));
      } else {
        if (!e->kwargs.empty())
          return error_at(cur(), "positional argument follows keyword argument");
        STRATA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        e->children.push_back(std::move(value));
      }
    }
    next();
    return ok_status();
  }

  Result<ExprPtr> parse_call(ExprPtr callee) {
    auto e = make(ExprKind::kCall, cur().line);
    e->children.push_back(std::move(callee));
    STRATA_RETURN_IF_ERROR(parse_call_args(e.get()));
    return e;
  }

  // `| name` or `| name(args)`; input may be null (filter blocks, set blocks).
  Result<ExprPtr> parse_filter(ExprPtr input) {
    auto e = make(ExprKind::kFilter, cur().line);
    STRATA_ASSIGN_OR_RETURN(e->name, expect_name());
    while (accept_op(".")) {
      STRATA_ASSIGN_OR_RETURN(std::string part, expect_name());
      e->name += "." + part;
    }
    e->children.push_back(std::move(input));
    if (is_op("(")) STRATA_RETURN_IF_ERROR(parse_call_args(e.get()));
    return e;
  }

  Result<ExprPtr> parse_test(ExprPtr input) {
    auto e = make(ExprKind::kTest, cur().line);
    if (is_name("not")) {
      e->negated = true;
      next();
    }
    STRATA_ASSIGN_OR_RETURN(e->name, expect_name());
    e->children.push_back(std::move(input));
    if (is_op("(")) {
      STRATA_RETURN_IF_ERROR(parse_call_args(e.get()));
    } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
                cur().type == TokenType::kInteger || cur().type == TokenType::kFloat ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) return error_at(cur(), "you cannot chain multiple tests with 'is'");
      STRATA_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
      STRATA_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
      e->children.push_back(std::move(arg));
    }
    return e;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<StmtList> parse_template(std::vector<Token> tokens) {
  Parser parser(std::move(tokens));
  return parser.parse_all();
}

}  // namespace strata::jinja
