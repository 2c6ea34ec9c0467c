// RadixTree::evict: least-recently-used unlocked leaves first.
#include "base/check.h"
#include "cache/radix_tree.h"

namespace keel::cache {

int64_t RadixTree::evict(int64_t n_slots, std::vector<SlotId>& out) {
  int64_t n_freed = 0;
  while (n_freed < n_slots && !lru_leaves_.empty()) {
    int32_t index = lru_leaves_.begin()->second;
    lru_erase(index);
    Node& n = nodes_[index];
    KEEL_CHECK(n.lock_ref == 0 && n.children.empty(), "radix node {} in the LRU set is not an evictable leaf", index);
    auto size = static_cast<int64_t>(n.tokens.size());
    out.insert(out.end(), n.slots.begin(), n.slots.end());
    n_freed += size;
    n_cached_ -= size;
    n_evictable_ -= size;
    stats_.n_evicted_tokens += size;
    int32_t parent = n.parent;
    feed_.push(CacheEventKind::kRemoved, nodes_[parent].hash, n.hash, n.depth, n.tokens);
    nodes_[parent].children.erase(n.tokens[0]);
    release_node(index);
    // A parent's last_access is at least its children's, so the LRU order stays oldest-first.
    lru_update(parent);
  }
  return n_freed;
}

std::vector<SlotId> RadixTree::evict(int64_t n_slots) {
  std::vector<SlotId> out;
  evict(n_slots, out);
  return out;
}

}  // namespace keel::cache
