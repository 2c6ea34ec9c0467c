// StateWalker: follows byte paths (vocabulary trie branches) from a parser's current column through
// the StateTable's memoised transitions. A miss brings the parser to the path (popping to the longest
// still-valid prefix and pushing the rest), takes the byte with the Earley parser and records the
// transition, so a walk costs a table lookup per trie node once the states around it are known.
// The parser is left exactly as it was given when the walker is destroyed.
// Not thread-safe (the parser is not); the StateTable is shared.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/earley.h"
#include "grammar/state_table.h"

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
  // How many plain bytes (VocabTrie::plain) in any order the state at depth d surely takes: every
  // plain byte leads to one and the same live state, and so on from there (254: a loop, unbounded).
  // Found by stepping those bytes once per state (replacing the path from depth d on); a lower bound
  // where the chain is longer than the search goes.
  uint32_t plain_run(uint32_t d, uint32_t budget = 64);

 private:
  Step step_slow(uint32_t d, uint8_t b);

  EarleyParser& parser_;
  StateTable& table_;
  std::vector<StateTable::State> state_;  // [depth]: state after path[0, depth)
  std::vector<uint8_t> path_;
  uint32_t pushed_ = 0;  // path bytes the parser holds beyond base_
  uint32_t synced_ = 0;  // of which the first synced_ are still the walked path
};

}  // namespace keel::grammar
