#include "grammar/counter_runs.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/counter_rules.h"
#include "grammar/earley.h"
#include "grammar/state_walker.h"

namespace keel::grammar {
namespace {

constexpr uint16_t kDeadItem = UINT16_MAX;
constexpr size_t kMaxItemStates = 64;  // an item automaton larger than this is left to the walks
constexpr uint32_t kMaxItemDepth = 8;  // explored this deep (a `\uXXXX` escape is 6 bytes)
constexpr uint32_t kMaxItems = 256;    // items left at most (a block of blocks: 15 * 16)

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
  // The start is never entered again (a loop back to it would read as an item boundary), and x is
  // prefix-free: a complete item takes no further byte (else a token's items would not split one way).
  if (std::find(a.next.begin(), a.next.end(), uint16_t{0}) != a.next.end()) return std::nullopt;
  for (size_t s = 0; s < a.done.size(); ++s) {
    if (!a.done[s]) continue;
    for (size_t b = 0; b < 256; ++b)
      if (a.next[s * 256 + b] != kDeadItem) return std::nullopt;
  }
  return a;
}

// The classifications of x^L (L items left, then the rule ends) for L = 1 .. n-1, from one walk of
// the trie with the item automaton: each node's tokens are taken for every L at least the items
// started on the way to it (a partial item counts), so the accepted sets grow with L and each token
// is added once, to the set of its own count; the children of a node that ends its c-th whole item
// are uncertain for L = c (the rule ended there, and what follows is the context's), noted as the
// walk meets them (in preorder, so each count's list is ascending).
std::vector<PositionMask> block_classes(const VocabTrie& trie, const ItemAutomaton& a, uint32_t n,
                                        const std::vector<bool>& wanted, size_t n_words) {
  const auto& nodes = trie.nodes();
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> added(n);  // [L]: token ranges first taken at L
  std::vector<PositionMask> out(n);
  // [depth]: automaton state and whole items after the path to that depth.
  std::vector<uint16_t> state(1, 0);
  std::vector<uint32_t> items(1, 0);
  for (uint32_t i = 0; i < nodes.size();) {
    const VocabTrie::Node& node = nodes[i];
    const uint32_t d = node.depth - 1;
    // Its parent ended a whole item (the c-th, c >= 1), and the rule with it for L = c: the tokens
    // below depend on what follows, whatever the automaton says of this byte.
    if (state[d] == 0 && items[d] > 0 && wanted[items[d]] && trie.subtree_tok_begin(i) < trie.subtree_tok_end(i))
      out[items[d]].uncertain.push_back(i);
    uint16_t s = a.next[size_t{state[d]} * 256 + node.byte];
    if (s == kDeadItem) {  // rejected for every L (no item ended on the way, or the rule goes on)
      i = node.subtree_end;
      continue;
    }
    uint32_t whole = items[d];
    if (a.done[s]) {
      ++whole;
      s = 0;
    }
    const uint32_t started = whole + (s != 0 ? 1 : 0);
    if (started >= n) {  // taken by no L below n (its uncertainty, if any, was noted at its parent)
      i = node.subtree_end;
      continue;
    }
    if (node.tok_begin != node.tok_end) {
      auto& r = added[started];
      if (!r.empty() && r.back().second == node.tok_begin) {
        r.back().second = node.tok_end;
      } else {
        r.emplace_back(node.tok_begin, node.tok_end);
      }
    }
    if (state.size() <= node.depth) {
      state.resize(node.depth + 1);
      items.resize(node.depth + 1);
    }
    state[node.depth] = s;
    items[node.depth] = whole;
    ++i;
  }
  // Stored as TokenMaskCache::classify stores: a bitset, or sorted ids when fewer tokens than words.
  // Both grow with L: the bits and the ids of every token taken at L or below.
  const auto& ids = trie.token_ids();
  std::vector<uint32_t> bits(n_words, 0);
  std::vector<int32_t> taken;  // kept while fewer than n_words (the ids form is used only then)
  for (uint32_t L = 1; L < n; ++L) {
    for (auto [b, e] : added[L]) {
      trie.mark_tokens(bits, b, e);
      if (taken.size() < n_words) taken.insert(taken.end(), ids.begin() + b, ids.begin() + e);
    }
    if (!wanted[L]) continue;
    if (taken.size() >= n_words) {
      out[L].accepted_bits = bits;
      continue;
    }
    out[L].accepted_ids = taken;
    std::sort(out[L].accepted_ids.begin(), out[L].accepted_ids.end());
  }
  return out;
}

// How many copies of one symbol rule r's only alternative is (0 when it is not x x ... x).
uint32_t copies(const CompiledGrammar& g, uint32_t r) {
  const uint32_t start = g.alt_starts(r)[0];
  const FlatSymbol x = g.symbol(start);
  uint32_t n = 0;
  while (g.symbol(start + n).kind == x.kind && g.symbol(start + n).index == x.index) ++n;
  return g.symbol(start + n).kind == FlatSymbol::Kind::kEnd ? n : 0;
}

}  // namespace

uint32_t classify_blocks_by_runs(TokenMaskCache& masks) {
  const CompiledGrammar& g = masks.grammar();
  const Grammar& ir = g.grammar();
  SharedClassifications& shared = masks.shared_classifications();
  uint32_t stored = 0;
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {
    if (ir.rules[r].name != counter_rules::kBlock || g.alt_starts(r).size() != 1) continue;
    const uint32_t start = g.alt_starts(r)[0];
    const uint32_t n = copies(g, r);
    if (n < 2) continue;
    // x may be a block itself (a bound above 16 * 32): then one x is `width` items of the innermost
    // block's symbol, and the automaton is that symbol's, seeded before the innermost's last copy.
    uint32_t width = 1, seed = start + n - 1;
    for (FlatSymbol x = g.symbol(start); x.kind == FlatSymbol::Kind::kRule && x.index < ir.rules.size() &&
                                         ir.rules[x.index].name == counter_rules::kBlock &&
                                         g.alt_starts(x.index).size() == 1;) {
      const uint32_t m = copies(g, x.index);
      if (m < 2) break;
      width *= m;
      seed = g.alt_starts(x.index)[0] + m - 1;
      x = g.symbol(g.alt_starts(x.index)[0]);
    }
    if ((n - 1) * width >= kMaxItems) continue;
    // Position start + k has (n - k) * width items left; those the store lacks are made here.
    std::vector<std::pair<uint32_t, std::string>> missing;  // (items left, key)
    std::vector<bool> wanted((n - 1) * width + 1, false);
    for (uint32_t k = 1; k < n; ++k) {
      std::optional<std::string> key = position_key(g, start + k, shared.max_key_bytes());
      if (key && shared.find(*key) == nullptr) {
        missing.emplace_back((n - k) * width, std::move(*key));
        wanted[(n - k) * width] = true;
      }
    }
    if (missing.empty()) continue;
    const std::optional<ItemAutomaton> a = item_automaton(masks, seed);
    if (!a) continue;
    std::vector<PositionMask> made = block_classes(masks.trie(), *a, (n - 1) * width + 1, wanted, masks.n_mask_words());
    for (auto& [left, key] : missing) {
      shared.insert(key, std::make_shared<const PositionMask>(std::move(made[left])));
      ++stored;
    }
  }
  return stored;
}

}  // namespace keel::grammar
