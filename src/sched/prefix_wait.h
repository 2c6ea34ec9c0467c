// In-batch prefix sharing: a waiting sequence whose tokens share a long prefix, beyond what the radix
// tree holds, with a sequence that is computing that prefix right now (in prefill, or admitted earlier
// in the same admit pass) waits until the prefix reaches the tree, then matches it instead of
// computing it again. Cheap by construction: each sequence keeps the chained prefix hash
// (cache/prefix_hash.h) at every kPrefixBlock-th token, computed once; admit() registers the block
// hashes that sequences in flight have not yet put into the tree, and a waiting sequence makes one
// hash lookup. Scheduler thread.
#pragma once

#include <cstdint>
#include <unordered_set>

#include "sched/sequence.h"

namespace keel::sched {

inline constexpr int64_t kPrefixBlock = 16;

// Extends s.block_hashes so that block_hashes[i] = prefix hash of tokens[0, (i + 1) * kPrefixBlock)
// for every whole block of s.tokens. Amortised O(new tokens).
void update_block_hashes(Sequence& s);

class InFlightPrefixes {
 public:
  // Registers the prefixes s will put into the tree as its pending tokens are computed: block ends in
  // (s.n_in_tree, tokens.size()]. No-op for a sequence with at most one pending token (a decode).
  void add(Sequence& s);
  // True when s's first p tokens equal some registered sequence's, for the first block end
  // p ≥ matched + min_tokens that s could still match (p < tokens.size()). Tokens the tree already
  // holds (matched) never count: a registered prefix is uncached by construction. A 64-bit hash
  // collision can only make a sequence wait (bounded), never change what it computes.
  bool shares(Sequence& s, int64_t matched, int64_t min_tokens) const;
  bool empty() const { return hashes_.empty(); }

 private:
  std::unordered_set<uint64_t> hashes_;
};

}  // namespace keel::sched
