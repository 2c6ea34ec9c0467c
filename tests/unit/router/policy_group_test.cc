// cache_aware's group affinity (--group-affinity N): a prompt group with fewer than N requests in
// flight goes to its best match whatever the request-count bound (the followers a cold prefill
// collects queue on their holder); from N in flight on (a burst of one prefix) the bound decides.
// Every policy here runs with --spill-factor 0: the rule is consulted only then (the default's
// equal-match set and cost spill replace it; docs/router.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_prompt.h"
#include "router/policy.h"

namespace keel::router {
namespace {

using bench_prompt::kKeys;
using bench_prompt::kShared;

TEST(CacheAwareGroup, OffByDefaultAndValidated) {
  EXPECT_EQ(CacheAwareConfig{}.group_affinity, 0);
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.group_affinity = -1}).ok());
  EXPECT_TRUE(make_policy("cache_aware", CacheAwareConfig{.group_affinity = 3}).ok());
}

TEST(CacheAwareGroup, AFewRequestsOfAGroupQueueOnTheirHolder) {
  // The holder prefills the group's prefix and holds two of its requests; the others are idle.
  std::vector<CandidateView> c = {{.load = 2, .match = kShared}, {}, {}, {}};
  auto p = make_cache_aware({.group_affinity = 3, .spill_factor = 0});
  Pick pick = p->pick({.n_keys = kKeys, .group_in_flight = 2}, c);
  EXPECT_EQ(pick.index, 0);
  EXPECT_EQ(pick.decision, Decision::kGroupAffinity);
  // Other groups' requests on the holder do not count: a holder of two groups may hold more.
  c[0].load = 5;
  EXPECT_EQ(p->pick({.n_keys = kKeys, .group_in_flight = 1}, c).index, 0);
  // Off: the count bound spills it.
  Pick off = make_cache_aware({.spill_factor = 0})->pick({.n_keys = kKeys, .group_in_flight = 2}, c);
  EXPECT_NE(off.index, 0);
  EXPECT_EQ(off.decision, Decision::kImbalance);
}

TEST(CacheAwareGroup, FromNInFlightTheCountBoundDecides) {
  std::vector<CandidateView> c = {{.load = 3, .match = kShared}, {}, {}, {}};
  Pick pick = make_cache_aware({.group_affinity = 3, .spill_factor = 0})->pick({.n_keys = kKeys, .group_in_flight = 3}, c);
  EXPECT_NE(pick.index, 0);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
}

TEST(CacheAwareGroup, WithoutAUsefulMatchTheMostFreeCacheWithinTheBoundWins) {
  // Nobody holds the prompt: affinity has nothing to keep, the busy replica with the most free cache
  // is still over the bound.
  std::vector<CandidateView> c = {{.load = 3, .free_cache = 900}, {.load = 0, .free_cache = 100}};
  Pick pick = make_cache_aware({.group_affinity = 3, .spill_factor = 0})->pick({.n_keys = kKeys, .group_in_flight = 0}, c);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kFreeCache);
}

// A new prefix arrives as 12 requests on 4 idle replicas, none finishing meanwhile.
std::vector<int64_t> burst_from_idle(int64_t group_affinity) {
  auto p = make_cache_aware({.group_affinity = group_affinity, .spill_factor = 0});
  std::vector<int64_t> load(4, 0);
  std::vector<bool> holds(4, false);
  for (int64_t k = 0; k < 12; ++k) {
    std::vector<CandidateView> c;
    for (size_t i = 0; i < 4; ++i) c.push_back({.load = load[i], .match = holds[i] ? kShared : 0, .free_cache = 1000});
    const auto i = static_cast<size_t>(p->pick({.n_keys = kKeys, .group_in_flight = k}, c).index);
    ++load[i];
    holds[i] = true;
  }
  return load;
}

// N = 3 (replicas - 1): the holder takes the group's first 3, the count bound the rest, 3 each.
TEST(CacheAwareGroup, ABurstOfANewPrefixFromIdleEndsBalanced) {
  EXPECT_EQ(burst_from_idle(3), (std::vector<int64_t>{3, 3, 3, 3}));
}

// N = 4 is the price docs/router.md names: the holder keeps 4 and the burst ends unbalanced.
TEST(CacheAwareGroup, ALargerNLeavesTheBurstUnbalanced) {
  std::vector<int64_t> load = burst_from_idle(4);
  EXPECT_EQ(load[0], 4);
  EXPECT_EQ(*std::min_element(load.begin(), load.end()), 2);
}

}  // namespace
}  // namespace keel::router
