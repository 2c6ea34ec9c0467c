// A counted string's first position classified from one walk (docs/grammar.md, "Counted strings'
// first positions"). A string under minLength/maxLength is `'"' repeat '"'`, where `repeat` allows
// x^n for the counts n of a set S (x a JSON string character; S from the copies, `star`, `up_to`,
// `exactly` and `block` rules below it). Its first position, `'"' . repeat '"'`, was a seeded walk
// of its own, one new parser state per count (2-5 ms at 128k tokens, CPU, on the first mask of
// every string with a new bound). When x is prefix-free, a token's bytes split one way into whole
// items, then a cut-short one or the closing byte, so its class follows from x's automaton and a
// count: taken while it has started at most max S items, or when the closing byte follows c whole
// items with c in S (the rule ends there: that node's children are uncertain). One walk of the
// trie, which accepts a text subtree at once where its height fits under max S. Called when a
// grammar is registered (counter_prefill.h); the classification goes into the cache's shared store
// under the position's key, where TokenMaskCache::get finds it, or into the cache itself when the
// sub-grammar is too large for a key (a long minLength: a copy per character).
#pragma once

#include <cstdint>

#include "grammar/mask_cache.h"

namespace keel::grammar {

// Classifies every position `. repeat T` (T one byte set, then the rule ends, in a rule that is not
// left-recursive) whose key the store lacks (or, without a key, that the cache lacks: put there);
// returns how many classifications it stored. Positions
// whose item is not prefix-free, or whose counts are not a set of item counts, are left alone.
uint32_t classify_repeat_starts_by_runs(TokenMaskCache& masks);

}  // namespace keel::grammar
