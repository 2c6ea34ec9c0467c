#include "grammar/counter_runs.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/earley.h"
#include "grammar/state_walker.h"

namespace keel::grammar {
namespace {

constexpr uint16_t kDeadItem = UINT16_MAX;
constexpr size_t kMaxItemStates = 64;  // an item automaton larger than this is left to the walks
constexpr uint32_t kMaxItemDepth = 8;  // explored this deep (a `\uXXXX` escape is 6 bytes)
constexpr uint8_t kGone = 0xFF;        // run code of a node the walk did not reach alive

// One item's automaton, read off the state table from a parser seeded before a single x: state 0
// is the start, next[s * 256 + b] the state after byte b, done[s] whether an item is complete there
// (such a state takes no further byte: x is prefix-free).
struct ItemAutomaton {
  std::vector<uint16_t> next;
  std::vector<uint8_t> done;
};

std::optional<ItemAutomaton> item_automaton(TokenMaskCache& masks, uint32_t seed_pos) {
  EarleyParser parser(masks.grammar(), seed_pos, &masks.states());
  if (parser.seed_completed() || parser.state() == StateTable::kNone) return std::nullopt;
  StateWalker walk(parser, masks.states());
  ItemAutomaton a{.next = std::vector<uint16_t>(256, kDeadItem), .done = {0}};
  std::unordered_map<StateTable::State, uint16_t> index{{parser.state(), 0}};
  bool ok = true;
  // Depth-first over the item's byte strings; each state is expanded once, at the first depth it is
  // met (the walker's path up to there leads to it).
  auto expand = [&](auto& self, uint32_t d, uint16_t s) -> void {
    for (int b = 0; b < 256 && ok; ++b) {
      const StateWalker::Step st = walk.step(d, static_cast<uint8_t>(b));
      if (st.state == StateTable::kDead) continue;
      if (st.state == StateTable::kNone || d + 1 > kMaxItemDepth) {
        ok = false;
        return;
      }
      auto [it, inserted] = index.try_emplace(st.state, static_cast<uint16_t>(a.done.size()));
      if (inserted) {
        if (a.done.size() >= kMaxItemStates) {
          ok = false;
          return;
        }
        a.next.resize(a.next.size() + 256, kDeadItem);
        a.done.push_back((st.flags & StateTable::kSeedEnd) != 0);
      }
      a.next[size_t{s} * 256 + static_cast<size_t>(b)] = it->second;
      if (inserted) self(self, d + 1, it->second);
    }
  };
  expand(expand, 0, 0);
  if (!ok) return std::nullopt;
  // Prefix-free: a complete item takes no further byte (else a token's items would not split one way).
  for (size_t s = 0; s < a.done.size(); ++s) {
    if (!a.done[s]) continue;
    for (size_t b = 0; b < 256; ++b)
      if (a.next[s * 256 + b] != kDeadItem) return std::nullopt;
  }
  return a;
}

// Per trie node: items started on the way to it (a partial item counts), capped at n, with bit 7 set
// when the node ends a whole item (or kGone: not reached alive). Per node too, the greatest count in
// its subtree when every node there is alive (kGone otherwise), for whole-subtree acceptance.
struct Runs {
  std::vector<uint8_t> code, subtree_max;
};

Runs item_runs(const VocabTrie& trie, const ItemAutomaton& a, uint32_t n) {
  const auto& nodes = trie.nodes();
  Runs r{.code = std::vector<uint8_t>(nodes.size(), kGone), .subtree_max = std::vector<uint8_t>(nodes.size(), kGone)};
  // [depth]: automaton state and whole items after the path to that depth.
  std::vector<uint16_t> state(1, 0);
  std::vector<uint32_t> items(1, 0);
  for (uint32_t i = 0; i < nodes.size();) {
    const VocabTrie::Node& node = nodes[i];
    const uint32_t d = node.depth - 1;
    uint16_t s = a.next[size_t{state[d]} * 256 + node.byte];
    if (s == kDeadItem) {
      i = node.subtree_end;
      continue;
    }
    uint32_t whole = items[d];
    if (a.done[s]) {
      ++whole;
      s = 0;
    }
    const uint32_t started = whole + (s != 0 ? 1 : 0);
    r.code[i] = static_cast<uint8_t>(std::min(started, n) | (s == 0 ? 0x80u : 0u));
    if (started >= n) {  // no count below n takes more: the subtree is not needed
      i = node.subtree_end;
      continue;
    }
    if (state.size() <= node.depth) {
      state.resize(node.depth + 1);
      items.resize(node.depth + 1);
    }
    state[node.depth] = s;
    items[node.depth] = whole;
    ++i;
  }
  // Bottom-up: a node's subtree is whole when it and all its children's subtrees are.
  for (uint32_t i = static_cast<uint32_t>(nodes.size()); i-- > 0;) {
    if (r.code[i] == kGone) continue;
    uint8_t m = r.code[i] & 0x7F;
    for (uint32_t c = i + 1; c < nodes[i].subtree_end && m != kGone; c = nodes[c].subtree_end)
      m = r.subtree_max[c] == kGone ? kGone : std::max(m, r.subtree_max[c]);
    r.subtree_max[i] = m;
  }
  return r;
}

// The classification of x^L (L items left, then the rule ends) from the runs.
PositionMask classify_run(const VocabTrie& trie, const Runs& r, uint32_t L, size_t n_words) {
  const auto& nodes = trie.nodes();
  PositionMask out;
  std::vector<std::pair<uint32_t, uint32_t>> accepted;
  size_t n_accepted = 0;
  auto accept = [&](uint32_t b, uint32_t e) {
    if (b == e) return;
    n_accepted += e - b;
    if (!accepted.empty() && accepted.back().second == b) {
      accepted.back().second = e;
    } else {
      accepted.emplace_back(b, e);
    }
  };
  for (uint32_t i = 0; i < nodes.size();) {
    const uint8_t code = r.code[i];
    if (code == kGone || (code & 0x7F) > L) {  // rejected: the rule had not ended before it
      i = nodes[i].subtree_end;
      continue;
    }
    if (r.subtree_max[i] <= L) {
      accept(nodes[i].tok_begin, trie.subtree_tok_end(i));
      i = nodes[i].subtree_end;
      continue;
    }
    accept(nodes[i].tok_begin, nodes[i].tok_end);
    if ((code & 0x80) != 0 && (code & 0x7F) == L) {
      // The L-th item ends here, and the rule with it: every child's subtree depends on what follows.
      for (uint32_t c = i + 1; c < nodes[i].subtree_end; c = nodes[c].subtree_end)
        if (trie.subtree_tok_begin(c) < trie.subtree_tok_end(c)) out.uncertain.push_back(c);
      i = nodes[i].subtree_end;
      continue;
    }
    ++i;
  }
  // Stored as TokenMaskCache::classify stores: the set of every token with the gaps cleared when
  // most are taken, a bitset, or sorted ids when few are.
  const auto& ids = trie.token_ids();
  if (2 * n_accepted > ids.size()) {
    out.accepted_bits = trie.token_bits();
    uint32_t prev = 0;
    for (auto [b, e] : accepted) {
      trie.mark_tokens(out.accepted_bits, prev, b, /*set=*/false);
      prev = e;
    }
    trie.mark_tokens(out.accepted_bits, prev, static_cast<uint32_t>(ids.size()), /*set=*/false);
  } else if (n_accepted >= n_words) {
    out.accepted_bits.assign(n_words, 0);
    for (auto [b, e] : accepted) trie.mark_tokens(out.accepted_bits, b, e);
  } else {
    out.accepted_ids.reserve(n_accepted);
    for (auto [b, e] : accepted)
      for (uint32_t t = b; t < e; ++t) out.accepted_ids.push_back(ids[t]);
    std::sort(out.accepted_ids.begin(), out.accepted_ids.end());
  }
  return out;
}

}  // namespace

uint32_t classify_blocks_by_runs(TokenMaskCache& masks) {
  const CompiledGrammar& g = masks.grammar();
  const Grammar& ir = g.grammar();
  SharedClassifications& shared = masks.shared_classifications();
  uint32_t stored = 0;
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {
    if (ir.rules[r].name != "block" || g.alt_starts(r).size() != 1) continue;
    const uint32_t start = g.alt_starts(r)[0];
    const FlatSymbol x = g.symbol(start);
    uint32_t n = 0;
    while (g.symbol(start + n).kind == x.kind && g.symbol(start + n).index == x.index) ++n;
    if (g.symbol(start + n).kind != FlatSymbol::Kind::kEnd || n < 2 || n > 127) continue;  // not x x ... x
    // Position start + k has n - k items left; those the store lacks are made here.
    std::vector<std::pair<uint32_t, std::string>> wanted;
    for (uint32_t k = 1; k < n; ++k) {
      std::optional<std::string> key = position_key(g, start + k, shared.max_key_bytes());
      if (key && shared.find(*key) == nullptr) wanted.emplace_back(n - k, std::move(*key));
    }
    if (wanted.empty()) continue;
    const std::optional<ItemAutomaton> a = item_automaton(masks, start + n - 1);
    if (!a) continue;
    const Runs runs = item_runs(masks.trie(), *a, n);
    for (auto& [left, key] : wanted) {
      shared.insert(key, std::make_shared<const PositionMask>(classify_run(masks.trie(), runs, left, masks.n_mask_words())));
      ++stored;
    }
  }
  return stored;
}

}  // namespace keel::grammar
