#include "grammar/gbnf.h"

#include <map>
#include <vector>

#include "grammar/char_class.h"

namespace keel::grammar {
namespace {

constexpr int kMaxNesting = 200;

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

class GbnfParser {
 public:
  GbnfParser(std::string_view src, const BuildLimits& limits) : src_(src), b_(limits) {}

  Result<Grammar> parse() {
    skip_space(true);
    while (i_ < src_.size()) KEEL_RETURN_IF_ERROR(parse_rule());
    for (auto& [name, id] : rules_)
      if (!defined_[id]) return make_error(ErrorCode::kInvalidArgument, "GBNF: rule '{}' is used but not defined", name);
    auto root = rules_.find("root");
    if (root == rules_.end()) return make_error(ErrorCode::kInvalidArgument, "GBNF: no 'root' rule");
    return b_.finish(root->second);
  }

 private:
  Status error(std::string_view what) const {
    size_t line = 1;
    for (size_t k = 0; k < i_ && k < src_.size(); ++k) line += src_[k] == '\n';
    return make_error(ErrorCode::kInvalidArgument, "GBNF line {}: {}", line, what);
  }

  void skip_space(bool newline_ok) {
    while (i_ < src_.size()) {
      char c = src_[i_];
      if (c == '#') {
        while (i_ < src_.size() && src_[i_] != '\n' && src_[i_] != '\r') ++i_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string_view parse_name() {
    size_t s = i_;
    while (i_ < src_.size() && is_word_char(src_[i_])) ++i_;
    return src_.substr(s, i_ - s);
  }

  RuleId rule_id(std::string_view name) {
    auto [it, inserted] = rules_.try_emplace(std::string(name), 0);
    if (inserted) {
      it->second = b_.add_rule(std::string(name));
      defined_.resize(it->second + 1, false);
    }
    return it->second;
  }

  Status parse_rule() {
    std::string_view name = parse_name();
    if (name.empty()) return error("expecting a rule name");
    skip_space(false);
    if (src_.substr(i_, 3) != "::=") return error("expecting ::=");
    i_ += 3;
    skip_space(true);
    RuleId id = rule_id(name);
    if (defined_[id]) return error(fmt::format("rule '{}' defined twice", name));
    defined_[id] = true;
    KEEL_ASSIGN_OR_RETURN(std::vector<Sequence> alts, parse_alternates(false, 0));
    for (Sequence& s : alts) b_.add_alt(id, std::move(s));
    if (i_ < src_.size() && src_[i_] == '\r') ++i_;
    if (i_ < src_.size() && src_[i_] == '\n') {
      ++i_;
    } else if (i_ < src_.size()) {
      return error("expecting newline or end");
    }
    skip_space(true);
    return b_.check_budget();
  }

  Result<std::vector<Sequence>> parse_alternates(bool nested, int depth) {
    std::vector<Sequence> alts;
    KEEL_ASSIGN_OR_RETURN(Sequence first, parse_sequence(nested, depth));
    alts.push_back(std::move(first));
    while (i_ < src_.size() && src_[i_] == '|') {
      ++i_;
      skip_space(true);
      KEEL_ASSIGN_OR_RETURN(Sequence next, parse_sequence(nested, depth));
      alts.push_back(std::move(next));
    }
    return alts;
  }

  Result<uint32_t> parse_char() {
    if (src_[i_] == '\\') {
      if (i_ + 1 >= src_.size()) return error("unterminated escape");
      char c = src_[i_ + 1];
      i_ += 2;
      int n = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
      if (n > 0) {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k, ++i_) {
          if (i_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[i_]))) return error("bad hex escape");
          char h = src_[i_];
          v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        if (v > kMaxCodepoint) return error("code point out of range");
        return v;
      }
      switch (c) {
        case 't': return uint32_t{'\t'};
        case 'r': return uint32_t{'\r'};
        case 'n': return uint32_t{'\n'};
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^': return static_cast<uint32_t>(c);
        default: return error(fmt::format("unknown escape '\\{}'", c));
      }
    }
    uint32_t cp;
    if (!decode_utf8(src_, &i_, &cp)) return error("invalid UTF-8");
    return cp;
  }

  Result<Sequence> parse_sequence(bool nested, int depth) {
    if (depth > kMaxNesting) return error("groups nested too deeply");
    Sequence seq;
    size_t last_start = SIZE_MAX;
    while (i_ < src_.size()) {
      char c = src_[i_];
      if (c == '"') {
        ++i_;
        last_start = seq.size();
        while (i_ < src_.size() && src_[i_] != '"') {
          KEEL_ASSIGN_OR_RETURN(uint32_t cp, parse_char());
          std::string bytes;
          append_utf8(bytes, cp);
          for (Symbol s : b_.literal(bytes)) seq.push_back(s);
        }
        if (i_ >= src_.size()) return error("unterminated string literal");
        ++i_;
      } else if (c == '[') {
        ++i_;
        bool negate = i_ < src_.size() && src_[i_] == '^';
        if (negate) ++i_;
        CharClass cls;
        while (i_ < src_.size() && src_[i_] != ']') {
          KEEL_ASSIGN_OR_RETURN(uint32_t lo, parse_char());
          uint32_t hi = lo;
          if (i_ + 1 < src_.size() && src_[i_] == '-' && src_[i_ + 1] != ']') {
            ++i_;
            KEEL_ASSIGN_OR_RETURN(hi, parse_char());
            if (hi < lo) return error("character range out of order");
          }
          cls.add(lo, hi);
        }
        if (i_ >= src_.size()) return error("unterminated character class");
        ++i_;
        last_start = seq.size();
        seq.push_back(emit_char_class(b_, negate ? cls.negated() : cls, CharEncoding::kUtf8));
      } else if (is_word_char(c)) {
        last_start = seq.size();
        seq.push_back(b_.ref(rule_id(parse_name())));
      } else if (c == '(') {
        ++i_;
        skip_space(true);
        KEEL_ASSIGN_OR_RETURN(std::vector<Sequence> alts, parse_alternates(true, depth + 1));
        if (i_ >= src_.size() || src_[i_] != ')') return error("expecting ')'");
        ++i_;
        last_start = seq.size();
        seq.push_back(b_.choice(std::move(alts), "group"));
      } else if (c == '.') {
        ++i_;
        last_start = seq.size();
        seq.push_back(emit_char_class(b_, CharClass::any(), CharEncoding::kUtf8));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last_start == SIZE_MAX || last_start >= seq.size()) return error("expecting preceding item to */+/?/{");
        int64_t min = 0, max = -1;
        ++i_;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') KEEL_RETURN_IF_ERROR(parse_braces(nested, &min, &max));
        Sequence body(seq.begin() + static_cast<ptrdiff_t>(last_start), seq.end());
        seq.resize(last_start);
        seq.push_back(b_.repeat(std::move(body), min, max));
      } else if (c == '<') {
        return make_error(ErrorCode::kUnsupported, "GBNF token references (<...>) are not supported");
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  Status parse_braces(bool nested, int64_t* min, int64_t* max) {
    skip_space(nested);
    auto number = [&](int64_t* v) {
      size_t s = i_;
      *v = 0;
      while (i_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[i_])) && *v <= 100000)
        *v = *v * 10 + (src_[i_++] - '0');
      return i_ > s;
    };
    if (!number(min)) return error("expecting a number in {}");
    skip_space(nested);
    *max = *min;
    if (i_ < src_.size() && src_[i_] == ',') {
      ++i_;
      skip_space(nested);
      if (!number(max)) *max = -1;
      skip_space(nested);
    }
    if (i_ >= src_.size() || src_[i_] != '}') return error("expecting '}'");
    ++i_;
    if (*min > 100000 || *max > 100000) return error("repetition count above 100000");
    if (*max >= 0 && *max < *min) return error("repetition bounds out of order");
    return {};
  }

  std::string_view src_;
  size_t i_ = 0;
  GrammarBuilder b_;
  std::map<std::string, RuleId> rules_;
  std::vector<bool> defined_;
};

}  // namespace

Result<Grammar> gbnf_grammar(std::string_view source, const BuildLimits& limits) {
  return GbnfParser(source, limits).parse();
}

}  // namespace keel::grammar
