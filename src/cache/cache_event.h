// The radix tree's change feed: one event per span of tokens stored (insert) or removed (evict),
// named by chained prefix hashes (cache/prefix_hash.h), for the router's view of this replica.
// EventFeed is a bounded queue that drops its oldest events when full (counted); a subscriber that
// sees a gap in `seq` resyncs from RadixTree::snapshot(). Owned by the radix tree, so it is touched
// only on the scheduler thread, which drains it and hands events to the server's streaming endpoint.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

namespace keel::cache {

enum class CacheEventKind { kStored, kRemoved };

// Tokens prefix[prefix_len - tokens.size(), prefix_len) of one cached prefix.
struct CacheEvent {
  uint64_t seq = 0;  // 1, 2, 3, ... in change order (snapshot events carry the snapshot's seq)
  CacheEventKind kind = CacheEventKind::kStored;
  uint64_t parent_hash = 0;     // hash of prefix[0, prefix_len - tokens.size())
  uint64_t hash = 0;            // hash of prefix[0, prefix_len)
  int64_t prefix_len = 0;       // tokens in that prefix
  std::vector<int32_t> tokens;  // the span, >= 1 token
};

std::string_view cache_event_kind_name(CacheEventKind kind);

class EventFeed {
 public:
  // capacity 0 turns the feed off: push only advances seq.
  explicit EventFeed(int64_t capacity);

  void push(CacheEventKind kind, uint64_t parent_hash, uint64_t hash, int64_t prefix_len,
            std::span<const int32_t> tokens);
  // Moves every queued event to the end of out, oldest first; returns how many.
  int64_t drain(std::vector<CacheEvent>& out);

  bool enabled() const { return capacity_ > 0; }
  uint64_t last_seq() const { return last_seq_; }
  int64_t n_queued() const { return static_cast<int64_t>(queue_.size()); }
  int64_t n_dropped() const { return n_dropped_; }  // lifetime count of events dropped when full

 private:
  int64_t capacity_ = 0;
  uint64_t last_seq_ = 0;
  int64_t n_dropped_ = 0;
  std::deque<CacheEvent> queue_;
};

}  // namespace keel::cache
