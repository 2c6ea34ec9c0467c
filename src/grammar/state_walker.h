// StateWalker: follows byte paths (vocabulary trie branches) from a parser's current column through
// the StateTable's memoised transitions. A miss brings the parser to the path (popping to the longest
// still-valid prefix and pushing the rest), takes the byte with the Earley parser and records the
// transition, so a walk costs a table lookup per trie node once the states around it are known.
// The parser is left exactly as it was given when the walker is destroyed.
// Not thread-safe (the parser is not); the StateTable is shared.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammar/earley.h"
#include "grammar/state_shapes.h"
#include "grammar/state_table.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

class StateWalker {
 public:
  struct Step {
    StateTable::State state;  // kDead when the byte is rejected
    uint8_t flags;            // StateTable flags of the column reached (0 when dead)
  };

  StateWalker(EarleyParser& parser, StateTable& table);
  ~StateWalker();
  StateWalker(const StateWalker&) = delete;
  StateWalker& operator=(const StateWalker&) = delete;

  // Takes byte b at depth d (d bytes of the path already walked and alive; depth 0 is the parser's
  // column). Replaces the path from depth d on.
  Step step(uint32_t d, uint8_t b) {
    if (d < path_.size()) {  // the fast path: a memoised transition (state_ has path_.size() + 1 entries)
      const StateTable::State s = state_[d];
      if (s != StateTable::kNone) {
        const StateTable::State n = table_.next(s, b);
        if (n != StateTable::kUnknown) {
          path_[d] = b;
          if (synced_ > d) synced_ = d;
          state_[d + 1] = n;
          return {n, n == StateTable::kDead ? uint8_t{0} : table_.flags(n)};
        }
      }
    }
    return step_slow(d, b);
  }
  // Stands the walk at depth prefix.size() in state s, which `prefix` leads to from depth 0 (the
  // caller knows it: a counting state's text chain). Steps from there on read the table as usual and
  // a miss brings the parser along `prefix`; the states at lower depths are forgotten (kNone: a step
  // there goes through the parser, still exact).
  void seek(std::string_view prefix, StateTable::State s);
  // Whether the state at depth d (d bytes walked and alive) is known to reject byte b: one row read,
  // no parser step (false when the row does not say).
  bool dead(uint32_t d, uint8_t b) const {
    const StateTable::State s = state_[d];
    return s != StateTable::kNone && table_.next(s, b) == StateTable::kDead;
  }
  // After trie node i (at depth d + 1) was rejected from the state at depth d: the first of the
  // siblings after it that the state does not reject (by the table; one it has no transition for
  // counts as not rejected), or where the siblings end — found through the trie's sibling words
  // without touching the skipped nodes. Rejected siblings are what most of a walk is (a key literal's
  // state takes one or two of the trie's 256 first bytes, or of the 73 that follow '"' at 128k).
  uint32_t skip_rejected(const VocabTrie& trie, uint32_t i, uint32_t d) const {
    const std::vector<uint32_t>& words = trie.sibling_words();
    const StateTable::State s = state_[d];
    if (words.empty() || s == StateTable::kNone) return trie.nodes()[i].subtree_end;
    for (uint32_t k = trie.sibling_slot(i) + 1;; ++k) {
      const uint32_t w = words[k];
      if ((w & 0x100) != 0 || table_.next(s, static_cast<uint8_t>(w)) != StateTable::kDead) return w >> 9;
    }
  }
  // How many plain bytes (VocabTrie::plain) in any order the state at depth d surely takes: every
  // plain byte leads to one and the same live state, and so on from there (254: a loop, unbounded).
  // Found by stepping those bytes once per state (replacing the path from depth d on); a lower bound
  // where the chain is longer than the search goes.
  uint32_t plain_run(uint32_t d, uint32_t budget = 64);
  // How many text characters (VocabTrie::text_height: plain bytes and UTF-8 characters) in any order
  // the state at depth d surely takes: every such character, each byte of it stepped, leads to one
  // and the same live state, and so on from there (254: a loop, unbounded). Costs a step per UTF-8
  // byte class of every state of the chain once (their partial-character states are interned), so
  // the search is shallower than the plain run's; a lower bound where the chain is longer.
  uint32_t text_run(uint32_t d, uint32_t budget = 16);
  // Looks text runs up by state shape (state_shapes.h) before searching, and keeps what a search
  // finds there: for the count walk, whose chains repeat across contexts. Off by default: a look-up
  // costs about a microsecond (the key read, hashed), which the median mask's walks would pay for
  // every new state for nothing.
  void share_text_runs() { share_text_runs_ = true; }
  // Whether every byte of the byte classes `classes` (VocabTrie::byte_class) leads from the state at
  // depth d back to that state: a pattern's loop (`[a-z0-9]+`, `.+` short of the byte that moves it
  // on). Each class is settled by stepping its bytes once per state and walker (replacing the path
  // from depth d on).
  bool loops_all(uint32_t d, uint64_t classes);
  // Whether every text string (VocabTrie::text_height: plain bytes and UTF-8 characters, the last
  // possibly cut short) from the state at depth d stays alive, whichever states it passes: the states
  // text reaches from there are searched (up to kTextLiveStates), each stepped on every plain byte,
  // lead byte and continuation, none dead. A search pattern's DFA (`.*response.*`: 'r' moves on and
  // comes back) takes any text; so does a determinised URL loop. Once per state (StateTable).
  bool text_live(uint32_t d);
  static constexpr size_t kTextLiveStates = 128, kTextLiveMisses = 64;
  // accepts_subtree asks text_live of a state only once this walker has gone into text subtrees of
  // kTextLiveAfter trie nodes in all from it (text_live_due): almost every search answers no (a
  // counter's or key prefix's state, a pattern of some characters), and one that runs to its bound
  // costs 70–100 µs of parser steps; a state whose walks stay small never pays it, and one worth the
  // search (a search DFA's: 100,000+ nodes a walk) pays about a thousand node visits first. A search
  // cut off by its bound is asked once more after as many nodes again (StateTable::text_live 3).
  static constexpr uint32_t kTextLiveAfter = 1024;
  // Whether trie node i's whole subtree is accepted from the state at depth i.depth - 1 without
  // visiting it: its plain height or its text height is within the state's run, it is text and the
  // state text-live, or its bytes' classes are all loop classes of the state (every token of it
  // stays in the state, alive).
  bool accepts_subtree(const VocabTrie& trie, uint32_t i);
  // The same for node i and the text siblings after it (VocabTrie::text_span_end), up to `limit`: the
  // node index where the accepted run ends (i when nothing is accepted). Its tokens are
  // [i's first token, tok_begin_at(end)).
  uint32_t accepted_until(const VocabTrie& trie, uint32_t i, uint32_t limit);

 private:
  Step step_slow(uint32_t d, uint8_t b);
  // The text run (plus one) known for a state of s's shape (state_shapes.h), kept for s; 0 when none.
  uint8_t shared_text_run(StateTable::State s);
  // Every continuation of a UTF-8 character from the state at depth d (rem bytes left, the next in
  // [lo, hi]) leads to `target`.
  bool continuations_reach(uint32_t d, uint32_t rem, uint8_t lo, uint8_t hi, StateTable::State target);
  enum class Search { kLive, kNo, kCut };  // kCut: ran past kTextLiveStates or kTextLiveMisses
  Search search_text_live(uint32_t d);
  // Whether accepts_subtree may search text_live for state s now; counts `nodes` as walked into.
  bool text_live_due(StateTable::State s, uint32_t nodes);

  EarleyParser& parser_;
  StateTable& table_;
  std::vector<StateTable::State> state_;  // [depth]: state after path[0, depth)
  std::vector<uint8_t> path_;
  bool share_text_runs_ = false;
  uint32_t pushed_ = 0;  // path bytes the parser holds beyond base_
  uint32_t synced_ = 0;  // of which the first synced_ are still the walked path
  uint64_t misses_ = 0;  // parser steps taken (step_slow misses)
  // continuations_reach: (state, target << 32 | rem << 16 | lo << 8 | hi) verified. A hash set: a
  // long counter's first mask checks ~16 chain states' UTF-8 continuations in one walker, and a
  // list scanned at every call took a third of text_run's time there (perf, session 9).
  struct CheckedHash {
    size_t operator()(const std::pair<StateTable::State, uint64_t>& p) const {
      return std::hash<uint64_t>()(p.second * 0x9E3779B97F4A7C15ull ^ p.first);
    }
  };
  std::unordered_set<std::pair<StateTable::State, uint64_t>, CheckedHash> checked_;
  // loops_all: per state met, the classes known to loop and known not to, in a small direct-mapped
  // table (a walk alternates between a few states; a hash map look-up per node cost more).
  struct Loops {
    StateTable::State state = StateTable::kNone;
    uint64_t loop = 0, fail = 0;
  };
  std::array<Loops, 64> loops_{};
  // text_live_due: per state met, the nodes of text subtrees walked into from it (direct-mapped).
  struct Walked {
    StateTable::State state = StateTable::kNone;
    uint32_t nodes = 0;
  };
  std::array<Walked, 64> walked_{};
};

}  // namespace keel::grammar
