// Counter positions classified ahead of use. A string under a maxLength/minLength counter stands, at
// its k-th character, on kernel positions of the counter's rules (`block ::= x x ... x`, 16 items,
// after k of them; `exactly[c] ::= exactly[c-1] x`; `up_to`, `repeat`) that no earlier column met,
// so the first mask there classified them: a full walk of the vocabulary trie whose runs are cut by the count (~2.7 ms at
// 128k tokens, CPU), paid by a decode step. classify_counters_ahead() makes those classifications
// when the grammar is registered (GrammarStore::get_or_compile), lowest counts first, within a time
// budget: positions the vocabulary's shared classifications already hold cost a key lookup, so a
// counter shape costs its walks once per vocabulary. It calls TokenMaskCache::get, the same code the
// first mask would run, so masks are unchanged; only when the cost is paid moves.
#pragma once

#include <chrono>
#include <cstdint>

#include "grammar/mask_cache.h"

namespace keel::grammar {

struct CounterPrefillStats {
  uint32_t candidates = 0;  // counter positions found in the grammar
  uint32_t classified = 0;  // of them, classified (or found shared) before the budget ran out
};

// The kernel positions of the grammar's counter rules — `block`, `exactly`, `up_to` (a long
// bound's choice of blocks and tail) and `repeat` (the copies a minimum requires) — in the order a
// string meets them (by count of items, lowest first; a block counts 16), up to 256 items; each once.
std::vector<uint32_t> counter_positions(const CompiledGrammar& g);

// Classifies counter_positions() in order until `budget` of wall time has been spent (checked after
// each; one classification may overrun it). The positions of `block` rules over a prefix-free item
// are first made from one run-length walk per item (counter_runs.h), and counted strings' first
// positions (`'"' . repeat '"'`, not in the list) from one walk each (repeat_runs.h); their time
// counts against the budget, which does not cut them, and the loop finds the blocks' in the store.
CounterPrefillStats classify_counters_ahead(TokenMaskCache& masks, std::chrono::microseconds budget);

}  // namespace keel::grammar
