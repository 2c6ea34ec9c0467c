#include "tokenizer/template/lexer.h"

#include <cstring>

#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {
namespace {

bool is_tag_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(std::string_view src, bool keep_trailing_newline) {
  std::string out;
  out.reserve(src.size());
  for (size_t k = 0; k < src.size(); ++k) {
    if (src[k] == '\r') {
      out.push_back('\n');
      if (k + 1 < src.size() && src[k + 1] == '\n') ++k;
    } else {
      out.push_back(src[k]);
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's unicode-escape decoding of a string literal body.
Result<std::string> unescape(std::string_view body, int line) {
  std::string out;
  out.reserve(body.size());
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] != '\\' || k + 1 == body.size()) {
      out.push_back(body[k]);
      continue;
    }
    const char c = body[++k];
    auto hex = [&](size_t n) -> Result<char32_t> {
      if (k + n >= body.size()) {
        return make_error(ErrorCode::kInvalidArgument, "line {}: truncated \\{} escape in string literal", line, c);
      }
      char32_t v = 0;
      for (size_t d = 1; d <= n; ++d) {
        const char h = body[k + d];
        int digit = -1;
        if (h >= '0' && h <= '9') digit = h - '0';
        if (h >= 'a' && h <= 'f') digit = h - 'a' + 10;
        if (h >= 'A' && h <= 'F') digit = h - 'A' + 10;
        if (digit < 0) {
          return make_error(ErrorCode::kInvalidArgument, "line {}: bad \\{} escape in string literal", line, c);
        }
        v = v * 16 + static_cast<char32_t>(digit);
      }
      k += n;
      return v;
    };
    switch (c) {
      case '\n': break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case 'a': out.push_back('\a'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'v': out.push_back('\v'); break;
      case 'x':
      case 'u':
      case 'U': {
        KEEL_ASSIGN_OR_RETURN(char32_t cp, hex(c == 'x' ? 2 : c == 'u' ? 4 : 8));
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return make_error(ErrorCode::kUnsupported, "line {}: escape of a surrogate or out-of-range code point",
                            line);
        }
        append_utf8(out, cp);
        break;
      }
      case 'N':
        return make_error(ErrorCode::kUnsupported, "line {}: \\N{{...}} escapes in string literals", line);
      default:
        if (c >= '0' && c <= '7') {
          char32_t v = static_cast<char32_t>(c - '0');
          for (int d = 0; d < 2 && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '7'; ++d) {
            v = v * 8 + static_cast<char32_t>(body[++k] - '0');
          }
          append_utf8(out, v);
        } else {
          out.push_back('\\');
          out.push_back(c);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& options) : src_(std::move(src)), options_(options) {}

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      KEEL_RETURN_IF_ERROR(lex_tag(tag));
    }
    out_.push_back(Token{.type = TokenType::kEof, .line = line_at(src_.size())});
    return std::move(out_);
  }

 private:
  int line_at(size_t pos) {
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_) {
      if (src_[line_pos_] == '\n') ++line_;
    }
    return line_;
  }

  size_t find_tag(size_t from) const {
    for (size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1)) {
      if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    }
    return std::string::npos;
  }

  void emit_text(std::string text, size_t at) {
    if (text.empty()) return;
    out_.push_back(Token{.type = TokenType::kText, .text = std::move(text), .line = line_at(at)});
  }

  // Text before a tag, after `-` stripping or lstrip_blocks (jinja2's OptionalLStrip).
  std::string strip_text(std::string_view text, char sign, bool is_variable) const {
    if (sign == '-') return std::string(py_strip(text, false, true));
    if (sign != '+' && options_.lstrip_blocks && !is_variable) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      const std::string_view tail = text.substr(l_pos);
      if ((l_pos > 0 || line_starting_) && !tail.empty() && py_strip(tail, true, false).empty()) {
        return std::string(text.substr(0, l_pos));
      }
    }
    return std::string(text);
  }

  // After an end tag: `-` eats all whitespace; trim_blocks eats one newline (blocks and comments).
  void after_end(char sign, bool trims) {
    if (sign == '-') {
      const std::string_view rest = std::string_view(src_).substr(pos_);
      pos_ += rest.size() - py_strip(rest, true, false).size();
    } else if (sign != '+' && trims && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  // `{%(-|+|)\s*<word>\s*(-%}\s*|%}...)` at `at`: returns the position after `word`'s closing tag.
  size_t match_word_tag(size_t at, std::string_view word, char* end_sign) const {
    size_t k = at + 2;
    if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) ++k;
    while (k < src_.size() && is_tag_space(src_[k])) ++k;
    if (src_.compare(k, word.size(), word) != 0) return std::string::npos;
    k += word.size();
    if (k < src_.size() && is_name_char(src_[k])) return std::string::npos;
    while (k < src_.size() && is_tag_space(src_[k])) ++k;
    *end_sign = 0;
    if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) *end_sign = src_[k++];
    if (src_.compare(k, 2, "%}") != 0) return std::string::npos;
    return k + 2;
  }

  Status lex_tag(size_t tag) {
    const char kind = src_[tag + 1];
    const char sign = (tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')) ? src_[tag + 2] : 0;
    emit_text(strip_text(std::string_view(src_).substr(pos_, tag - pos_), sign, kind == '{'), pos_);
    char end_sign = 0;
    if (kind == '%') {
      if (const size_t after = match_word_tag(tag, "raw", &end_sign); after != std::string::npos) {
        pos_ = after;
        if (end_sign == '-') after_end('-', false);
        return lex_raw(tag);
      }
    }
    const int line = line_at(tag);
    pos_ = tag + 2 + (sign ? 1 : 0);
    if (kind == '#') return lex_comment(line);
    out_.push_back(Token{.type = kind == '{' ? TokenType::kVarBegin : TokenType::kBlockBegin,
                         .text = kind == '{' ? "{{" : "{%", .line = line});
    return lex_inside(kind == '{', line);
  }

  Status lex_raw(size_t tag) {
    const int line = line_at(tag);
    for (size_t k = find_tag(pos_); k != std::string::npos; k = find_tag(k + 1)) {
      char end_sign = 0;
      if (src_[k + 1] != '%') continue;
      const size_t after = match_word_tag(k, "endraw", &end_sign);
      if (after == std::string::npos) continue;
      const char begin_sign = (src_[k + 2] == '-' || src_[k + 2] == '+') ? src_[k + 2] : 0;
      line_starting_ = src_[pos_ - 1] == '\n';
      emit_text(strip_text(std::string_view(src_).substr(pos_, k - pos_), begin_sign, false), pos_);
      pos_ = after;
      after_end(end_sign, true);
      return Status::ok_status();
    }
    return make_error(ErrorCode::kInvalidArgument, "line {}: missing end of raw directive", line);
  }

  Status lex_comment(int line) {
    for (size_t k = src_.find("#}", pos_); k != std::string::npos; k = src_.find("#}", k + 1)) {
      char end_sign = 0;
      if (k > pos_ && (src_[k - 1] == '-' || src_[k - 1] == '+')) end_sign = src_[k - 1];
      pos_ = k + 2;
      after_end(end_sign, true);
      return Status::ok_status();
    }
    return make_error(ErrorCode::kInvalidArgument, "line {}: missing end of comment tag", line);
  }

  Status lex_inside(bool variable, int begin_line) {
    std::vector<char> balance;
    while (true) {
      if (balance.empty()) {
        const char* close = variable ? "}}" : "%}";
        char end_sign = 0;
        size_t k = pos_;
        if (k < src_.size() && (src_[k] == '-' || (src_[k] == '+' && !variable))) end_sign = src_[k++];
        if (src_.compare(k, 2, close) == 0) {
          out_.push_back(Token{.type = variable ? TokenType::kVarEnd : TokenType::kBlockEnd, .text = close,
                               .line = line_at(pos_)});
          pos_ = k + 2;
          after_end(end_sign, !variable);
          return Status::ok_status();
        }
      }
      if (pos_ >= src_.size()) {
        return make_error(ErrorCode::kInvalidArgument, "line {}: unexpected end of template inside a {} tag",
                          begin_line, variable ? "{{ }}" : "{% %}");
      }
      const char c = src_[pos_];
      if (is_tag_space(c)) {
        ++pos_;
      } else if (is_digit(c)) {
        KEEL_RETURN_IF_ERROR(lex_number());
      } else if (is_name_start(c)) {
        const size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        out_.push_back(Token{.type = TokenType::kName, .text = src_.substr(start, pos_ - start),
                             .line = line_at(start)});
      } else if (c == '\'' || c == '"') {
        KEEL_RETURN_IF_ERROR(lex_string(c));
      } else {
        KEEL_RETURN_IF_ERROR(lex_operator(balance));
      }
    }
  }

  Status lex_number() {
    const size_t start = pos_;
    const int line = line_at(start);
    auto digits = [&]() {
      while (pos_ < src_.size() && (is_digit(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() &&
                                                             is_digit(src_[pos_ + 1])))) {
        ++pos_;
      }
    };
    digits();
    bool is_float = false;
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      ++pos_;
      digits();
      is_float = true;
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_digit(src_[k])) {
        pos_ = k;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = start; k < pos_; ++k) {
      if (src_[k] != '_') text.push_back(src_[k]);
    }
    Token tok{.type = is_float ? TokenType::kFloat : TokenType::kInt, .text = text, .line = line};
    if (is_float) {
      tok.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      for (char d : text) {
        if (__builtin_mul_overflow(tok.int_value, 10, &tok.int_value) ||
            __builtin_add_overflow(tok.int_value, d - '0', &tok.int_value)) {
          return make_error(ErrorCode::kUnsupported, "line {}: integer literal {} does not fit in 64 bits", line,
                            text);
        }
      }
    }
    out_.push_back(std::move(tok));
    return Status::ok_status();
  }

  Status lex_string(char quote) {
    const int line = line_at(pos_);
    size_t k = pos_ + 1;
    while (k < src_.size() && src_[k] != quote) k += (src_[k] == '\\') ? 2 : 1;
    if (k >= src_.size()) {
      return make_error(ErrorCode::kInvalidArgument, "line {}: unterminated string literal", line);
    }
    KEEL_ASSIGN_OR_RETURN(std::string value, unescape(std::string_view(src_).substr(pos_ + 1, k - pos_ - 1), line));
    out_.push_back(Token{.type = TokenType::kString, .text = std::move(value), .line = line});
    pos_ = k + 1;
    return Status::ok_status();
  }

  Status lex_operator(std::vector<char>& balance) {
    const int line = line_at(pos_);
    static constexpr const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        out_.push_back(Token{.type = TokenType::kOperator, .text = op, .line = line});
        pos_ += 2;
        return Status::ok_status();
      }
    }
    const char c = src_[pos_];
    if (std::strchr("+-/*%~[](){}<>=.:|,;", c) == nullptr) {
      return make_error(ErrorCode::kInvalidArgument, "line {}: unexpected character '{}' in a tag", line,
                        std::string(1, c));
    }
    if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty() || balance.back() != c) {
        return make_error(ErrorCode::kInvalidArgument, "line {}: unexpected '{}'", line, std::string(1, c));
      }
      balance.pop_back();
    }
    out_.push_back(Token{.type = TokenType::kOperator, .text = std::string(1, c), .line = line});
    ++pos_;
    return Status::ok_status();
  }

  std::string src_;
  LexOptions options_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  size_t line_pos_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

Result<std::vector<Token>> lex(std::string_view source, const LexOptions& options) {
  return Lexer(normalize_newlines(source, options.keep_trailing_newline), options).run();
}

}  // namespace keel::tokenizer::jinja
