// A counter block's positions classified from one walk (docs/grammar.md, "5. Counter positions
// classified ahead"). `block ::= x x ... x` (16 copies of one symbol x) stands, after k items, on a
// position whose classification is the seeded walk of x^(16-k); walking each cost ~1.5-3 ms at 128k
// tokens, 15 per item class. When x's language is prefix-free (no item continues another: a JSON
// string character, a UTF-8 sequence, an escape), a token's bytes split into whole items one way
// only, so one walk of the trie with x's automaton gives each node its item count, and every count's
// classification is a threshold on it: a node is taken while it has started at most L items, and
// the children of a node that has just completed the L-th item are uncertain (the rule ended there).
// The classifications are put into the cache's shared store under each position's key
// (shared_classes.h), where TokenMaskCache::get finds them. A block of blocks (a bound above 512)
// counts 16 of its inner block's items per copy. Items that are not prefix-free, or whose automaton
// is larger than a few states, are left to the per-position walks.
#pragma once

#include <cstdint>

#include "grammar/mask_cache.h"

namespace keel::grammar {

// Classifies the positions of the grammar's `block` rules from one walk per item symbol; returns how
// many positions' classifications it stored (those whose key the store held already are skipped).
uint32_t classify_blocks_by_runs(TokenMaskCache& masks);

}  // namespace keel::grammar
