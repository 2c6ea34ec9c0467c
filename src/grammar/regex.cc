#include "grammar/regex.h"

#include <cctype>
#include <optional>
#include <vector>

#include "grammar/regex_ast.h"

namespace keel::grammar {
namespace {

using regex_detail::Node;

constexpr int64_t kMaxRepeat = 10'000;


CharClass digit_class() { return CharClass::range('0', '9'); }
CharClass word_class() {
  CharClass c = CharClass::range('0', '9');
  c.add('A', 'Z');
  c.add('a', 'z');
  c.add('_', '_');
  return c;
}
CharClass space_class() {  // ECMA-262 WhiteSpace + LineTerminator
  CharClass c = CharClass::range('\t', '\r');
  for (uint32_t cp : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) c.add(cp, cp);
  c.add(0x2000, 0x200A);
  return c;
}

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Result<Node> parse() {
    KEEL_ASSIGN_OR_RETURN(Node n, parse_alt(0));
    if (i_ < p_.size()) return error("unmatched ')'");
    return n;
  }

 private:
  Status error(std::string_view what) const {
    return make_error(ErrorCode::kInvalidArgument, "regex /{}/: {} at offset {}", p_, what, i_);
  }
  Status unsupported(std::string_view what) const {
    return make_error(ErrorCode::kUnsupported, "regex /{}/: {} at offset {} is not supported", p_, what, i_);
  }
  bool eat(char c) {
    if (i_ < p_.size() && p_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool at(char c) const { return i_ < p_.size() && p_[i_] == c; }

  Result<Node> parse_alt(int depth) {
    if (depth > 200) return unsupported("nesting deeper than 200 groups");
    Node alt{Node::Kind::kAlt};
    do {
      KEEL_ASSIGN_OR_RETURN(Node seq, parse_seq(depth));
      alt.kids.push_back(std::move(seq));
    } while (eat('|'));
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Result<Node> parse_seq(int depth) {
    Node seq{Node::Kind::kSeq};
    while (i_ < p_.size() && !at('|') && !at(')')) {
      KEEL_ASSIGN_OR_RETURN(Node atom, parse_atom(depth));
      KEEL_ASSIGN_OR_RETURN(Node q, parse_quantifier(std::move(atom)));
      seq.kids.push_back(std::move(q));
    }
    return seq;
  }

  // Reads {n}, {n,}, {n,m} at i_; false (i_ unchanged) when the braces are not a quantifier.
  bool read_braces(int64_t* min, int64_t* max) {
    size_t j = i_ + 1;
    auto number = [&](int64_t* v) {
      size_t s = j;
      *v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        *v = std::min<int64_t>(*v * 10 + (p_[j] - '0'), kMaxRepeat + 1);
        ++j;
      }
      return j > s;
    };
    if (!number(min)) return false;
    *max = *min;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(max)) *max = -1;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  Result<Node> parse_quantifier(Node atom) {
    int64_t min = 0, max = 0;
    if (eat('*')) {
      min = 0, max = -1;
    } else if (eat('+')) {
      min = 1, max = -1;
    } else if (eat('?')) {
      min = 0, max = 1;
    } else if (!(at('{') && read_braces(&min, &max))) {
      return atom;
    }
    if (atom.kind == Node::Kind::kBegin || atom.kind == Node::Kind::kEnd) return error("quantified anchor");
    if (min > kMaxRepeat || max > kMaxRepeat) return unsupported("repetition count above 10000");
    if (max >= 0 && max < min) return error("numbers out of order in {} quantifier");
    eat('?');  // lazy: same language
    if (at('+') || at('*') || at('?') || at('{')) {
      int64_t a, b;
      size_t save = i_;
      if (!at('{') || read_braces(&a, &b)) {
        i_ = save;
        return error("nothing to repeat");
      }
    }
    Node r{Node::Kind::kRepeat};
    r.min = min;
    r.max = max;
    r.kids.push_back(std::move(atom));
    return r;
  }

  Result<uint32_t> read_hex(size_t n) {
    uint32_t v = 0;
    for (size_t k = 0; k < n; ++k, ++i_) {
      if (i_ >= p_.size() || !std::isxdigit(static_cast<unsigned char>(p_[i_]))) return error("bad hex escape");
      char c = p_[i_];
      v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
  }

  Result<uint32_t> read_unicode_escape() {  // after "\u"
    if (eat('{')) {
      uint32_t v = 0;
      size_t n = 0;
      while (i_ < p_.size() && !at('}')) {
        KEEL_ASSIGN_OR_RETURN(uint32_t d, read_hex(1));
        v = v * 16 + d;
        if (++n > 6 || v > kMaxCodepoint) return error("code point out of range");
      }
      if (n == 0 || !eat('}')) return error("bad \\u{...} escape");
      return v;
    }
    KEEL_ASSIGN_OR_RETURN(uint32_t v, read_hex(4));
    if (v >= 0xD800 && v <= 0xDBFF && p_.substr(i_, 2) == "\\u") {
      size_t save = i_;
      i_ += 2;
      auto lo = read_hex(4);
      if (lo.ok() && *lo >= 0xDC00 && *lo <= 0xDFFF) return 0x10000 + ((v - 0xD800) << 10) + (*lo - 0xDC00);
      i_ = save;
    }
    if (v >= 0xD800 && v <= 0xDFFF) return unsupported("lone surrogate escape");
    return v;
  }

  // Escape after '\' (i_ at the escaped char). Sets *cls; in_class changes \b and \-.
  Status parse_escape(bool in_class, CharClass* cls) {
    if (i_ >= p_.size()) return error("trailing backslash");
    char c = p_[i_++];
    switch (c) {
      case 'd': *cls = digit_class(); return {};
      case 'D': *cls = digit_class().negated(); return {};
      case 'w': *cls = word_class(); return {};
      case 'W': *cls = word_class().negated(); return {};
      case 's': *cls = space_class(); return {};
      case 'S': *cls = space_class().negated(); return {};
      case 'n': *cls = CharClass::of('\n'); return {};
      case 'r': *cls = CharClass::of('\r'); return {};
      case 't': *cls = CharClass::of('\t'); return {};
      case 'f': *cls = CharClass::of('\f'); return {};
      case 'v': *cls = CharClass::of('\v'); return {};
      case '0':
        if (i_ < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i_]))) return unsupported("octal escape");
        *cls = CharClass::of(0);
        return {};
      case 'x': {
        KEEL_ASSIGN_OR_RETURN(uint32_t v, read_hex(2));
        *cls = CharClass::of(v);
        return {};
      }
      case 'u': {
        KEEL_ASSIGN_OR_RETURN(uint32_t v, read_unicode_escape());
        *cls = CharClass::of(v);
        return {};
      }
      case 'c': {
        if (i_ >= p_.size() || !std::isalpha(static_cast<unsigned char>(p_[i_]))) return error("bad \\c escape");
        *cls = CharClass::of(static_cast<uint32_t>(p_[i_++]) % 32);
        return {};
      }
      case 'b':
        if (in_class) {
          *cls = CharClass::of('\b');
          return {};
        }
        return unsupported("word boundary \\b");
      case 'B': return unsupported("word boundary \\B");
      case 'p':
      case 'P': return unsupported("Unicode property escape \\p");
      case 'k': return unsupported("named backreference \\k");
      default:
        if (c >= '1' && c <= '9') return unsupported("backreference");
        if (std::isalnum(static_cast<unsigned char>(c))) return unsupported(fmt::format("escape \\{}", c));
        {
          --i_;
          uint32_t cp;
          if (!decode_utf8(p_, &i_, &cp)) return error("invalid UTF-8");
          *cls = CharClass::of(cp);
        }
        return {};
    }
  }

  Result<uint32_t> next_char() {
    uint32_t cp;
    if (!decode_utf8(p_, &i_, &cp)) return error("invalid UTF-8");
    return cp;
  }

  Result<Node> parse_class() {  // after '['
    Node n{Node::Kind::kClass};
    bool negate = eat('^');
    while (!at(']')) {
      if (i_ >= p_.size()) return error("unterminated character class");
      CharClass lo_cls;
      bool lo_single = true;
      uint32_t lo = 0;
      if (eat('\\')) {
        KEEL_RETURN_IF_ERROR(parse_escape(true, &lo_cls));
        lo_single = lo_cls.ranges().size() == 1 && lo_cls.ranges()[0].lo == lo_cls.ranges()[0].hi;
        if (lo_single) lo = lo_cls.ranges()[0].lo;
      } else {
        KEEL_ASSIGN_OR_RETURN(lo, next_char());
        lo_cls = CharClass::of(lo);
      }
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi;
        if (eat('\\')) {
          CharClass hi_cls;
          KEEL_RETURN_IF_ERROR(parse_escape(true, &hi_cls));
          if (hi_cls.ranges().size() != 1 || hi_cls.ranges()[0].lo != hi_cls.ranges()[0].hi)
            return error("class escape as range end");
          hi = hi_cls.ranges()[0].lo;
        } else {
          KEEL_ASSIGN_OR_RETURN(hi, next_char());
        }
        if (!lo_single) return error("class escape as range start");
        if (hi < lo) return error("range out of order in character class");
        n.cls.add(lo, hi);
      } else {
        n.cls.add(lo_cls);
      }
    }
    ++i_;
    if (negate) n.cls = n.cls.negated();
    return n;
  }

  Result<Node> parse_atom(int depth) {
    char c = p_[i_];
    switch (c) {
      case '(': {
        ++i_;
        if (eat('?')) {
          if (eat(':')) {
          } else if (at('<') && i_ + 1 < p_.size() && p_[i_ + 1] != '=' && p_[i_ + 1] != '!') {
            while (i_ < p_.size() && !at('>')) ++i_;
            if (!eat('>')) return error("unterminated group name");
          } else if (at('=') || at('!') || at('<')) {
            return unsupported("lookaround assertion");
          } else {
            return unsupported("inline flag group");
          }
        }
        KEEL_ASSIGN_OR_RETURN(Node inner, parse_alt(depth + 1));
        if (!eat(')')) return error("missing ')'");
        return inner;
      }
      case '[': ++i_; return parse_class();
      case '.': {
        ++i_;
        Node n{Node::Kind::kClass};
        CharClass terminators = CharClass::of('\n');
        terminators.add('\r', '\r');
        terminators.add(0x2028, 0x2029);
        n.cls = terminators.negated();
        return n;
      }
      case '^': ++i_; return Node{Node::Kind::kBegin};
      case '$': ++i_; return Node{Node::Kind::kEnd};
      case '*':
      case '+':
      case '?': return error("nothing to repeat");
      case '{': {
        int64_t a, b;
        size_t save = i_;
        if (read_braces(&a, &b)) {
          i_ = save;
          return error("nothing to repeat");
        }
        ++i_;
        Node n{Node::Kind::kClass};
        n.cls = CharClass::of('{');
        return n;
      }
      case '\\': {
        ++i_;
        Node n{Node::Kind::kClass};
        KEEL_RETURN_IF_ERROR(parse_escape(false, &n.cls));
        return n;
      }
      default: {
        Node n{Node::Kind::kClass};
        KEEL_ASSIGN_OR_RETURN(uint32_t cp, next_char());
        n.cls = CharClass::of(cp);
        return n;
      }
    }
  }

  std::string_view p_;
  size_t i_ = 0;
};

class Emitter {
 public:
  Emitter(GrammarBuilder& b, const RegexOptions& opts) : b_(b), opts_(opts) {}

  Result<Sequence> emit(const Node& n) {
    KEEL_RETURN_IF_ERROR(b_.check_budget());
    switch (n.kind) {
      case Node::Kind::kClass: return Sequence{emit_char_class(b_, n.cls, opts_.encoding)};
      case Node::Kind::kSeq: {
        Sequence out;
        for (const Node& k : n.kids) {
          KEEL_ASSIGN_OR_RETURN(Sequence s, emit(k));
          out.insert(out.end(), s.begin(), s.end());
        }
        return out;
      }
      case Node::Kind::kAlt: {
        std::vector<Sequence> alts;
        for (const Node& k : n.kids) {
          KEEL_ASSIGN_OR_RETURN(Sequence s, emit(k));
          alts.push_back(std::move(s));
        }
        return Sequence{b_.choice(std::move(alts), "alt")};
      }
      case Node::Kind::kRepeat: {
        KEEL_ASSIGN_OR_RETURN(Sequence body, emit(n.kids[0]));
        return Sequence{b_.repeat(std::move(body), n.min, n.max)};
      }
      case Node::Kind::kBegin:
      case Node::Kind::kEnd:
        return make_error(ErrorCode::kUnsupported, "regex anchor ^ or $ inside the pattern is not supported");
    }
    return Sequence{};
  }

  // One top-level alternative: strip anchors at its ends and pad with "any text" where unanchored.
  Result<Sequence> emit_top(Node n) {
    if (n.kind != Node::Kind::kSeq) {
      Node seq{Node::Kind::kSeq};
      seq.kids.push_back(std::move(n));
      n = std::move(seq);
    }
    bool begin = false, end = false;
    if (!n.kids.empty() && n.kids.front().kind == Node::Kind::kBegin) {
      begin = true;
      n.kids.erase(n.kids.begin());
    }
    if (!n.kids.empty() && n.kids.back().kind == Node::Kind::kEnd) {
      end = true;
      n.kids.pop_back();
    }
    KEEL_ASSIGN_OR_RETURN(Sequence body, emit(n));
    if (!opts_.search) return body;
    Sequence out;
    if (!begin) out.push_back(any_text());
    out.insert(out.end(), body.begin(), body.end());
    if (!end) out.push_back(any_text());
    return out;
  }

 private:
  Symbol any_text() {
    if (!any_text_) any_text_ = b_.star({emit_char_class(b_, CharClass::any(), opts_.encoding)});
    return *any_text_;
  }

  GrammarBuilder& b_;
  const RegexOptions& opts_;
  std::optional<Symbol> any_text_;
};

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kClass: return false;
    case Node::Kind::kRepeat: return n.min == 0 || nullable(n.kids[0]);
    case Node::Kind::kAlt:
      for (const Node& k : n.kids)
        if (nullable(k)) return true;
      return false;
    default:  // a sequence, an anchor
      for (const Node& k : n.kids)
        if (!nullable(k)) return false;
      return true;
  }
}

// Whether an unbounded repetition's body can match the empty string (`([a-z]*)*`, `(a?b*)+`): a
// string then splits among the copies in unboundedly many ways.
bool loops_on_empty(const Node& n) {
  if (n.kind == Node::Kind::kRepeat && n.max < 0 && nullable(n.kids[0])) return true;
  for (const Node& k : n.kids)
    if (loops_on_empty(k)) return true;
  return false;
}

}  // namespace

Result<regex_detail::Node> regex_detail::parse_regex(std::string_view pattern) { return Parser(pattern).parse(); }

Result<Symbol> regex_to_symbol(GrammarBuilder& b, std::string_view pattern, const RegexOptions& opts) {
  KEEL_ASSIGN_OR_RETURN(Node root, Parser(pattern).parse());
  // A top-level alternative unanchored at an end is padded with "any text", which makes the grammar
  // ambiguous: the Earley columns of such a string keep items for every place the match may have
  // started, so no two columns share a state and every token walk steps the parser. Determinised
  // instead when the DFA stays small (same language: the NFA behind it is the one the key sets use).
  // An anchored pattern with an unbounded repetition of a body that can match the empty string
  // (`([\/\w .-]*)*`, MaskBench's URL pattern) is ambiguous the same way: a string splits among the
  // copies in many ways, the columns keep an item per split, and no two share a state (a walk
  // visited the whole vocabulary trie, 190,000 nodes and ~800 parser steps, 2-15 ms per mask).
  // Determinised too. Other anchored patterns keep their rules: a fixed-length one (a UUID) or
  // `(/[^/]+)*` converges as rules, and its positions classify several characters at once where a
  // DFA's rules end after each character (determinising every anchored pattern raised the p50;
  // every one with a nested repetition, `(/[^/]+)*` included, made some masks slower).
  if (opts.search) {
    bool padded = false;
    for (const Node& top : root.kind == Node::Kind::kAlt ? root.kids : std::vector<Node>{root}) {
      const bool seq = top.kind == Node::Kind::kSeq && !top.kids.empty();
      padded |= !(seq && top.kids.front().kind == Node::Kind::kBegin) || !(seq && top.kids.back().kind == Node::Kind::kEnd);
    }
    if (padded || loops_on_empty(root)) {
      constexpr size_t kMaxSearchDfaStates = 256;
      if (auto dfa = regex_search_dfa(b, pattern, opts.encoding, kMaxSearchDfaStates); dfa.ok()) return dfa;
    }
  }
  Emitter emitter(b, opts);
  std::vector<Sequence> alts;
  if (root.kind == Node::Kind::kAlt) {
    for (Node& k : root.kids) {
      KEEL_ASSIGN_OR_RETURN(Sequence s, emitter.emit_top(std::move(k)));
      alts.push_back(std::move(s));
    }
  } else {
    KEEL_ASSIGN_OR_RETURN(Sequence s, emitter.emit_top(std::move(root)));
    alts.push_back(std::move(s));
  }
  return b.choice(std::move(alts), "regex");
}

}  // namespace keel::grammar
