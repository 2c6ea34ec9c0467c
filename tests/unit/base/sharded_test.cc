// ShardedCounter: adds from many threads all count; threads get their own shards.
#include "base/sharded.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

namespace keel::base {
namespace {

TEST(ShardedCounter, EveryAddFromEveryThreadCounts) {
  ShardedCounter c;
  constexpr int kThreads = 20, kAdds = 50'000;  // more threads than shards: some share one
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c, t] {
      for (int i = 0; i < kAdds; ++i) c.add(t % 2 == 0 ? 1 : 3);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.load(), int64_t{kAdds} * (kThreads / 2) * (1 + 3));
}

TEST(ShardedCounter, ThreadsStartingTogetherGetDifferentShards) {
  std::vector<size_t> shards(kCounterShards);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kCounterShards; ++t) threads.emplace_back([&shards, t] { shards[t] = thread_shard(); });
  for (auto& t : threads) t.join();
  // Shards are dealt in turn: kCounterShards new threads cover all of them once.
  EXPECT_EQ(std::set<size_t>(shards.begin(), shards.end()).size(), kCounterShards);
  EXPECT_EQ(thread_shard(), thread_shard());  // stable for a thread
}

}  // namespace
}  // namespace keel::base
