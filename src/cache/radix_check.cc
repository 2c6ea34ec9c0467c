// RadixTree's whole-tree views: the change-feed snapshot and the consistency check.
#include <algorithm>

#include "cache/prefix_hash.h"
#include "cache/radix_tree.h"

namespace keel::cache {

FeedSnapshot RadixTree::snapshot() const {
  FeedSnapshot snap{.seq = feed_.last_seq(), .stored = {}};
  std::vector<int32_t> stack{0};
  std::vector<std::pair<int32_t, int32_t>> kids;  // (first token, index), sorted for a stable order
  while (!stack.empty()) {
    int32_t index = stack.back();
    stack.pop_back();
    const Node& n = nodes_[index];
    if (index != 0) {
      snap.stored.push_back(CacheEvent{.seq = snap.seq,
                                       .kind = CacheEventKind::kStored,
                                       .parent_hash = nodes_[n.parent].hash,
                                       .hash = n.hash,
                                       .prefix_len = n.depth,
                                       .tokens = n.tokens});
    }
    kids.assign(n.children.begin(), n.children.end());
    std::sort(kids.begin(), kids.end(), std::greater<>());  // popped smallest first
    for (const auto& kid : kids) stack.push_back(kid.second);
  }
  return snap;
}

Status RadixTree::check_node(int32_t index, std::vector<uint8_t>& slot_seen, int64_t& n_tokens,
                             int64_t& n_unlocked) const {
  const Node& n = nodes_[index];
  auto fail = [index](std::string_view what) {
    return make_error(ErrorCode::kInternal, "radix node {}: {}", index, what);
  };
  if (!n.live) return fail("reachable but not live");
  if (index != 0) {
    const Node& p = nodes_[n.parent];
    if (n.tokens.empty()) return fail("empty edge");
    if (n.slots.size() != n.tokens.size()) return fail("slot count differs from token count");
    if (n.depth != p.depth + static_cast<int64_t>(n.tokens.size())) return fail("depth");
    if (n.hash != extend_prefix_hash(p.hash, n.tokens)) return fail("prefix hash");
    if (n.last_access > p.last_access) return fail("used more recently than its parent");
    if (n.lock_ref < 0) return fail("negative lock_ref");
    if (n.in_lru != is_evictable_leaf(index)) return fail("LRU membership");
    if (n.in_lru && !lru_leaves_.contains({n.last_access, index})) return fail("missing from the LRU set");
    n_tokens += static_cast<int64_t>(n.tokens.size());
    if (n.lock_ref == 0) n_unlocked += static_cast<int64_t>(n.tokens.size());
    for (SlotId s : n.slots) {
      if (s.value < 0) return fail("negative slot");
      if (static_cast<size_t>(s.value) >= slot_seen.size()) slot_seen.resize(static_cast<size_t>(s.value) + 1, 0);
      if (slot_seen[static_cast<size_t>(s.value)]++ != 0) return fail(fmt::format("slot {} held twice", s.value));
    }
  }
  int64_t child_locks = 0;
  for (const auto& [first, child] : n.children) {
    if (child <= 0 || child >= static_cast<int32_t>(nodes_.size())) return fail("child index out of range");
    const Node& c = nodes_[child];
    if (c.parent != index) return fail("child's parent link");
    if (c.tokens.empty() || c.tokens[0] != first) return fail("child keyed by the wrong token");
    child_locks += c.lock_ref;
  }
  if (index != 0 && n.lock_ref < child_locks) return fail("lock_ref below its children's");
  return Status::ok_status();
}

Status RadixTree::check_invariants() const {
  std::vector<uint8_t> slot_seen;
  int64_t n_tokens = 0;
  int64_t n_unlocked = 0;
  int64_t n_reached = 0;
  std::vector<int32_t> stack{0};
  while (!stack.empty()) {
    int32_t index = stack.back();
    stack.pop_back();
    if (++n_reached > n_nodes()) return make_error(ErrorCode::kInternal, "radix tree has a cycle");
    KEEL_RETURN_IF_ERROR(check_node(index, slot_seen, n_tokens, n_unlocked));
    for (const auto& kid : nodes_[index].children) stack.push_back(kid.second);
  }
  if (n_reached != n_nodes()) {
    return make_error(ErrorCode::kInternal, "{} live radix nodes, {} reachable", n_nodes(), n_reached);
  }
  if (n_tokens != n_cached_) {
    return make_error(ErrorCode::kInternal, "n_cached_tokens {} but the edges hold {}", n_cached_, n_tokens);
  }
  if (n_unlocked != n_evictable_) {
    return make_error(ErrorCode::kInternal, "n_evictable_tokens {} but unlocked edges hold {}", n_evictable_,
                      n_unlocked);
  }
  auto n_in_lru = std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.in_lru; });
  if (n_in_lru != static_cast<int64_t>(lru_leaves_.size())) {
    return make_error(ErrorCode::kInternal, "LRU set holds {} entries, {} nodes flagged", lru_leaves_.size(), n_in_lru);
  }
  return Status::ok_status();
}

}  // namespace keel::cache
