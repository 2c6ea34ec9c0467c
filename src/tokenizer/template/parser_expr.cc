#include "tokenizer/template/filters.h"
#include "tokenizer/template/is_tests.h"
#include "tokenizer/template/parser.h"

namespace keel::tokenizer::jinja {
namespace {

constexpr int kMaxExprDepth = 128;

ExprPtr make_expr(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

ExprPtr make_binary(Expr::Kind kind, std::string op, ExprPtr l, ExprPtr r, int line) {
  auto e = make_expr(kind, line);
  e->name = std::move(op);
  e->children.push_back(std::move(l));
  e->children.push_back(std::move(r));
  return e;
}

// Bounds recursion so hostile input cannot exhaust the stack.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  bool exceeded() const { return depth_ > kMaxExprDepth; }

 private:
  int& depth_;
};

}  // namespace

Result<ExprPtr> Parser::parse_tuple_or_expression(bool with_condexpr) {
  const int line = peek().line;
  KEEL_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(with_condexpr));
  if (!at_op(",")) return first;
  auto tuple = make_expr(Expr::Kind::kTuple, line);
  tuple->children.push_back(std::move(first));
  while (skip_op(",")) {
    const Token& t = peek();
    if (t.type == TokenType::kVarEnd || t.type == TokenType::kBlockEnd || at_op(")")) break;
    if (t.type == TokenType::kName && (t.text == "if" || t.text == "in")) break;
    KEEL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
    tuple->children.push_back(std::move(item));
  }
  return tuple;
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(depth_);
  if (guard.exceeded()) {
    return make_error(ErrorCode::kResourceExhausted, "line {}: expression nested more than {} deep", peek().line,
                      kMaxExprDepth);
  }
  if (!with_condexpr) return parse_or();
  KEEL_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
  while (at_name("if")) {
    const int line = next().line;
    KEEL_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
    ExprPtr otherwise;
    if (skip_name("else")) {
      KEEL_ASSIGN_OR_RETURN(otherwise, parse_expression());
    }
    auto e = make_expr(Expr::Kind::kCond, line);
    e->children.push_back(std::move(expr));
    e->children.push_back(std::move(cond));
    e->children.push_back(std::move(otherwise));
    expr = std::move(e);
  }
  return expr;
}

Result<ExprPtr> Parser::parse_or() {
  KEEL_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (at_name("or")) {
    const int line = next().line;
    KEEL_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    left = make_binary(Expr::Kind::kOr, "or", std::move(left), std::move(right), line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  KEEL_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (at_name("and")) {
    const int line = next().line;
    KEEL_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    left = make_binary(Expr::Kind::kAnd, "and", std::move(left), std::move(right), line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (at_name("not")) {
    DepthGuard guard(depth_);
    if (guard.exceeded()) {
      return make_error(ErrorCode::kResourceExhausted, "line {}: expression nested more than {} deep", peek().line,
                        kMaxExprDepth);
    }
    const int line = next().line;
    KEEL_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    auto e = make_expr(Expr::Kind::kNot, line);
    e->children.push_back(std::move(operand));
    return e;
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
  const int line = peek().line;
  KEEL_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
  ExprPtr cmp;
  while (true) {
    std::string op;
    const Token& t = peek();
    if (t.type == TokenType::kOperator &&
        (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
      op = next().text;
    } else if (at_name("in")) {
      next();
      op = "in";
    } else if (at_name("not") && peek(1).type == TokenType::kName && peek(1).text == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make_expr(Expr::Kind::kCompare, line);
      cmp->children.push_back(std::move(first));
    }
    KEEL_ASSIGN_OR_RETURN(ExprPtr rhs, parse_math1());
    cmp->ops.push_back(std::move(op));
    cmp->children.push_back(std::move(rhs));
  }
  return cmp ? std::move(cmp) : std::move(first);
}

Result<ExprPtr> Parser::parse_math1() {
  KEEL_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
  while (at_op("+") || at_op("-")) {
    const Token& op = next();
    KEEL_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
    left = make_binary(Expr::Kind::kBinary, op.text, std::move(left), std::move(right), op.line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_concat() {
  KEEL_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
  while (at_op("~")) {
    const int line = next().line;
    KEEL_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
    left = make_binary(Expr::Kind::kBinary, "~", std::move(left), std::move(right), line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_math2() {
  KEEL_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
  while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
    const Token& op = next();
    KEEL_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
    left = make_binary(Expr::Kind::kBinary, op.text, std::move(left), std::move(right), op.line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_pow() {
  KEEL_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
  while (at_op("**")) {
    const int line = next().line;
    KEEL_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
    left = make_binary(Expr::Kind::kBinary, "**", std::move(left), std::move(right), line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  DepthGuard guard(depth_);
  if (guard.exceeded()) {
    return make_error(ErrorCode::kResourceExhausted, "line {}: expression nested more than {} deep", peek().line,
                      kMaxExprDepth);
  }
  ExprPtr node;
  if (at_op("-") || at_op("+")) {
    const Token& op = next();
    KEEL_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    node = make_expr(op.text == "-" ? Expr::Kind::kNeg : Expr::Kind::kPos, op.line);
    node->children.push_back(std::move(operand));
  } else {
    KEEL_ASSIGN_OR_RETURN(node, parse_primary());
  }
  KEEL_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
  if (with_filter) {
    KEEL_ASSIGN_OR_RETURN(node, parse_filter_expr(std::move(node)));
  }
  return node;
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& t = peek();
  const int line = t.line;
  if (t.type == TokenType::kName) {
    const std::string& n = next().text;
    auto e = make_expr(Expr::Kind::kLiteral, line);
    if (n == "true" || n == "True") {
      e->value = Value::boolean(true);
    } else if (n == "false" || n == "False") {
      e->value = Value::boolean(false);
    } else if (n == "none" || n == "None") {
      e->value = Value::none();
    } else {
      e->kind = Expr::Kind::kName;
      e->name = n;
    }
    return e;
  }
  if (t.type == TokenType::kString) {
    std::string s;
    while (peek().type == TokenType::kString) s += next().text;  // adjacent literals concatenate
    auto e = make_expr(Expr::Kind::kLiteral, line);
    e->value = Value::string(std::move(s));
    return e;
  }
  if (t.type == TokenType::kInt || t.type == TokenType::kFloat) {
    auto e = make_expr(Expr::Kind::kLiteral, line);
    e->value = t.type == TokenType::kInt ? Value::integer(t.int_value) : Value::number(t.float_value);
    next();
    return e;
  }
  if (skip_op("(")) {
    if (skip_op(")")) return make_expr(Expr::Kind::kTuple, line);
    KEEL_ASSIGN_OR_RETURN(ExprPtr inner, parse_expression());
    if (at_op(",")) {
      auto tuple = make_expr(Expr::Kind::kTuple, line);
      tuple->children.push_back(std::move(inner));
      while (skip_op(",")) {
        if (at_op(")")) break;
        KEEL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
        tuple->children.push_back(std::move(item));
      }
      inner = std::move(tuple);
    }
    KEEL_RETURN_IF_ERROR(expect_op(")"));
    return inner;
  }
  if (skip_op("[")) {
    auto list = make_expr(Expr::Kind::kList, line);
    while (!at_op("]")) {
      if (!list->children.empty()) KEEL_RETURN_IF_ERROR(expect_op(","));
      if (at_op("]")) break;
      KEEL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
      list->children.push_back(std::move(item));
    }
    next();
    return list;
  }
  if (skip_op("{")) {
    auto dict = make_expr(Expr::Kind::kDict, line);
    while (!at_op("}")) {
      if (!dict->children.empty()) KEEL_RETURN_IF_ERROR(expect_op(","));
      if (at_op("}")) break;
      KEEL_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
      KEEL_RETURN_IF_ERROR(expect_op(":"));
      KEEL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      dict->children.push_back(std::move(key));
      dict->children.push_back(std::move(value));
    }
    next();
    return dict;
  }
  return error_here("an expression");
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".")) {
      const int line = next().line;
      if (peek().type == TokenType::kInt) {
        auto e = make_expr(Expr::Kind::kItem, line);
        auto index = make_expr(Expr::Kind::kLiteral, line);
        index->value = Value::integer(next().int_value);
        e->children.push_back(std::move(node));
        e->children.push_back(std::move(index));
        node = std::move(e);
        continue;
      }
      KEEL_ASSIGN_OR_RETURN(std::string attr, expect_name());
      auto e = make_expr(Expr::Kind::kAttr, line);
      e->name = std::move(attr);
      e->children.push_back(std::move(node));
      node = std::move(e);
    } else if (at_op("[")) {
      KEEL_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
    } else if (at_op("(")) {
      auto call = make_expr(Expr::Kind::kCall, peek().line);
      call->children.push_back(std::move(node));
      KEEL_RETURN_IF_ERROR(parse_call_args(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  const int line = next().line;  // [
  ExprPtr parts[3];
  int n_colons = 0;
  while (!at_op("]")) {
    if (skip_op(":")) {
      if (++n_colons > 2) return error_here("']'");
      continue;
    }
    if (parts[n_colons]) return error_here("':' or ']'");
    KEEL_ASSIGN_OR_RETURN(parts[n_colons], parse_expression());
  }
  next();
  if (n_colons == 0) {
    if (!parts[0]) return make_error(ErrorCode::kInvalidArgument, "line {}: empty subscript", line);
    auto e = make_expr(Expr::Kind::kItem, line);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(parts[0]));
    return e;
  }
  auto e = make_expr(Expr::Kind::kSlice, line);
  e->children.push_back(std::move(node));
  for (auto& part : parts) e->children.push_back(std::move(part));
  return e;
}

Status Parser::parse_call_args(Expr& call) {
  next();  // (
  bool first = true;
  while (!at_op(")")) {
    if (!first) KEEL_RETURN_IF_ERROR(expect_op(","));
    first = false;
    if (at_op(")")) break;
    if (at_op("*") || at_op("**")) {
      return make_error(ErrorCode::kUnsupported, "line {}: *args/**kwargs in calls are not supported", peek().line);
    }
    if (peek().type == TokenType::kName && peek(1).type == TokenType::kOperator && peek(1).text == "=") {
      std::string name = next().text;
      next();
      KEEL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      call.kwargs.emplace_back(std::move(name), std::move(value));
      continue;
    }
    if (!call.kwargs.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "line {}: positional argument after keyword argument",
                        peek().line);
    }
    KEEL_ASSIGN_OR_RETURN(ExprPtr arg, parse_expression());
    call.children.push_back(std::move(arg));
  }
  next();
  return Status::ok_status();
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_op("|")) {
      KEEL_ASSIGN_OR_RETURN(node, parse_filter(std::move(node)));
    } else if (at_name("is")) {
      KEEL_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
    } else if (at_op("(")) {
      auto call = make_expr(Expr::Kind::kCall, peek().line);
      call->children.push_back(std::move(node));
      KEEL_RETURN_IF_ERROR(parse_call_args(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_filter(ExprPtr node) {
  skip_op("|");
  const int line = peek().line;
  KEEL_ASSIGN_OR_RETURN(std::string name, expect_name());
  while (skip_op(".")) {
    KEEL_ASSIGN_OR_RETURN(std::string part, expect_name());
    name += "." + part;
  }
  auto e = make_expr(Expr::Kind::kFilter, line);
  e->unknown = !is_known_filter(name);
  e->name = std::move(name);
  e->children.push_back(std::move(node));
  if (at_op("(")) KEEL_RETURN_IF_ERROR(parse_call_args(*e));
  return e;
}

Result<ExprPtr> Parser::parse_test(ExprPtr node) {
  const int line = next().line;  // is
  const bool negated = skip_name("not");
  KEEL_ASSIGN_OR_RETURN(std::string name, expect_name());
  auto e = make_expr(Expr::Kind::kTest, line);
  e->unknown = !is_known_test(name);
  e->name = std::move(name);
  e->negated = negated;
  e->children.push_back(std::move(node));
  if (at_op("(")) {
    KEEL_RETURN_IF_ERROR(parse_call_args(*e));
  } else {
    const Token& t = peek();
    const bool arg_start = t.type == TokenType::kString || t.type == TokenType::kInt || t.type == TokenType::kFloat ||
                           at_op("[") || at_op("{") ||
                           (t.type == TokenType::kName && t.text != "else" && t.text != "or" && t.text != "and");
    if (arg_start) {
      KEEL_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
      KEEL_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
      e->children.push_back(std::move(arg));
    }
  }
  return e;
}

}  // namespace keel::tokenizer::jinja
