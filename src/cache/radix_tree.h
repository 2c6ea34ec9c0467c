// The prefix cache: a radix tree over token ids with page size 1. Each edge holds a run of tokens and
// the KV slot of each; a request matches its longest cached prefix, inserts what it computed (finished
// or in flight), locks the node it uses, and the scheduler evicts least-recently-used unlocked leaves
// when the KV pool runs dry. Every insert/evict is also published on a change feed (cache_event.h).
// Single-threaded by design: the scheduler thread owns the tree (and the KvSlotPool whose slots it
// holds); nothing here locks. The tree never frees slots itself: evict() and insert() hand them back.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "cache/cache_event.h"
#include "cache/kv_slot_pool.h"

namespace keel::cache {

// Handle to a tree node. Stays valid (and keeps naming the same prefix end) across splits; a node is
// only deleted by evict(), which never touches locked nodes. Using a deleted node is a KEEL_CHECK.
struct NodeId {
  int32_t index = -1;
  uint32_t generation = 0;
  friend bool operator==(const NodeId&, const NodeId&) = default;
};

struct PrefixMatch {
  int64_t prefix_len = 0;
  std::vector<SlotId> slots;  // [prefix_len] KV slots of the matched prefix, in position order
  NodeId node;                // the node ending exactly at prefix_len (the root when 0)
};

struct InsertResult {
  NodeId node;                          // the node ending exactly at tokens.size() (root when empty)
  int64_t n_cached_before = 0;          // leading tokens that were cached already
  std::vector<SlotId> duplicate_slots;  // the caller's slots for that span that differ from the cached
                                        // ones; the caller must free them to the pool
};

struct RadixStats {
  int64_t n_match_calls = 0;
  int64_t n_match_tokens = 0;     // tokens passed to match()
  int64_t n_hit_tokens = 0;       // of those, tokens found cached
  int64_t n_inserted_tokens = 0;  // tokens newly cached by insert()
  int64_t n_evicted_tokens = 0;
};

// The tree's content as kStored events (parents before children), as of change `seq`.
struct FeedSnapshot {
  uint64_t seq = 0;
  std::vector<CacheEvent> stored;
};

class RadixTree {
 public:
  // event_queue_capacity: events kept for the change-feed subscriber (0 = feed off).
  explicit RadixTree(int64_t event_queue_capacity = 0);

  RadixTree(const RadixTree&) = delete;
  RadixTree& operator=(const RadixTree&) = delete;

  NodeId root() const { return NodeId{0, nodes_[0].generation}; }

  // Longest cached prefix of tokens. Splits an edge when the match ends inside it, so the returned
  // node ends exactly at prefix_len. Marks the matched path as used now (LRU). A caller that needs
  // the logits of the last prompt token matches prompt[0, n-1).
  PrefixMatch match(std::span<const int32_t> tokens);

  // Caches tokens with their KV slots ([tokens.size()], KEEL_CHECKed). Where a prefix is cached
  // already, the cached slots win: `slots` is rewritten to them and the caller's differing slots are
  // returned in duplicate_slots. Used for finished sequences and for in-flight ones (then lock the
  // returned node and unlock the one held before). Marks the path as used now.
  InsertResult insert(std::span<const int32_t> tokens, std::span<SlotId> slots);

  // Ref counts along the path from node to the root; a node with a count > 0 is never evicted.
  // lock(root)/unlock(root) do nothing. Unlocking an unlocked node is a KEEL_CHECK.
  void lock(NodeId node);
  void unlock(NodeId node);

  // Frees least-recently-used unlocked leaves, repeatedly (a parent whose last child goes becomes a
  // leaf), until at least n_slots are freed or nothing is evictable. Whole leaves go, so up to one
  // edge more than n_slots may be freed. Appends the freed slots to out (the caller returns them to
  // the pool) and returns how many.
  int64_t evict(int64_t n_slots, std::vector<SlotId>& out);
  std::vector<SlotId> evict(int64_t n_slots);

  int64_t n_cached_tokens() const { return n_cached_; }
  int64_t n_evictable_tokens() const { return n_evictable_; }  // cached tokens in unlocked nodes
  int64_t n_locked_tokens() const { return n_cached_ - n_evictable_; }
  int64_t n_nodes() const;  // live nodes, root included
  const RadixStats& stats() const { return stats_; }

  bool is_live(NodeId node) const;
  int64_t prefix_len(NodeId node) const;  // tokens from the root to the node's end
  int32_t lock_ref(NodeId node) const;    // locks held on this node and its descendants

  // Change feed: moves queued events to out (oldest first); see cache_event.h for the protocol.
  int64_t drain_events(std::vector<CacheEvent>& out) { return feed_.drain(out); }
  const EventFeed& event_feed() const { return feed_; }
  FeedSnapshot snapshot() const;

  // Full O(size) consistency check (structure, counters, hashes, ref counts, LRU set, no slot held
  // twice); kInternal naming the first broken invariant. For tests and debugging.
  Status check_invariants() const;

 private:
  struct Node {
    std::vector<int32_t> tokens;                    // [n] the edge's tokens, following the parent's end
    std::vector<SlotId> slots;                      // [n] their KV slots
    std::unordered_map<int32_t, int32_t> children;  // first edge token -> node index
    int32_t parent = -1;
    uint32_t generation = 0;
    int32_t lock_ref = 0;
    int64_t depth = 0;         // prefix length at the node's end
    uint64_t hash = 0;         // prefix hash at the node's end (prefix_hash.h)
    uint64_t last_access = 0;  // clock_ value of the last match/insert through this node
    bool live = false;
    bool in_lru = false;  // member of lru_leaves_
  };

  int32_t checked_index(NodeId node) const;
  NodeId id_of(int32_t index) const { return NodeId{index, nodes_[index].generation}; }
  int32_t new_node();
  void release_node(int32_t index);
  int32_t split(int32_t child, int64_t k);
  void touch(int32_t index);
  bool is_evictable_leaf(int32_t index) const;
  void lru_erase(int32_t index);
  void lru_update(int32_t index);
  Status check_node(int32_t index, std::vector<uint8_t>& slot_seen, int64_t& n_tokens, int64_t& n_unlocked) const;

  std::vector<Node> nodes_;                            // [0] is the root
  std::vector<int32_t> free_nodes_;                    // indices of deleted nodes, reused first
  std::set<std::pair<uint64_t, int32_t>> lru_leaves_;  // (last_access, index) of evictable leaves
  uint64_t clock_ = 0;
  int64_t n_cached_ = 0;
  int64_t n_evictable_ = 0;
  RadixStats stats_;
  EventFeed feed_;
};

}  // namespace keel::cache
