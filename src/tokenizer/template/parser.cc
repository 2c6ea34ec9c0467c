#include "tokenizer/template/parser.h"

#include <algorithm>

namespace keel::tokenizer::jinja {
namespace {

constexpr int kMaxBlockDepth = 256;

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::kText: return "template text";
    case TokenType::kVarBegin: return "'{{'";
    case TokenType::kVarEnd: return "'}}'";
    case TokenType::kBlockBegin: return "'{%'";
    case TokenType::kBlockEnd: return "'%}'";
    case TokenType::kEof: return "end of template";
    case TokenType::kString: return "a string";
    case TokenType::kInt:
    case TokenType::kFloat: return "a number";
    default: return "'" + t.text + "'";
  }
}

}  // namespace

Result<Program> parse_template(std::string_view source, const LexOptions& options) {
  KEEL_ASSIGN_OR_RETURN(std::vector<Token> tokens, lex(source, options));
  return Parser(std::move(tokens)).parse();
}

const Token& Parser::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const Token& Parser::next() {
  const Token& t = tokens_[pos_];
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return t;
}

bool Parser::at_op(std::string_view op) const { return peek().type == TokenType::kOperator && peek().text == op; }
bool Parser::at_name(std::string_view name) const { return peek().type == TokenType::kName && peek().text == name; }

bool Parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

Status Parser::error_here(std::string_view what) const {
  return make_error(ErrorCode::kInvalidArgument, "line {}: expected {}, got {}", peek().line, what, describe(peek()));
}

Status Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) return error_here(fmt::format("'{}'", op));
  return Status::ok_status();
}

Result<std::string> Parser::expect_name() {
  if (peek().type != TokenType::kName) return error_here("a name");
  return next().text;
}

Status Parser::expect_block_end() {
  if (peek().type != TokenType::kBlockEnd) return error_here("'%}'");
  next();
  return Status::ok_status();
}

namespace {

// jinja2 rejects an unknown filter or test at compile time unless it sits in an if statement or a
// conditional expression ("soft" frames; loop and macro bodies are not soft), where it fails only if
// evaluated. keel follows the same rule so that it accepts exactly the templates jinja2 accepts.
Status check_expr_names(const Expr* e, bool soft) {
  if (e == nullptr) return Status::ok_status();
  if (e->kind == Expr::Kind::kCond) soft = true;
  if (e->unknown && !soft) {
    return make_error(ErrorCode::kUnsupported, "line {}: {} '{}' is not supported", e->line,
                      e->kind == Expr::Kind::kFilter ? "filter" : "test", e->name);
  }
  for (const ExprPtr& c : e->children) KEEL_RETURN_IF_ERROR(check_expr_names(c.get(), soft));
  for (const auto& [name, c] : e->kwargs) KEEL_RETURN_IF_ERROR(check_expr_names(c.get(), soft));
  return Status::ok_status();
}

Status check_body_names(const Body& body, bool soft) {
  for (const NodePtr& n : body) {
    switch (n->kind) {
      case Node::Kind::kIf:
        for (const auto& [cond, branch] : n->branches) {
          KEEL_RETURN_IF_ERROR(check_expr_names(cond.get(), true));
          KEEL_RETURN_IF_ERROR(check_body_names(branch, true));
        }
        break;
      case Node::Kind::kFor:
        KEEL_RETURN_IF_ERROR(check_expr_names(n->expr.get(), soft));
        KEEL_RETURN_IF_ERROR(check_expr_names(n->cond.get(), false));
        KEEL_RETURN_IF_ERROR(check_body_names(n->body, false));
        KEEL_RETURN_IF_ERROR(check_body_names(n->else_body, false));
        break;
      case Node::Kind::kMacro:
      case Node::Kind::kCallBlock:
        for (const ExprPtr& d : n->defaults) KEEL_RETURN_IF_ERROR(check_expr_names(d.get(), false));
        KEEL_RETURN_IF_ERROR(check_expr_names(n->expr.get(), soft));
        KEEL_RETURN_IF_ERROR(check_body_names(n->body, false));
        break;
      default:
        KEEL_RETURN_IF_ERROR(check_expr_names(n->expr.get(), soft));
        KEEL_RETURN_IF_ERROR(check_body_names(n->body, false));
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<Program> Parser::parse() {
  std::string found;
  KEEL_ASSIGN_OR_RETURN(Body body, parse_body({}, &found, 0));
  KEEL_RETURN_IF_ERROR(check_body_names(body, false));
  return Program{std::move(body)};
}

Result<Body> Parser::parse_body(std::vector<std::string_view> end_tags, std::string* found, int open_line) {
  if (++block_depth_ > kMaxBlockDepth) {
    return make_error(ErrorCode::kResourceExhausted, "line {}: blocks nested more than {} deep", peek().line,
                      kMaxBlockDepth);
  }
  Body body;
  while (true) {
    const Token& t = peek();
    if (t.type == TokenType::kEof) {
      if (end_tags.empty()) break;
      return make_error(ErrorCode::kInvalidArgument, "line {}: missing '{}' for the tag opened on line {}", t.line,
                        end_tags.back(), open_line);
    }
    if (t.type == TokenType::kText) {
      auto node = std::make_unique<Node>();
      node->kind = Node::Kind::kText;
      node->line = t.line;
      node->text = next().text;
      body.push_back(std::move(node));
    } else if (t.type == TokenType::kVarBegin) {
      auto node = std::make_unique<Node>();
      node->kind = Node::Kind::kOutput;
      node->line = next().line;
      KEEL_ASSIGN_OR_RETURN(node->expr, parse_tuple_or_expression());
      if (peek().type != TokenType::kVarEnd) return error_here("'}}'");
      next();
      body.push_back(std::move(node));
    } else if (t.type == TokenType::kBlockBegin) {
      const Token& tag = peek(1);
      if (tag.type == TokenType::kName &&
          std::find(end_tags.begin(), end_tags.end(), std::string_view(tag.text)) != end_tags.end()) {
        next();
        *found = next().text;
        break;
      }
      KEEL_ASSIGN_OR_RETURN(NodePtr node, parse_statement());
      body.push_back(std::move(node));
    } else {
      return error_here("template text or a tag");
    }
  }
  --block_depth_;
  return body;
}

Result<NodePtr> Parser::parse_statement() {
  const int line = next().line;  // {%
  if (peek().type != TokenType::kName) return error_here("a tag name");
  const std::string tag = next().text;
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "call") return parse_call_block(line);
  if (tag == "filter") return parse_filter_block(line);
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) {
      return make_error(ErrorCode::kInvalidArgument, "line {}: '{}' outside of a for loop", line, tag);
    }
    KEEL_RETURN_IF_ERROR(expect_block_end());
    auto node = std::make_unique<Node>();
    node->kind = tag == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
    node->line = line;
    return node;
  }
  if (tag == "generation") {
    KEEL_RETURN_IF_ERROR(expect_block_end());
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::kScope;
    node->line = line;
    std::string found;
    KEEL_ASSIGN_OR_RETURN(node->body, parse_body({"endgeneration"}, &found, line));
    KEEL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }
  static constexpr std::string_view kUnsupported[] = {"include", "extends", "block", "import", "from", "with",
                                                      "autoescape", "do", "trans", "pluralize"};
  if (std::find(std::begin(kUnsupported), std::end(kUnsupported), tag) != std::end(kUnsupported)) {
    return make_error(ErrorCode::kUnsupported, "line {}: the '{}' tag is not supported in chat templates", line,
                      tag);
  }
  return make_error(ErrorCode::kInvalidArgument, "line {}: unexpected tag '{}'", line, tag);
}

Result<NodePtr> Parser::parse_if(int line) {
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::kIf;
  node->line = line;
  KEEL_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple_or_expression());
  while (true) {
    KEEL_RETURN_IF_ERROR(expect_block_end());
    std::string found;
    KEEL_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}, &found, line));
    node->branches.emplace_back(std::move(cond), std::move(body));
    if (found == "endif") break;
    if (found == "elif") {
      KEEL_ASSIGN_OR_RETURN(cond, parse_tuple_or_expression());
      continue;
    }
    KEEL_RETURN_IF_ERROR(expect_block_end());
    KEEL_ASSIGN_OR_RETURN(Body else_body, parse_body({"endif"}, &found, line));
    node->branches.emplace_back(nullptr, std::move(else_body));
    break;
  }
  KEEL_RETURN_IF_ERROR(expect_block_end());
  return node;
}

Result<std::vector<std::string>> Parser::parse_targets() {
  std::vector<std::string> targets;
  const bool paren = skip_op("(");
  do {
    if (paren && at_op(")")) break;
    KEEL_ASSIGN_OR_RETURN(std::string name, expect_name());
    targets.push_back(std::move(name));
  } while (skip_op(","));
  if (paren) KEEL_RETURN_IF_ERROR(expect_op(")"));
  return targets;
}

Result<NodePtr> Parser::parse_for(int line) {
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::kFor;
  node->line = line;
  KEEL_ASSIGN_OR_RETURN(node->targets, parse_targets());
  if (!skip_name("in")) return error_here("'in'");
  KEEL_ASSIGN_OR_RETURN(node->expr, parse_tuple_or_expression(false));
  if (skip_name("if")) {
    KEEL_ASSIGN_OR_RETURN(node->cond, parse_expression());
  }
  if (at_name("recursive")) {
    return make_error(ErrorCode::kUnsupported, "line {}: recursive for loops are not supported", line);
  }
  KEEL_RETURN_IF_ERROR(expect_block_end());
  ++loop_depth_;
  std::string found;
  auto body = parse_body({"else", "endfor"}, &found, line);
  --loop_depth_;
  if (!body.ok()) return body.status();
  node->body = std::move(body).value();
  if (found == "else") {
    KEEL_RETURN_IF_ERROR(expect_block_end());
    const int saved = loop_depth_;
    loop_depth_ = 0;  // break/continue in a loop's else block belong to no loop
    auto else_body = parse_body({"endfor"}, &found, line);
    loop_depth_ = saved;
    if (!else_body.ok()) return else_body.status();
    node->else_body = std::move(else_body).value();
  }
  KEEL_RETURN_IF_ERROR(expect_block_end());
  return node;
}

Result<NodePtr> Parser::parse_set(int line) {
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::kSet;
  node->line = line;
  KEEL_ASSIGN_OR_RETURN(std::string first, expect_name());
  node->targets.push_back(std::move(first));
  if (skip_op(".")) {
    KEEL_ASSIGN_OR_RETURN(node->attr, expect_name());
  } else {
    while (skip_op(",")) {
      KEEL_ASSIGN_OR_RETURN(std::string name, expect_name());
      node->targets.push_back(std::move(name));
    }
  }
  if (skip_op("=")) {
    KEEL_ASSIGN_OR_RETURN(node->expr, parse_tuple_or_expression());
    KEEL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }
  if (node->targets.size() != 1 || !node->attr.empty()) return error_here("'='");
  node->kind = Node::Kind::kSetBlock;
  if (at_op("|")) {
    KEEL_ASSIGN_OR_RETURN(node->expr, parse_filter_expr(nullptr));
  }
  KEEL_RETURN_IF_ERROR(expect_block_end());
  std::string found;
  KEEL_ASSIGN_OR_RETURN(node->body, parse_body({"endset"}, &found, line));
  KEEL_RETURN_IF_ERROR(expect_block_end());
  return node;
}

Result<std::vector<std::string>> Parser::parse_params(std::vector<ExprPtr>* defaults) {
  std::vector<std::string> params;
  if (!skip_op("(")) return params;
  while (!at_op(")")) {
    if (!params.empty()) KEEL_RETURN_IF_ERROR(expect_op(","));
    if (at_op(")")) break;
    KEEL_ASSIGN_OR_RETURN(std::string name, expect_name());
    params.push_back(std::move(name));
    ExprPtr def;
    if (skip_op("=")) {
      KEEL_ASSIGN_OR_RETURN(def, parse_expression());
    }
    defaults->push_back(std::move(def));
  }
  next();
  return params;
}

Result<NodePtr> Parser::parse_macro(int line) {
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::kMacro;
  node->line = line;
  KEEL_ASSIGN_OR_RETURN(node->name, expect_name());
  if (!at_op("(")) return error_here("'('");
  KEEL_ASSIGN_OR_RETURN(node->params, parse_params(&node->defaults));
  KEEL_RETURN_IF_ERROR(expect_block_end());
  const int saved = loop_depth_;
  loop_depth_ = 0;
  std::string found;
  auto body = parse_body({"endmacro"}, &found, line);
  loop_depth_ = saved;
  if (!body.ok()) return body.status();
  node->body = std::move(body).value();
  if (peek().type == TokenType::kName && peek().text == node->name) next();
  KEEL_RETURN_IF_ERROR(expect_block_end());
  return node;
}

Result<NodePtr> Parser::parse_call_block(int line) {
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::kCallBlock;
  node->line = line;
  KEEL_ASSIGN_OR_RETURN(node->params, parse_params(&node->defaults));
  KEEL_ASSIGN_OR_RETURN(node->expr, parse_expression());
  if (node->expr->kind != Expr::Kind::kCall) {
    return make_error(ErrorCode::kInvalidArgument, "line {}: a call block needs a call expression", line);
  }
  KEEL_RETURN_IF_ERROR(expect_block_end());
  const int saved = loop_depth_;
  loop_depth_ = 0;
  std::string found;
  auto body = parse_body({"endcall"}, &found, line);
  loop_depth_ = saved;
  if (!body.ok()) return body.status();
  node->body = std::move(body).value();
  KEEL_RETURN_IF_ERROR(expect_block_end());
  return node;
}

Result<NodePtr> Parser::parse_filter_block(int line) {
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::kFilterBlock;
  node->line = line;
  // `{% filter upper | trim %}`: the first filter has no `|` before it.
  KEEL_ASSIGN_OR_RETURN(ExprPtr chain, parse_filter(nullptr));
  KEEL_ASSIGN_OR_RETURN(node->expr, parse_filter_expr(std::move(chain)));
  KEEL_RETURN_IF_ERROR(expect_block_end());
  std::string found;
  KEEL_ASSIGN_OR_RETURN(node->body, parse_body({"endfilter"}, &found, line));
  KEEL_RETURN_IF_ERROR(expect_block_end());
  return node;
}

}  // namespace keel::tokenizer::jinja
