#include "sched/prefix_wait.h"

#include <span>

#include "cache/prefix_hash.h"

namespace keel::sched {

void update_block_hashes(Sequence& s) {
  const auto n_blocks = static_cast<int64_t>(s.tokens.size()) / kPrefixBlock;
  uint64_t h = s.block_hashes.empty() ? cache::kRootPrefixHash : s.block_hashes.back();
  for (auto b = static_cast<int64_t>(s.block_hashes.size()); b < n_blocks; ++b) {
    std::span<const int32_t> block(s.tokens.data() + b * kPrefixBlock, static_cast<size_t>(kPrefixBlock));
    h = cache::extend_prefix_hash(h, block);
    s.block_hashes.push_back(h);
  }
}

void InFlightPrefixes::add(Sequence& s) {
  if (s.n_pending() <= 1) return;
  update_block_hashes(s);
  // Block b ends at (b + 1) * kPrefixBlock; the first one past n_in_tree:
  for (auto b = static_cast<size_t>(s.n_in_tree / kPrefixBlock); b < s.block_hashes.size(); ++b) {
    hashes_.insert(s.block_hashes[b]);
  }
}

bool InFlightPrefixes::shares(Sequence& s, int64_t matched, int64_t min_tokens) const {
  if (hashes_.empty()) return false;
  const int64_t want = matched + min_tokens;
  const int64_t end = (want + kPrefixBlock - 1) / kPrefixBlock * kPrefixBlock;  // first block end ≥ want
  if (end <= 0 || end >= static_cast<int64_t>(s.tokens.size())) return false;  // match stops at size − 1
  update_block_hashes(s);
  return hashes_.contains(s.block_hashes[static_cast<size_t>(end / kPrefixBlock - 1)]);
}

}  // namespace keel::sched
