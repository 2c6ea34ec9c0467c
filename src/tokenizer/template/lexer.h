// Template source → tokens, with jinja2's whitespace rules: `{%- -%}` strip, trim_blocks (drop the
// newline after a block or comment tag), lstrip_blocks (drop indentation before one), newlines
// normalised to "\n" and one trailing newline dropped. Comments vanish; raw blocks become text.
// Called by the parser (parser.h) only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace keel::tokenizer::jinja {

enum class TokenType {
  kText,        // literal template text (after whitespace control)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // value unescaped
  kInt,
  kFloat,
  kOperator,    // + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { } ;
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;  // text, name, operator or unescaped string value
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

struct LexOptions {
  bool trim_blocks = true;     // as transformers sets them
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// kInvalidArgument for syntax errors (unterminated tags/strings/comments, unbalanced brackets), with
// the line number.
Result<std::vector<Token>> lex(std::string_view source, const LexOptions& options);

}  // namespace keel::tokenizer::jinja
