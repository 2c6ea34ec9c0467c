#include "grammar/repeat_runs.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammar/counter_rules.h"
#include "grammar/earley.h"
#include "grammar/state_walker.h"

namespace keel::grammar {
namespace {

constexpr uint16_t kDead = UINT16_MAX;
constexpr size_t kMaxItemStates = 64;  // an item automaton larger than this is left to the walks
constexpr uint32_t kMaxItemDepth = 8;  // explored this deep (a `\uXXXX` escape is 6 bytes)
constexpr uint32_t kUnbounded = UINT32_MAX;

// x's automaton: state 0 the start, next[s * 256 + b], done[s] an item complete (takes no byte).
struct Automaton {
  std::vector<uint16_t> next;
  std::vector<uint8_t> done;
};

// The automaton of rule x, determinised over its alternatives: each alternative is read off the state
// table from a parser seeded at its start (its end is the seed's rule ending), and a state of the
// automaton is the set of (alternative, parser state) still alive.
std::optional<Automaton> rule_automaton(TokenMaskCache& masks, uint32_t x) {
  const CompiledGrammar& g = masks.grammar();
  if (g.nullable(x) || g.alt_starts(x).empty()) return std::nullopt;
  std::vector<std::unique_ptr<EarleyParser>> parsers;
  std::vector<std::unique_ptr<StateWalker>> walks;
  using Set = std::vector<std::pair<uint32_t, StateTable::State>>;  // (alternative, state), ascending
  Set start;
  for (uint32_t a : g.alt_starts(x)) {
    const FlatSymbol first = g.symbol(a);
    if (first.kind == FlatSymbol::Kind::kRule && first.index == x) return std::nullopt;  // left-recursive
    parsers.push_back(std::make_unique<EarleyParser>(g, a, &masks.states()));
    if (parsers.back()->state() == StateTable::kNone) return std::nullopt;
    walks.push_back(std::make_unique<StateWalker>(*parsers.back(), masks.states()));
    start.emplace_back(static_cast<uint32_t>(start.size()), parsers.back()->state());
  }
  Automaton out{.next = std::vector<uint16_t>(256, kDead), .done = {0}};
  std::map<Set, uint16_t> index{{start, 0}};
  bool ok = true;
  auto expand = [&](auto& self, uint32_t d, uint16_t id, const Set& at) -> void {
    for (int b = 0; b < 256 && ok; ++b) {
      Set to;
      bool done = false;
      for (auto [alt, s] : at) {
        const StateWalker::Step st = walks[alt]->step(d, static_cast<uint8_t>(b));
        if (st.state == StateTable::kDead) continue;
        if (st.state == StateTable::kNone) ok = false;
        to.emplace_back(alt, st.state);
        done |= (st.flags & StateTable::kSeedEnd) != 0;
      }
      if (to.empty() || !ok) continue;
      if (d + 1 > kMaxItemDepth) {
        ok = false;
        return;
      }
      auto [it, inserted] = index.try_emplace(to, static_cast<uint16_t>(out.done.size()));
      if (inserted) {
        if (out.done.size() >= kMaxItemStates) {
          ok = false;
          return;
        }
        out.next.resize(out.next.size() + 256, kDead);
        out.done.push_back(done);
      }
      out.next[size_t{id} * 256 + static_cast<size_t>(b)] = it->second;
      if (inserted) self(self, d + 1, it->second, to);
    }
  };
  expand(expand, 0, 0, start);
  if (!ok) return std::nullopt;
  // The start is never entered again, and x is prefix-free: a complete item takes no further byte.
  if (std::find(out.next.begin(), out.next.end(), uint16_t{0}) != out.next.end()) return std::nullopt;
  for (size_t s = 0; s < out.done.size(); ++s)
    if (out.done[s] && std::any_of(out.next.begin() + s * 256, out.next.begin() + (s + 1) * 256, [](uint16_t n) { return n != kDead; }))
      return std::nullopt;
  return out;
}

std::optional<Automaton> item_automaton(TokenMaskCache& masks, FlatSymbol x) {
  if (x.kind == FlatSymbol::Kind::kRule) return rule_automaton(masks, x.index);
  if (x.kind != FlatSymbol::Kind::kBytes) return std::nullopt;
  Automaton a{.next = std::vector<uint16_t>(512, kDead), .done = {0, 1}};
  const ByteSet& set = masks.grammar().byte_set(x.index);
  for (int b = 0; b < 256; ++b)
    if (set.test(static_cast<uint8_t>(b))) a.next[static_cast<size_t>(b)] = 1;
  return a;
}

// Whether every text character (VocabTrie::text_height: a plain byte, a UTF-8 character U+0080..
// U+10FFFF but surrogates) is one whole item, each of its proper prefixes alive and not complete.
bool takes_text(const Automaton& a) {
  struct Range {
    uint8_t lo, hi;
  };
  static const std::vector<std::vector<Range>> kForms = {
      {{0xC2, 0xDF}, {0x80, 0xBF}},
      {{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}},
      {{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}},
      {{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}},
      {{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}},
      {{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
      {{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
      {{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}}};
  for (int b = 0; b < 256; ++b) {
    const uint16_t s = a.next[static_cast<size_t>(b)];
    if (VocabTrie::plain(static_cast<uint8_t>(b)) && (s == kDead || !a.done[s])) return false;
  }
  for (const auto& form : kForms) {
    std::vector<uint16_t> at{0};
    for (size_t k = 0; k < form.size(); ++k) {
      std::vector<uint16_t> to;
      for (uint16_t s : at) {
        for (int b = form[k].lo; b <= form[k].hi; ++b) {
          const uint16_t n = a.next[size_t{s} * 256 + static_cast<size_t>(b)];
          if (n == kDead || a.done[n] != (k + 1 == form.size())) return false;
          if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
        }
      }
      at = std::move(to);
    }
  }
  return true;
}

// The item counts a symbol's language allows, each word being x^n: n up to `cap` one by one, and
// whether any count above cap is allowed (a token starts at most cap items, so those are alike).
struct Counts {
  std::vector<uint8_t> has;  // [cap + 1]
  bool over = false;
};

class CountSets {
 public:
  CountSets(const CompiledGrammar& g, FlatSymbol x, uint32_t cap) : g_(g), x_(x), cap_(cap) {}

  std::optional<Counts> of(FlatSymbol s) {
    if (s.kind == x_.kind && s.index == x_.index) return single(1);
    if (s.kind != FlatSymbol::Kind::kRule) return std::nullopt;
    if (auto it = memo_.find(s.index); it != memo_.end()) return it->second;
    if (!open_.insert(s.index).second) return std::nullopt;  // recursion other than `r ::= r ...`
    std::optional<Counts> c = rule(s.index);
    open_.erase(s.index);
    memo_.emplace(s.index, c);
    return c;
  }

 private:
  Counts single(uint32_t n) const {
    Counts c{.has = std::vector<uint8_t>(cap_ + 1, 0)};
    if (n <= cap_) {
      c.has[n] = 1;
    } else {
      c.over = true;
    }
    return c;
  }
  Counts sum(const Counts& a, const Counts& b) const {
    Counts c{.has = std::vector<uint8_t>(cap_ + 1, 0)};
    const bool a_any = a.over || std::count(a.has.begin(), a.has.end(), 1) > 0;
    const bool b_any = b.over || std::count(b.has.begin(), b.has.end(), 1) > 0;
    c.over = (a.over && b_any) || (b.over && a_any);
    for (uint32_t i = 0; i <= cap_; ++i) {
      if (!a.has[i]) continue;
      for (uint32_t j = 0; j <= cap_; ++j) {
        if (!b.has[j]) continue;
        if (i + j <= cap_) {
          c.has[i + j] = 1;
        } else {
          c.over = true;
        }
      }
    }
    return c;
  }
  // The counts of the symbols [p, end of the alternative).
  std::optional<Counts> seq(uint32_t p) {
    Counts c = single(0);
    for (; g_.symbol(p).kind != FlatSymbol::Kind::kEnd; ++p) {
      std::optional<Counts> s = of(g_.symbol(p));
      if (!s) return std::nullopt;
      c = sum(c, *s);
    }
    return c;
  }
  std::optional<Counts> rule(uint32_t r) {
    Counts base{.has = std::vector<uint8_t>(cap_ + 1, 0)};
    std::vector<Counts> loops;  // r ::= r beta: each beta's counts, added any number of times
    for (uint32_t a : g_.alt_starts(r)) {
      const FlatSymbol first = g_.symbol(a);
      const bool left = first.kind == FlatSymbol::Kind::kRule && first.index == r;
      std::optional<Counts> c = seq(left ? a + 1 : a);
      if (!c) return std::nullopt;
      if (left) {
        loops.push_back(std::move(*c));
        continue;
      }
      for (uint32_t i = 0; i <= cap_; ++i) base.has[i] |= c->has[i];
      base.over |= c->over;
    }
    for (bool grew = true; grew;) {
      grew = false;
      for (const Counts& l : loops) {
        const Counts more = sum(base, l);
        for (uint32_t i = 0; i <= cap_; ++i) {
          grew |= more.has[i] && !base.has[i];
          base.has[i] |= more.has[i];
        }
        grew |= more.over && !base.over;
        base.over |= more.over;
      }
    }
    return base;
  }

  const CompiledGrammar& g_;
  FlatSymbol x_;
  uint32_t cap_;
  std::map<uint32_t, std::optional<Counts>> memo_;
  std::unordered_set<uint32_t> open_;
};

// The item of a counter: the first symbol below `repeat` that is not one of the counter's own rules.
std::optional<FlatSymbol> counter_item(const CompiledGrammar& g, uint32_t r, int depth = 0) {
  static constexpr std::string_view kCounter[] = {counter_rules::kRepeat, counter_rules::kUpTo, counter_rules::kExactly,
                                                  counter_rules::kBlock,  counter_rules::kStar, counter_rules::kPlus,
                                                  counter_rules::kEmpty};
  const Grammar& ir = g.grammar();
  if (depth > 8) return std::nullopt;
  for (uint32_t a : g.alt_starts(r)) {
    for (uint32_t p = a; g.symbol(p).kind != FlatSymbol::Kind::kEnd; ++p) {
      const FlatSymbol s = g.symbol(p);
      const bool counter = s.kind == FlatSymbol::Kind::kRule && s.index < ir.rules.size() &&
                           std::find(std::begin(kCounter), std::end(kCounter), ir.rules[s.index].name) != std::end(kCounter);
      if (!counter) return s;
      if (s.index == r) continue;
      if (auto x = counter_item(g, s.index, depth + 1)) return x;
    }
  }
  return std::nullopt;
}

struct Repeat {
  Automaton item;
  Counts counts;
  uint32_t max_count;  // the most items any word has (kUnbounded past the cap)
  bool text;           // every text character is one item: text subtrees are taken by height
};

// Position p's classification: p stands before `repeat close`, then its rule ends.
PositionMask classify_start(const TokenMaskCache& masks, const Repeat& rep, const ByteSet& close) {
  const VocabTrie& trie = masks.trie();
  const auto& nodes = trie.nodes();
  PositionMask out;
  AcceptedRanges accepted;
  // [depth]: automaton state and whole items after the path to that depth.
  std::vector<uint16_t> state(1, 0);
  std::vector<uint32_t> items(1, 0);
  for (uint32_t i = 0; i < nodes.size();) {
    const VocabTrie::Node& node = nodes[i];
    const uint32_t d = node.depth - 1;
    const uint16_t at = state[d];
    const uint32_t whole = items[d];
    // A run of text siblings whose tokens start no more items than are left.
    if (at == 0 && rep.text && trie.text_height(i) > 0 &&
        (rep.max_count == kUnbounded || whole + trie.text_span_height(i) <= rep.max_count)) {
      const uint32_t e = trie.text_span_end(i);
      accepted.add(node.tok_begin, trie.tok_begin_at(e));
      i = e;
      continue;
    }
    if (at == 0 && close.test(node.byte)) {
      // The closing byte after `whole` items: the rule ends here when that count is allowed, and
      // what follows it is the context's.
      if (rep.counts.has[whole]) {
        accepted.add(node.tok_begin, node.tok_end);
        for (uint32_t c = i + 1; c < node.subtree_end; c = nodes[c].subtree_end)
          if (trie.subtree_tok_begin(c) < trie.subtree_tok_end(c)) out.uncertain.push_back(c);
      }
      i = node.subtree_end;
      continue;
    }
    uint16_t s = rep.item.next[size_t{at} * 256 + node.byte];
    if (s == kDead) {
      i = node.subtree_end;
      continue;
    }
    uint32_t now = whole;
    if (rep.item.done[s]) {
      ++now;
      s = 0;
    }
    const uint32_t started = now + (s != 0 ? 1 : 0);
    if (rep.max_count != kUnbounded && started > rep.max_count) {
      i = node.subtree_end;
      continue;
    }
    accepted.add(node.tok_begin, node.tok_end);
    if (state.size() <= node.depth) {
      state.resize(node.depth + 1);
      items.resize(node.depth + 1);
    }
    state[node.depth] = s;
    items[node.depth] = now;
    ++i;
  }
  accepted.store(trie, masks.n_mask_words(), out);
  return out;
}

// Repeat rule r over its item, when the item is prefix-free and the counts are item counts.
std::optional<Repeat> read_repeat(TokenMaskCache& masks, uint32_t r, uint32_t cap) {
  const CompiledGrammar& g = masks.grammar();
  const std::optional<FlatSymbol> x = counter_item(g, r);
  if (!x) return std::nullopt;
  CountSets sets(g, *x, cap);
  std::optional<Counts> counts = sets.of(FlatSymbol{.kind = FlatSymbol::Kind::kRule, .index = r});
  if (!counts) return std::nullopt;
  std::optional<Automaton> item = item_automaton(masks, *x);
  if (!item) return std::nullopt;
  uint32_t max_count = kUnbounded;
  if (!counts->over) {
    max_count = 0;
    for (uint32_t n = 0; n <= cap; ++n)
      if (counts->has[n]) max_count = n;
  }
  const bool text = takes_text(*item);
  return Repeat{.item = std::move(*item), .counts = std::move(*counts), .max_count = max_count, .text = text};
}

}  // namespace

uint32_t classify_repeat_starts_by_runs(TokenMaskCache& masks) {
  const CompiledGrammar& g = masks.grammar();
  const Grammar& ir = g.grammar();
  SharedClassifications& shared = masks.shared_classifications();
  uint32_t cap = 0;  // the most items a token starts: one per byte at most
  for (const VocabTrie::Node& n : masks.trie().nodes()) cap = std::max(cap, n.depth);
  ++cap;
  uint32_t stored = 0;
  std::map<uint32_t, std::optional<Repeat>> repeats;  // by rule
  for (uint32_t r = 0; r < g.n_rules(); ++r) {
    // A left-recursive rule's positions are keyed with the rule (shared_classes.cc), and walked.
    const auto& alts = g.alt_starts(r);
    if (std::any_of(alts.begin(), alts.end(), [&](uint32_t a) {
          return g.symbol(a).kind == FlatSymbol::Kind::kRule && g.symbol(a).index == r;
        }))
      continue;
    for (uint32_t a : alts) {
      for (uint32_t p = a + 1; g.symbol(p).kind != FlatSymbol::Kind::kEnd; ++p) {
        const FlatSymbol rep = g.symbol(p), close = g.symbol(p + 1);
        if (rep.kind != FlatSymbol::Kind::kRule || rep.index >= ir.rules.size() ||
            ir.rules[rep.index].name != counter_rules::kRepeat || close.kind != FlatSymbol::Kind::kBytes ||
            g.symbol(p + 2).kind != FlatSymbol::Kind::kEnd)
          continue;
        // A sub-grammar too large for a key (a long minLength is a copy per character) is not
        // shared; its classification is made for this grammar alone.
        std::optional<std::string> key = position_key(g, p, shared.max_key_bytes());
        if (key ? shared.find(*key) != nullptr : masks.classified(p)) continue;
        auto it = repeats.find(rep.index);
        if (it == repeats.end()) it = repeats.emplace(rep.index, read_repeat(masks, rep.index, cap)).first;
        if (!it->second) continue;
        const ByteSet& bytes = g.byte_set(close.index);
        // The closing byte must not start an item, or a token's bytes would not split one way.
        bool clash = false;
        for (int b = 0; b < 256; ++b) clash |= bytes.test(static_cast<uint8_t>(b)) && it->second->item.next[static_cast<size_t>(b)] != kDead;
        if (clash) continue;
        auto made = std::make_shared<const PositionMask>(classify_start(masks, *it->second, bytes));
        if (key) {
          shared.insert(*key, std::move(made));
        } else {
          masks.put(p, std::move(made));
        }
        ++stored;
      }
    }
  }
  return stored;
}

}  // namespace keel::grammar
