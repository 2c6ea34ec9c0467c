// GrammarMatcher::fill_by_count: the mask of a state that counts text characters (a string under a
// maxLength/minLength counter, or a string body's loop), built from the vocabulary's TextCounts
// instead of kernel positions and their uncertain subtrees. The state's text chain c_0 = the
// state, c_{j+1} = where every text character leads from c_j (StateWalker::text_run > 0 says every
// one leads to the same live state), followed to its end c_L (a state that does not take every text
// character alike) or kDepth steps:
//  - ended at L and c_L rejects every text character's first byte: exactly the text tokens of at
//    most L characters are taken (upto(L)), and of the others only those leaving text within L
//    characters can be: each exit group (k characters, then byte b) is settled for all its nodes by
//    one row read of c_k, and the live ones are walked from there;
//  - kDepth steps without an end: upto(kDepth), the exits within kDepth - 1 characters, and the
//    subtrees of the deep nodes (kDepth characters of text and more) walked from c_kDepth.
// Near a block's end the uncertain walk from the full parse stepped every trie node deeper than
// what was left (docs/grammar.md, "6."); here the text nodes are never visited.
#include <algorithm>
#include <string>
#include <string_view>

#include "grammar/matcher.h"
#include "grammar/state_shapes.h"
#include "grammar/state_walker.h"
#include "grammar/text_counts.h"

namespace keel::grammar {
namespace {

// States the text run past the chain is searched for (each a step per UTF-8 byte class when new):
// deep nodes' text rarely runs more than a few characters past kDepth, and in a long counted string
// the next masks find the bounds this search stored.
constexpr uint32_t kDeepSearch = 4;
// States after an exit group's byte a matcher keeps the group's taken tokens for (a counted string's
// closing quote leads to one; a few strings may be open in turns, in arrays of objects).
constexpr size_t kExitStates = 4;

}  // namespace

// Every chain state takes every text character alike into the next, so c_j surely takes kDepth - j +
// deep_run characters: kept for it and its shape (state_shapes.h) where longer than what its own
// search found, so the first mask of the same string in another context finds c_kDepth's run as long
// as a later mask here found it (a 4-state search's bound left most deep nodes to be walked).
void GrammarMatcher::raise_chain_runs(uint32_t deep_run) {
  constexpr uint32_t kDepth = TextCounts::kDepth;
  constexpr uint32_t kLongest = 253;  // 254 means a loop (unbounded): not claimed here
  StateTable& table = masks_->states();
  StateShapes* shapes = table.shapes();
  for (uint32_t j = 0; j <= kDepth && j < chain_.size(); ++j) {
    const StateTable::State c = chain_[j];
    if (c == StateTable::kNone || c == StateTable::kDead) continue;
    const auto run = static_cast<uint8_t>(std::min(kLongest, kDepth - j + deep_run) + 1);
    if (table.text_run(c) >= run) continue;
    table.set_text_run(c, run);
    if (shapes != nullptr) shapes->note(table, c, run);
  }
}

bool GrammarMatcher::fill_by_count(std::span<uint32_t> bitmask) {
  constexpr uint32_t kDepth = TextCounts::kDepth;
  const VocabTrie& trie = masks_->trie();
  const TextCounts& counts = trie.text_counts();
  StateTable& table = masks_->states();
  const StateTable::State s = parser_.state();
  if (table.text_run(s) == 1) return false;  // known: s does not take every text character alike
  StateWalker walk(parser_, table);
  walk.share_text_runs();
  chain_.assign(1, s);
  uint32_t L = 0;
  while (L < kDepth && walk.text_run(L) > 0) {
    chain_.push_back(walk.step(L, 'a').state);  // every text character leads there
    ++L;
  }
  if (L == 0) return false;
  // Whether the chain's last state rejects every text character: then nothing longer is taken.
  bool ended = true;
  for (int b = 0x20; b <= 0xF4 && ended; b = b == 0x7e ? 0xC2 : b + 1)
    if (b >= 0xC2 || VocabTrie::plain(static_cast<uint8_t>(b)))
      ended = walk.step(L, static_cast<uint8_t>(b)).state == StateTable::kDead;
  if (!ended && L < kDepth) return false;  // c_L takes some text characters, not all alike
  // Past kDepth: how many more characters any deep node's text takes (searched a few states deep).
  const uint32_t deep_run = ended ? 0 : walk.text_run(kDepth, kDeepSearch);
  if (deep_run > 0) raise_chain_runs(deep_run);
  ++count_walks_;
  const std::vector<uint32_t>& text = counts.upto(L);
  const size_t n_words = masks_->n_mask_words();
  for (size_t w = 0; w < n_words; ++w) bitmask[w] |= text[w];
  const auto& nodes = trie.nodes();
  // Walks node's subtree from c_k, the state after node's path up to its last character boundary
  // (the path is text), stepping only the `tail` bytes after that boundary.
  auto walk_from = [&](uint32_t node, uint32_t k, uint32_t tail) {
    const std::string& bytes = trie.vocab().token_bytes[trie.token_ids()[nodes[node].tok_begin]];
    const uint32_t at = nodes[node].depth - 1 - tail;
    walk.seek(std::string_view(bytes).substr(0, at), chain_[k]);
    for (uint32_t d = at; d + 1 < nodes[node].depth; ++d)
      if (walk.step(d, static_cast<uint8_t>(bytes[d])).state == StateTable::kDead) return;
    walk_below(walk, node, bitmask);
  };
  const std::vector<uint32_t>& exits = counts.exits();
  for (size_t gi = 0; gi < counts.groups().size(); ++gi) {
    const TextCounts::Group& g = counts.groups()[gi];
    // After k complete characters the parse stands in c_k; a partial character needs one more
    // taken, and exits after kDepth characters lie below the deep nodes unless the chain ended.
    if (g.k > L || (g.k == L && (g.partial || !ended))) continue;
    if (g.partial) {
      for (uint32_t e = g.begin; e < g.end; ++e) walk_from(exits[e], g.k, counts.exit_tails()[e]);
      continue;
    }
    // Every node of a whole-character group stands in c_k and takes g.byte: the state x after it
    // is one for the group, and x alone decides which tokens below the nodes are taken (an
    // interned state accepts exactly one language). The state after a closing quote is the same
    // for every count, so the next masks of a counted string read the group's tokens back.
    const StateTable::State c = chain_[g.k];
    StateTable::State x = table.next(c, g.byte);
    if (x == StateTable::kDead) continue;
    if (x == StateTable::kUnknown) {  // a new transition: stepped at the group's first node
      const uint32_t node = exits[g.begin];
      const std::string& bytes = trie.vocab().token_bytes[trie.token_ids()[nodes[node].tok_begin]];
      walk.seek(std::string_view(bytes).substr(0, nodes[node].depth - 1), c);
      x = walk.step(nodes[node].depth - 1, g.byte).state;
      if (x == StateTable::kDead) continue;
    }
    // Per group a few states: a state after a backslash is new at every count, so an entry is
    // filled at its state's second walk (gathering tokens never read again cost more than the
    // reads saved: warm masks).
    if (exit_cache_.size() != counts.groups().size()) exit_cache_.assign(counts.groups().size(), {});
    std::vector<ExitEntry>& entries = exit_cache_[gi];
    ExitEntry* entry = nullptr;
    for (ExitEntry& en : entries)
      if (en.x == x) entry = &en;
    if (entry != nullptr && entry->kept) {
      for (const uint32_t id : entry->tokens) bitmask[id >> 5] |= 1u << (id & 31);
      ++exit_cache_hits_;
      continue;
    }
    for (uint32_t e = g.begin; e < g.end; ++e) walk_from(exits[e], g.k, counts.exit_tails()[e]);
    if (x == StateTable::kNone) continue;  // no interned state to key by
    if (entry == nullptr) {  // first walk from x: remembered, in the oldest entry's place when full
      if (entries.size() < kExitStates) {
        entries.push_back({x, false, {}});
      } else {
        std::rotate(entries.begin(), entries.begin() + 1, entries.end());
        entries.back() = {x, false, {}};
      }
      continue;
    }
    // The tokens just taken below the group's nodes (no other part of the mask marks them: every
    // token is text, below one exit or below one deep node).
    entry->kept = true;
    for (uint32_t e = g.begin; e < g.end; ++e)
      for (uint32_t t = nodes[exits[e]].tok_begin; t < trie.subtree_tok_end(exits[e]); ++t) {
        const uint32_t id = trie.token_ids()[t];
        if ((bitmask[id >> 5] >> (id & 31) & 1u) != 0) entry->tokens.push_back(id);
      }
  }
  if (!ended) {
    for (size_t i = 0; i < counts.deep().size(); ++i) {
      const uint32_t d = counts.deep()[i];
      const uint8_t h = counts.deep_heights()[i];
      if (h != 0 && h <= deep_run) {  // all text, within the run: taken whole
        trie.mark_tokens(bitmask, nodes[d].tok_begin, trie.subtree_tok_end(d));
      } else {
        walk_from(d, kDepth - 1, counts.deep_tails()[i]);
      }
    }
  }
  return true;
}

}  // namespace keel::grammar
