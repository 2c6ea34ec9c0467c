#include "cache/radix_tree.h"

#include <algorithm>

#include "base/check.h"
#include "cache/prefix_hash.h"

namespace keel::cache {
namespace {

int64_t common_len(std::span<const int32_t> a, std::span<const int32_t> b) {
  auto n = std::min(a.size(), b.size());
  size_t k = 0;
  while (k < n && a[k] == b[k]) ++k;
  return static_cast<int64_t>(k);
}

}  // namespace

RadixTree::RadixTree(int64_t event_queue_capacity) : feed_(event_queue_capacity) {
  nodes_.emplace_back();
  nodes_[0].live = true;
  nodes_[0].hash = kRootPrefixHash;
}

int32_t RadixTree::checked_index(NodeId node) const {
  KEEL_CHECK(node.index >= 0 && node.index < static_cast<int32_t>(nodes_.size()), "radix node {} out of range",
             node.index);
  const Node& n = nodes_[node.index];
  KEEL_CHECK(n.live && n.generation == node.generation, "radix node {} used after it was evicted", node.index);
  return node.index;
}

bool RadixTree::is_live(NodeId node) const {
  return node.index >= 0 && node.index < static_cast<int32_t>(nodes_.size()) && nodes_[node.index].live &&
         nodes_[node.index].generation == node.generation;
}

int64_t RadixTree::prefix_len(NodeId node) const { return nodes_[checked_index(node)].depth; }

int32_t RadixTree::lock_ref(NodeId node) const { return nodes_[checked_index(node)].lock_ref; }

int64_t RadixTree::n_nodes() const {
  return static_cast<int64_t>(nodes_.size()) - static_cast<int64_t>(free_nodes_.size());
}

int32_t RadixTree::new_node() {
  int32_t index;
  if (!free_nodes_.empty()) {
    index = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    index = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[index].live = true;
  return index;
}

void RadixTree::release_node(int32_t index) {
  Node& n = nodes_[index];
  uint32_t generation = n.generation + 1;  // stale handles to this index now fail checked_index
  n = Node{};
  n.generation = generation;
  free_nodes_.push_back(index);
}

bool RadixTree::is_evictable_leaf(int32_t index) const {
  const Node& n = nodes_[index];
  return index != 0 && n.live && n.children.empty() && n.lock_ref == 0;
}

void RadixTree::lru_erase(int32_t index) {
  Node& n = nodes_[index];
  if (!n.in_lru) return;
  lru_leaves_.erase({n.last_access, index});
  n.in_lru = false;
}

void RadixTree::lru_update(int32_t index) {
  lru_erase(index);
  if (!is_evictable_leaf(index)) return;
  nodes_[index].in_lru = true;
  lru_leaves_.insert({nodes_[index].last_access, index});
}

void RadixTree::touch(int32_t index) {
  lru_erase(index);
  nodes_[index].last_access = clock_;
  lru_update(index);
}

// Cuts child's edge after k tokens: a new node takes the first k and becomes child's parent, so child
// (and every handle to it) keeps naming the same prefix end.
int32_t RadixTree::split(int32_t child, int64_t k) {
  KEEL_CHECK(k > 0 && k < static_cast<int64_t>(nodes_[child].tokens.size()), "split at {}", k);
  int32_t mid = new_node();  // may grow nodes_: take references only after this
  Node& c = nodes_[child];
  Node& m = nodes_[mid];
  Node& p = nodes_[c.parent];
  m.tokens.assign(c.tokens.begin(), c.tokens.begin() + k);
  m.slots.assign(c.slots.begin(), c.slots.begin() + k);
  c.tokens.erase(c.tokens.begin(), c.tokens.begin() + k);
  c.slots.erase(c.slots.begin(), c.slots.begin() + k);
  m.parent = c.parent;
  m.depth = p.depth + k;
  m.hash = extend_prefix_hash(p.hash, m.tokens);
  m.lock_ref = c.lock_ref;  // every lock through child also runs through mid
  m.last_access = c.last_access;
  p.children[m.tokens[0]] = mid;
  m.children.emplace(c.tokens[0], child);
  c.parent = mid;
  return mid;
}

PrefixMatch RadixTree::match(std::span<const int32_t> tokens) {
  ++clock_;
  ++stats_.n_match_calls;
  stats_.n_match_tokens += static_cast<int64_t>(tokens.size());
  PrefixMatch result;
  int32_t cur = 0;
  size_t pos = 0;
  touch(cur);
  while (pos < tokens.size()) {
    auto it = nodes_[cur].children.find(tokens[pos]);
    if (it == nodes_[cur].children.end()) break;
    int32_t child = it->second;
    int64_t k = common_len(nodes_[child].tokens, tokens.subspan(pos));
    if (k < static_cast<int64_t>(nodes_[child].tokens.size())) child = split(child, k);
    const auto& slots = nodes_[child].slots;
    result.slots.insert(result.slots.end(), slots.begin(), slots.end());
    pos += static_cast<size_t>(k);
    cur = child;
    touch(cur);
  }
  result.prefix_len = static_cast<int64_t>(pos);
  result.node = id_of(cur);
  stats_.n_hit_tokens += result.prefix_len;
  return result;
}

InsertResult RadixTree::insert(std::span<const int32_t> tokens, std::span<SlotId> slots) {
  KEEL_CHECK(tokens.size() == slots.size(), "insert of {} tokens with {} slots", tokens.size(), slots.size());
  ++clock_;
  InsertResult result;
  int32_t cur = 0;
  size_t pos = 0;
  touch(cur);
  while (pos < tokens.size()) {
    auto it = nodes_[cur].children.find(tokens[pos]);
    if (it == nodes_[cur].children.end()) break;
    int32_t child = it->second;
    int64_t k = common_len(nodes_[child].tokens, tokens.subspan(pos));
    if (k < static_cast<int64_t>(nodes_[child].tokens.size())) child = split(child, k);
    const auto& cached = nodes_[child].slots;
    for (int64_t j = 0; j < k; ++j) {
      SlotId& mine = slots[pos + static_cast<size_t>(j)];
      if (mine != cached[static_cast<size_t>(j)]) {
        result.duplicate_slots.push_back(mine);
        mine = cached[static_cast<size_t>(j)];
      }
    }
    pos += static_cast<size_t>(k);
    cur = child;
    touch(cur);
  }
  result.n_cached_before = static_cast<int64_t>(pos);
  if (pos < tokens.size()) {
    auto rest = tokens.subspan(pos);
    auto rest_slots = slots.subspan(pos);
    int32_t leaf = new_node();
    Node& l = nodes_[leaf];
    const Node& p = nodes_[cur];
    l.tokens.assign(rest.begin(), rest.end());
    l.slots.assign(rest_slots.begin(), rest_slots.end());
    l.parent = cur;
    l.depth = p.depth + static_cast<int64_t>(rest.size());
    l.hash = extend_prefix_hash(p.hash, rest);
    l.last_access = clock_;
    nodes_[cur].children.emplace(rest[0], leaf);
    lru_update(cur);  // no longer a leaf
    lru_update(leaf);
    auto n_new = static_cast<int64_t>(rest.size());
    n_cached_ += n_new;
    n_evictable_ += n_new;
    stats_.n_inserted_tokens += n_new;
    feed_.push(CacheEventKind::kStored, nodes_[cur].hash, nodes_[leaf].hash, nodes_[leaf].depth, rest);
    cur = leaf;
  }
  result.node = id_of(cur);
  return result;
}

void RadixTree::lock(NodeId node) {
  for (int32_t i = checked_index(node); i != 0; i = nodes_[i].parent) {
    Node& n = nodes_[i];
    if (n.lock_ref == 0) {
      n_evictable_ -= static_cast<int64_t>(n.tokens.size());
      lru_erase(i);
    }
    ++n.lock_ref;
  }
}

void RadixTree::unlock(NodeId node) {
  for (int32_t i = checked_index(node); i != 0; i = nodes_[i].parent) {
    Node& n = nodes_[i];
    KEEL_CHECK(n.lock_ref > 0, "unlock of radix node {} that is not locked", i);
    if (--n.lock_ref == 0) {
      n_evictable_ += static_cast<int64_t>(n.tokens.size());
      lru_update(i);
    }
  }
}

}  // namespace keel::cache
