// FifoMap: a map bounded by the bytes its entries are counted at, whose oldest entries go first when a
// new one would pass the bound. TokenMaskCache keeps its finished masks, first-byte masks and subtree
// ranges in three of them (mask_cache.h). Not thread-safe: the owner locks.
#pragma once

#include <cstddef>
#include <deque>
#include <unordered_map>
#include <utility>

namespace keel::grammar {

// Bytes an insert counted in and dropped.
struct FifoChange {
  size_t added = 0, dropped = 0;
};

template <typename K, typename V>
class FifoMap {
 public:
  // The value under k, or null.
  const V* find(const K& k) const {
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : &it->second.first;
  }
  bool contains(const K& k) const { return map_.contains(k); }
  // Inserts k -> v counted at `bytes` unless k is held or bytes alone exceed max_bytes, dropping the
  // oldest entries until the total fits max_bytes.
  FifoChange insert(const K& k, V v, size_t bytes, size_t max_bytes) {
    if (bytes > max_bytes || map_.contains(k)) return {};
    FifoChange change{.added = bytes};
    while (bytes_ + bytes > max_bytes) {
      auto it = map_.find(order_.front());
      bytes_ -= it->second.second;
      change.dropped += it->second.second;
      map_.erase(it);
      order_.pop_front();
    }
    map_.emplace(k, std::pair<V, size_t>(std::move(v), bytes));
    order_.push_back(k);
    bytes_ += bytes;
    return change;
  }

 private:
  std::unordered_map<K, std::pair<V, size_t>> map_;  // value, bytes counted
  std::deque<K> order_;                              // oldest first
  size_t bytes_ = 0;
};

}  // namespace keel::grammar
