// Object keys by pattern, for patternProperties next to additionalProperties: the strings a pattern
// matches minus a set of names, or those matching neither the pattern nor a name; and (no names)
// unanchored JSON Schema patterns as a DFA (regex_to_symbol). The pattern's
// NFA (regex_length.cc) joined with the names as literal chains is determinised over character
// ranges (subset construction; states capped), so the complement is exact; the DFA is emitted
// left-linear, as regex_length.cc does.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "grammar/regex.h"
#include "grammar/regex_nfa.h"

namespace keel::grammar {
namespace {

constexpr size_t kMaxDfaStates = 2'000;

using StateSet = std::vector<int>;

StateSet closure(const regex_detail::Nfa& a, StateSet seed) {
  std::set<int> seen(seed.begin(), seed.end());
  for (size_t i = 0; i < seed.size(); ++i)
    for (const auto& e : a.out[static_cast<size_t>(seed[i])])
      if (e.cls < 0 && seen.insert(e.to).second) seed.push_back(e.to);
  return StateSet(seen.begin(), seen.end());
}

// The strings `pattern` matches (search semantics), with `names` removed or (kNeither) the strings
// matching neither, as a left-linear DFA grammar; kUnsupported past max_states, or at once when the
// pattern's NFA has more than max_nfa_states states.
Result<Symbol> dfa_key_set(GrammarBuilder& b, std::string_view pattern, const std::vector<std::string>& names,
                           KeySet which, CharEncoding enc, size_t max_states, size_t max_nfa_states = SIZE_MAX) {
  KEEL_ASSIGN_OR_RETURN(auto built, regex_detail::pattern_nfa(pattern, true));
  regex_detail::Nfa& a = built.first;
  if (a.out.size() > max_nfa_states) return make_error(ErrorCode::kUnsupported, "pattern too large to determinise");
  const int final_pattern = built.second;
  const int final_name = a.add_state();
  for (const std::string& name : names) {
    int cur = 0;
    size_t pos = 0;
    uint32_t cp;
    while (pos < name.size()) {
      if (!decode_utf8(name, &pos, &cp)) return make_error(ErrorCode::kInvalidArgument, "property name is not UTF-8");
      int next = a.add_state();
      a.edge(cur, CharClass::of(cp), next);
      cur = next;
    }
    a.eps(cur, final_name);
  }
  auto accepting = [&](const StateSet& s) {
    const bool p = std::binary_search(s.begin(), s.end(), final_pattern);
    const bool n = std::binary_search(s.begin(), s.end(), final_name);
    return which == KeySet::kPatternMinusNames ? p && !n : !p && !n;
  };
  std::map<StateSet, RuleId> ids;
  std::vector<StateSet> order;
  auto id_of = [&](const StateSet& s) -> Result<RuleId> {
    auto it = ids.find(s);
    if (it != ids.end()) return it->second;
    if (ids.size() >= max_states)
      return make_error(ErrorCode::kUnsupported, "pattern too large to determinise for the keys it does not match");
    RuleId r = b.add_rule("key_dfa");
    ids.emplace(s, r);
    order.push_back(s);
    return r;
  };
  KEEL_ASSIGN_OR_RETURN(RuleId start, id_of(closure(a, {0})));
  b.add_alt(start, {});
  std::vector<Sequence> ends;
  for (size_t i = 0; i < order.size(); ++i) {
    KEEL_RETURN_IF_ERROR(b.check_budget());
    const StateSet cur = order[i];
    const RuleId from = ids.at(cur);
    if (accepting(cur)) ends.push_back({b.ref(from)});
    // Elementary intervals between the boundaries of every outgoing class; each goes to one set.
    std::vector<uint32_t> cuts{0, 0x110000};
    std::vector<std::pair<const CharClass*, int>> edges;
    for (int st : cur)
      for (const auto& e : a.out[static_cast<size_t>(st)]) {
        if (e.cls < 0) continue;
        edges.emplace_back(&a.classes[static_cast<size_t>(e.cls)], e.to);
        for (const auto& r : a.classes[static_cast<size_t>(e.cls)].ranges()) cuts.push_back(r.lo), cuts.push_back(r.hi + 1);
      }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::map<StateSet, CharClass> by_target;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      StateSet to;
      for (const auto& [cls, t] : edges)
        if (cls->contains(cuts[k])) to.push_back(t);
      std::sort(to.begin(), to.end());
      to.erase(std::unique(to.begin(), to.end()), to.end());
      by_target[to].add(cuts[k], cuts[k + 1] - 1);  // surrogates are dropped by CharClass
    }
    for (auto& [to, cls] : by_target) {
      if (cls.empty()) continue;
      KEEL_ASSIGN_OR_RETURN(RuleId next, id_of(to.empty() ? StateSet{} : closure(a, to)));
      b.add_alt(next, {b.ref(from), emit_char_class(b, cls, enc)});
    }
  }
  if (ends.empty()) return b.never("key_dfa");
  return b.choice(std::move(ends), "key_dfa");
}

}  // namespace

Result<Symbol> regex_key_set(GrammarBuilder& b, std::string_view pattern, const std::vector<std::string>& names,
                             KeySet which, CharEncoding enc) {
  return dfa_key_set(b, pattern, names, which, enc, kMaxDfaStates);
}

// A counted repetition (`\w{1000}`, `x{999}`) has an NFA state per copy and its search DFA a state
// per count, so the subset construction would run to max_states before giving up: 50-100 ms of
// compile (and most of regex_fuzz's time) for a pattern that gets the padded form anyway. An NFA
// over twice the DFA bound is not tried.
Result<Symbol> regex_search_dfa(GrammarBuilder& b, std::string_view pattern, CharEncoding enc, size_t max_states) {
  return dfa_key_set(b, pattern, {}, KeySet::kPatternMinusNames, enc, max_states, 2 * max_states);
}

}  // namespace keel::grammar
