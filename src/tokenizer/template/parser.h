// Tokens → Program (ast.h). Statements live in parser.cc, expressions in parser_expr.cc, following
// jinja2's grammar and precedence (filters and tests bind tighter than arithmetic, `~` between `+`
// and `*`). Unknown filters/tests and tags keel does not implement are a Status naming the construct
// and line, never a silent fallback. Used by ChatTemplate::compile only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/template/ast.h"
#include "tokenizer/template/lexer.h"

namespace keel::tokenizer::jinja {

Result<Program> parse_template(std::string_view source, const LexOptions& options = {});

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Result<Program> parse();

  // Statements (parser.cc).
 private:
  Result<Body> parse_body(std::vector<std::string_view> end_tags, std::string* found, int open_line);
  Result<NodePtr> parse_statement();
  Result<NodePtr> parse_if(int line);
  Result<NodePtr> parse_for(int line);
  Result<NodePtr> parse_set(int line);
  Result<NodePtr> parse_macro(int line);
  Result<NodePtr> parse_call_block(int line);
  Result<NodePtr> parse_filter_block(int line);
  Result<std::vector<std::string>> parse_targets();
  Result<std::vector<std::string>> parse_params(std::vector<ExprPtr>* defaults);
  Status expect_block_end();

  // Expressions (parser_expr.cc).
 public:
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  Result<ExprPtr> parse_tuple_or_expression(bool with_condexpr = true);

 private:
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
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_filter(ExprPtr node);
  Result<ExprPtr> parse_test(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Status parse_call_args(Expr& call);

  // Token stream.
  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool at_op(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  Status expect_op(std::string_view op);
  Result<std::string> expect_name();
  Status error_here(std::string_view what) const;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;       // expression nesting (bounded against stack exhaustion)
  int loop_depth_ = 0;  // for break/continue
  int block_depth_ = 0;
};

}  // namespace keel::tokenizer::jinja
