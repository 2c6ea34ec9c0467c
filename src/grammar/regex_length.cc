// A regular expression intersected with a length range (JSON Schema `pattern` or `format` next to
// minLength/maxLength). The pattern becomes a Thompson NFA over character classes (unanchored ends
// padded with "any character" loops, as regex.cc does); the product with a character counter
// 0..max (saturating at min when there is no max) is emitted as a left-linear grammar:
//   L(t, c) ::= L(s, c-1) class     for each class edge into t reachable from s by epsilon moves
// so Earley runs it in linear time. Bounded: NFA states and product rules are capped, past which
// the caller's keyword stays kUnsupported.
#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <vector>

#include "grammar/regex.h"
#include "grammar/regex_ast.h"
#include "grammar/regex_nfa.h"

namespace keel::grammar {
namespace {

using regex_detail::Nfa;
using regex_detail::Node;

constexpr size_t kMaxStates = 4'096;
constexpr size_t kMaxProductRules = 40'000;

Status too_large() {
  return make_error(ErrorCode::kUnsupported, "pattern with a length range is too large to intersect exactly");
}

// Appends n's automaton after state `from`; returns its exit state.
Result<int> build_nfa(Nfa& a, const Node& n, int from) {
  if (a.out.size() > kMaxStates) return too_large();
  switch (n.kind) {
    case Node::Kind::kClass: {
      int t = a.add_state();
      a.edge(from, n.cls, t);
      return t;
    }
    case Node::Kind::kSeq: {
      int cur = from;
      for (const Node& k : n.kids) {
        KEEL_ASSIGN_OR_RETURN(cur, build_nfa(a, k, cur));
      }
      return cur;
    }
    case Node::Kind::kAlt: {
      int exit = a.add_state();
      for (const Node& k : n.kids) {
        int s = a.add_state();
        a.eps(from, s);
        KEEL_ASSIGN_OR_RETURN(int e, build_nfa(a, k, s));
        a.eps(e, exit);
      }
      return exit;
    }
    case Node::Kind::kRepeat: {
      int cur = from;
      for (int64_t i = 0; i < n.min; ++i) {
        KEEL_ASSIGN_OR_RETURN(cur, build_nfa(a, n.kids[0], cur));
      }
      if (n.max < 0) {
        int loop = a.add_state();
        a.eps(cur, loop);
        KEEL_ASSIGN_OR_RETURN(int e, build_nfa(a, n.kids[0], loop));
        a.eps(e, loop);
        return loop;
      }
      int exit = a.add_state();
      a.eps(cur, exit);
      for (int64_t i = n.min; i < n.max; ++i) {
        KEEL_ASSIGN_OR_RETURN(cur, build_nfa(a, n.kids[0], cur));
        a.eps(cur, exit);
      }
      return exit;
    }
    case Node::Kind::kBegin:
    case Node::Kind::kEnd:
      return make_error(ErrorCode::kUnsupported, "regex anchor ^ or $ inside the pattern is not supported");
  }
  return from;
}

std::vector<int> closure(const Nfa& a, int s) {
  std::vector<int> out{s};
  std::set<int> seen{s};
  for (size_t i = 0; i < out.size(); ++i)
    for (const Nfa::Edge& e : a.out[static_cast<size_t>(out[i])])
      if (e.cls < 0 && seen.insert(e.to).second) out.push_back(e.to);
  return out;
}

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kClass: return false;
    case Node::Kind::kSeq: return std::all_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Kind::kAlt: return std::any_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Kind::kRepeat: return n.min == 0 || nullable(n.kids[0]);
    case Node::Kind::kBegin:
    case Node::Kind::kEnd: return false;  // an anchor inside: not decided here
  }
  return false;
}

}  // namespace

// Whole-pattern automaton from state 0 to the returned final state, anchors handled per top-level
// alternative as regex.cc does.
Result<std::pair<Nfa, int>> regex_detail::pattern_nfa(std::string_view pattern, bool search) {
  KEEL_ASSIGN_OR_RETURN(Node root, regex_detail::parse_regex(pattern));
  std::vector<Node> tops;
  if (root.kind == Node::Kind::kAlt) {
    tops = std::move(root.kids);
  } else {
    tops.push_back(std::move(root));
  }
  Nfa a;
  const int start = a.add_state(), final = a.add_state();
  for (Node& n : tops) {
    if (n.kind != Node::Kind::kSeq) {
      Node seq{Node::Kind::kSeq};
      seq.kids.push_back(std::move(n));
      n = std::move(seq);
    }
    bool begin = !search, end = !search;
    if (!n.kids.empty() && n.kids.front().kind == Node::Kind::kBegin) begin = true, n.kids.erase(n.kids.begin());
    if (!n.kids.empty() && n.kids.back().kind == Node::Kind::kEnd) end = true, n.kids.pop_back();
    int s = a.add_state();
    a.eps(start, s);
    if (!begin) a.edge(s, CharClass::any(), s);
    KEEL_ASSIGN_OR_RETURN(int e, build_nfa(a, n, s));
    int t = a.add_state();
    a.eps(e, t);
    if (!end) a.edge(t, CharClass::any(), t);
    a.eps(t, final);
  }
  return std::make_pair(std::move(a), final);
}

bool regex_matches_everything(std::string_view pattern) {
  auto root = regex_detail::parse_regex(pattern);
  if (!root.ok()) return false;
  std::vector<Node> tops;
  if (root->kind == Node::Kind::kAlt) {
    tops = std::move(root->kids);
  } else {
    tops.push_back(std::move(*root));
  }
  for (Node& n : tops) {
    if (n.kind != Node::Kind::kSeq) {
      Node seq{Node::Kind::kSeq};
      seq.kids.push_back(std::move(n));
      n = std::move(seq);
    }
    bool begin = false, end = false;
    if (!n.kids.empty() && n.kids.front().kind == Node::Kind::kBegin) begin = true, n.kids.erase(n.kids.begin());
    if (!n.kids.empty() && n.kids.back().kind == Node::Kind::kEnd) end = true, n.kids.pop_back();
    // An empty match at the start (no $) or at the end (no ^) exists in every string.
    if (!(begin && end) && nullable(n)) return true;
  }
  return false;
}

Result<Symbol> regex_with_length(GrammarBuilder& b, std::string_view pattern, const RegexOptions& opts, int64_t min_len,
                                 int64_t max_len) {
  KEEL_ASSIGN_OR_RETURN(auto nfa_final, regex_detail::pattern_nfa(pattern, opts.search));
  const Nfa& a = nfa_final.first;
  const int final = nfa_final.second;
  // Counter values: 0..max_len, or 0..min_len with min_len meaning "min_len or more".
  const int64_t top = max_len >= 0 ? max_len : min_len;
  auto next_count = [&](int64_t c) -> int64_t { return max_len >= 0 ? c + 1 : std::min(c + 1, min_len); };
  std::map<std::pair<int, int64_t>, RuleId> rules;
  std::queue<std::pair<int, int64_t>> work;
  std::map<int, std::vector<int>> closures;
  std::map<int, Symbol> class_syms;
  auto rule_of = [&](int s, int64_t c) -> Result<RuleId> {
    auto it = rules.find({s, c});
    if (it != rules.end()) return it->second;
    if (rules.size() >= kMaxProductRules) return too_large();
    RuleId r = b.add_rule("len_regex");
    rules.emplace(std::make_pair(s, c), r);
    work.emplace(s, c);
    return r;
  };
  KEEL_ASSIGN_OR_RETURN(RuleId start_rule, rule_of(0, 0));
  b.add_alt(start_rule, {});
  std::vector<Sequence> ends;
  while (!work.empty()) {
    auto [s, c] = work.front();
    work.pop();
    KEEL_RETURN_IF_ERROR(b.check_budget());
    auto cit = closures.find(s);
    if (cit == closures.end()) cit = closures.emplace(s, closure(a, s)).first;
    std::set<std::pair<int, int>> done;  // (class, target) pairs already emitted from (s, c)
    for (int p : cit->second) {
      if (p == final && c >= min_len) ends.push_back({b.ref(rules.at({s, c}))});
      for (const Nfa::Edge& e : a.out[static_cast<size_t>(p)]) {
        if (e.cls < 0 || !done.insert({e.cls, e.to}).second) continue;
        if (max_len >= 0 && c + 1 > top) continue;
        KEEL_ASSIGN_OR_RETURN(RuleId to, rule_of(e.to, next_count(c)));
        auto sym = class_syms.find(e.cls);
        if (sym == class_syms.end())
          sym = class_syms.emplace(e.cls, emit_char_class(b, a.classes[static_cast<size_t>(e.cls)], opts.encoding)).first;
        b.add_alt(to, {b.ref(rules.at({s, c})), sym->second});
      }
    }
  }
  if (ends.empty()) return b.never("len_regex");
  return b.choice(std::move(ends), "len_regex");
}

}  // namespace keel::grammar
