// Expression half of the Jinja parser (jinja2 parse_tuple ... parse_primary).
#include <algorithm>

#include "chat/jinja/parser_internal.h"

namespace strata::jinja::internal {

Result<ExprPtr> Parser::finish(ExprPtr e) {
  int below = 0;
  for (const ExprPtr& child : e->children)
    if (child) below = std::max(below, child->height);
  for (const auto& [name, value] : e->kwargs)
    if (value) below = std::max(below, value->height);
  e->height = below + 1;
  if (e->height > kMaxParseDepth)
    return error_at(e->line, "expression nests deeper than " + std::to_string(kMaxParseDepth) +
                                 " levels; split long chains of operators, filters, attributes "
                                 "or calls with {% set %}");
  return e;
}

bool Parser::at_tuple_end(std::initializer_list<std::string_view> extra_end) const {
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
Result<ExprPtr> Parser::parse_tuple(bool with_condexpr,
                                    std::initializer_list<std::string_view> extra_end,
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
    if (!explicit_parens) return error_at(cur(), "expected an expression, got " + describe(cur()));
  }
  auto e = make(ExprKind::kTuple, line);
  e->children = std::move(items);
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
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
    STRATA_ASSIGN_OR_RETURN(expr, finish(std::move(cond)));
  }
  return expr;
}

Result<ExprPtr> Parser::binary(std::string op, ExprPtr left, ExprPtr right, int line) {
  auto e = make(ExprKind::kBinary, line);
  e->name = std::move(op);
  e->children.push_back(std::move(left));
  e->children.push_back(std::move(right));
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_or() {
  STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (is_name("or")) {
    int line = cur().line;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    STRATA_ASSIGN_OR_RETURN(left, binary("or", std::move(left), std::move(right), line));
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (is_name("and")) {
    int line = cur().line;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    STRATA_ASSIGN_OR_RETURN(left, binary("and", std::move(left), std::move(right), line));
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(&depth_);
    STRATA_RETURN_IF_ERROR(check_depth());
    auto e = make(ExprKind::kUnary, cur().line);
    e->name = "not";
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    e->children.push_back(std::move(operand));
    return finish(std::move(e));
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
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
  if (!chain) return first;
  return finish(std::move(chain));
}

Result<ExprPtr> Parser::parse_math1() {
  STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  while (is_op("+") || is_op("-")) {
    std::string op = cur().text;
    int line = cur().line;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    STRATA_ASSIGN_OR_RETURN(left, binary(op, std::move(left), std::move(right), line));
  }
  return left;
}

Result<ExprPtr> Parser::parse_concat() {
  STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  while (is_op("~")) {
    int line = cur().line;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    STRATA_ASSIGN_OR_RETURN(left, binary("~", std::move(left), std::move(right), line));
  }
  return left;
}

Result<ExprPtr> Parser::parse_math2() {
  STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = cur().text;
    int line = cur().line;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    STRATA_ASSIGN_OR_RETURN(left, binary(op, std::move(left), std::move(right), line));
  }
  return left;
}

Result<ExprPtr> Parser::parse_pow() {
  STRATA_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  while (is_op("**")) {
    int line = cur().line;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    STRATA_ASSIGN_OR_RETURN(left, binary("**", std::move(left), std::move(right), line));
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  DepthGuard guard(&depth_);
  STRATA_RETURN_IF_ERROR(check_depth());
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make(ExprKind::kUnary, cur().line);
    node->name = cur().text;
    next();
    STRATA_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    node->children.push_back(std::move(operand));
    STRATA_ASSIGN_OR_RETURN(node, finish(std::move(node)));
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

Result<ExprPtr> Parser::parse_primary() {
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
    return finish(std::move(e));
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
    return finish(std::move(e));
  }
  return error_at(t, "unexpected " + describe(t));
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
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
        STRATA_ASSIGN_OR_RETURN(node, finish(std::move(e)));
        continue;
      }
      auto e = make(ExprKind::kGetAttr, line);
      STRATA_ASSIGN_OR_RETURN(e->name, expect_name());
      e->children.push_back(std::move(node));
      STRATA_ASSIGN_OR_RETURN(node, finish(std::move(e)));
    } else if (accept_op("[")) {
      STRATA_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node), line));
    } else if (is_op("(")) {
      STRATA_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr target, int line) {
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
  return finish(std::move(e));
}

// Parses "(args, kw=value)" into e->children (after any existing ones) and e->kwargs.
Status Parser::parse_call_args(Expr* e) {
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

Result<ExprPtr> Parser::parse_call(ExprPtr callee) {
  auto e = make(ExprKind::kCall, cur().line);
  e->children.push_back(std::move(callee));
  STRATA_RETURN_IF_ERROR(parse_call_args(e.get()));
  return finish(std::move(e));
}

// `| name` or `| name(args)`; input may be null (filter blocks, set blocks).
Result<ExprPtr> Parser::parse_filter(ExprPtr input) {
  auto e = make(ExprKind::kFilter, cur().line);
  STRATA_ASSIGN_OR_RETURN(e->name, expect_name());
  while (accept_op(".")) {
    STRATA_ASSIGN_OR_RETURN(std::string part, expect_name());
    e->name += "." + part;
  }
  e->children.push_back(std::move(input));
  if (is_op("(")) STRATA_RETURN_IF_ERROR(parse_call_args(e.get()));
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_test(ExprPtr input) {
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
              cur().type == TokenType::kInteger || cur().type == TokenType::kFloat || is_op("[") ||
              is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) return error_at(cur(), "you cannot chain multiple tests with 'is'");
    STRATA_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
    STRATA_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
    e->children.push_back(std::move(arg));
  }
  return finish(std::move(e));
}

}  // namespace strata::jinja::internal
