// ApproxLru: PrefixIndex's approximate set of one replica (the prefix keys the router sent there),
// bounded by least-recently-routed eviction in O(1) per key. Keys live in a doubly linked list in
// routing order (node pool with a free list) and a FlatKeyMap from key to node. touch() moves a
// prompt's keys to the most recent end, longest first, so that a prefix always sits on the recent
// side of every longer key it starts: evicting from the least recent end then removes a prompt's tail
// before its head, and the set stays prefix-closed (PrefixIndex::match binary-searches it) whatever
// number of keys one eviction removes. The bulk eviction this replaced sorted every entry's tick and
// stalled the router for tens of ms at its 2^20-entry default (Session 14). The node pool is reserved
// up front (address space only: pages are touched as nodes are used) and a new key evicts the oldest
// when the set is full, so neither the pool nor the key map ever passes the bound: copying 2^20 nodes
// on a growth took 8 ms under the index's exclusive lock, and one key over 2^20 doubled the map to
// 2^22 slots. At the default bound a full set takes about 40 MB (24 MB of map, 16 MB of nodes).
// Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "router/flat_key_map.h"

namespace keel::router {

class ApproxLru {
 public:
  explicit ApproxLru(int64_t max_entries) : max_(max_entries < 1 ? 1 : static_cast<size_t>(max_entries)) {}
  // A bound above this reserves this many nodes and grows past it as a vector does.
  static constexpr size_t kMaxReserve = size_t{1} << 24;

  size_t size() const { return index_.size(); }
  size_t pool_nodes() const { return nodes_.size(); }      // nodes ever made: in use or free (for tests)
  size_t map_capacity() const { return index_.capacity(); }  // slots of the key map (for tests)
  bool contains(uint64_t key) const { return index_.contains(key); }

  // The router sent a prompt with these prefix keys (shortest first): they become the most recent,
  // and the least recent keys beyond the bound go. A key evicted while the prompt comes in is the least
  // recent at that moment, so the keys that go are those a pass after the whole prompt would take: the
  // oldest others first, then (a prompt longer than the bound) the prompt's own longest keys.
  void touch(std::span<const uint64_t> keys) {
    if (nodes_.capacity() == 0) nodes_.reserve(std::min(max_, kMaxReserve));
    for (size_t i = keys.size(); i-- > 0;) {
      const uint64_t key = keys[i];
      uint32_t n = 0;
      if (index_.find(key, n)) {
        unlink(n);
      } else {
        if (index_.size() >= max_) evict_oldest();
        n = new_node(key);
        index_.set(key, n);
      }
      push_recent(n);
    }
  }

  // Keys from the least recent to the most recent (for tests).
  std::vector<uint64_t> keys_oldest_first() const {
    std::vector<uint64_t> out;
    for (uint32_t n = oldest_; n != kNone; n = nodes_[n].newer) out.push_back(nodes_[n].key);
    return out;
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    uint64_t key;
    uint32_t older, newer;
  };

  uint32_t new_node(uint64_t key) {
    if (!free_.empty()) {
      const uint32_t n = free_.back();
      free_.pop_back();
      nodes_[n].key = key;
      return n;
    }
    nodes_.push_back(Node{key, kNone, kNone});
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void evict_oldest() {
    const uint32_t n = oldest_;
    unlink(n);
    index_.erase(nodes_[n].key);
    free_.push_back(n);
  }
  void unlink(uint32_t n) {
    Node& x = nodes_[n];
    if (x.older != kNone) {
      nodes_[x.older].newer = x.newer;
    } else {
      oldest_ = x.newer;
    }
    if (x.newer != kNone) {
      nodes_[x.newer].older = x.older;
    } else {
      newest_ = x.older;
    }
    x.older = x.newer = kNone;
  }
  void push_recent(uint32_t n) {
    nodes_[n].older = newest_;
    nodes_[n].newer = kNone;
    if (newest_ != kNone) {
      nodes_[newest_].newer = n;
    } else {
      oldest_ = n;
    }
    newest_ = n;
  }

  size_t max_;
  FlatKeyMap<uint32_t> index_;  // key -> node
  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  uint32_t oldest_ = kNone, newest_ = kNone;
};

}  // namespace keel::router
