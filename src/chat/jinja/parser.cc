#include "chat/jinja/parser.h"

#include "chat/jinja/parser_internal.h"

namespace strata::jinja {
namespace internal {

// Parses until a block tag whose name is in end_tags; leaves the position after that name and
// stores the name in *end. An empty end_tags means parse to the end of the template.
Result<StmtList> Parser::parse_body(std::initializer_list<std::string_view> end_tags,
                                    std::string* end) {
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

Result<std::unique_ptr<Stmt>> Parser::parse_statement() {
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

Result<std::unique_ptr<Stmt>> Parser::parse_if(std::unique_ptr<Stmt> s) {
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
Status Parser::parse_targets(Stmt* s, bool with_namespace) {
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

Result<std::unique_ptr<Stmt>> Parser::parse_for(std::unique_ptr<Stmt> s) {
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

Result<std::unique_ptr<Stmt>> Parser::parse_set(std::unique_ptr<Stmt> s) {
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

Status Parser::parse_params(std::vector<MacroParam>* params) {
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

Result<std::unique_ptr<Stmt>> Parser::parse_macro(std::unique_ptr<Stmt> s) {
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

Result<std::unique_ptr<Stmt>> Parser::parse_call_block(std::unique_ptr<Stmt> s) {
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

Result<std::unique_ptr<Stmt>> Parser::parse_filter_block(std::unique_ptr<Stmt> s) {
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

Status Parser::parse_filter_chain(Stmt* s) {
  while (accept_op("|")) {
    STRATA_ASSIGN_OR_RETURN(ExprPtr f, parse_filter(nullptr));
    s->filters.push_back(std::move(f));
  }
  return ok_status();
}

}  // namespace internal

Result<StmtList> parse_template(std::vector<Token> tokens) {
  internal::Parser parser(std::move(tokens));
  return parser.parse_all();
}

}  // namespace strata::jinja
