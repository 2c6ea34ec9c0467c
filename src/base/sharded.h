// Per-thread shards for counters that many threads bump on every request (metrics): each thread adds
// to its own cache line, so the line is not passed between cores on every add; a reader sums the
// shards. For values a decision must read exactly and at once (in-flight counts), use one atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace keel::base {

inline constexpr size_t kCounterShards = 16;

// This thread's shard, 0 .. kCounterShards - 1: threads get consecutive shards as they first ask.
size_t thread_shard();

class ShardedCounter {
 public:
  void add(int64_t n = 1) { cells_[thread_shard()].v.fetch_add(n, std::memory_order_relaxed); }
  int64_t load() const {
    int64_t sum = 0;
    for (const auto& c : cells_) sum += c.v.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Cell {
    std::atomic<int64_t> v{0};
  };
  std::array<Cell, kCounterShards> cells_{};
};

}  // namespace keel::base
