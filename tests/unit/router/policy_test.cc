// Every routing policy on plain candidate views, including the hot-prefix case where cache affinity
// alone would pile all traffic on one replica.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "router/policy.h"

namespace keel::router {
namespace {

std::vector<CandidateView> idle(int n) { return std::vector<CandidateView>(static_cast<size_t>(n)); }

TEST(PolicyFactory, KnowsEveryNameAndRejectsOthers) {
  for (const char* name : {"round_robin", "random", "power_of_two", "cache_aware"}) {
    auto p = make_policy(name, {});
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ((*p)->name(), name);
  }
  EXPECT_FALSE(make_policy("least_busy", {}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.balance_rel_threshold = 0.5}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.min_match_ratio = 1.5}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.balance_idle_cap = 0}).ok());
}

TEST(RoundRobin, CyclesThroughCandidates) {
  auto p = make_round_robin();
  auto c = idle(3);
  std::vector<int32_t> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(p->pick({}, c).index);
  EXPECT_EQ(picks, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(p->pick({}, {}).index, -1);
}

TEST(Random, FollowsTheRequestsRandomBits) {
  auto p = make_random();
  auto c = idle(4);
  std::map<int32_t, int> seen;
  for (uint64_t r = 0; r < 400; ++r) seen[p->pick({.random = r * 0x9e3779b97f4a7c15ULL}, c).index]++;
  EXPECT_EQ(seen.size(), 4u);
  for (auto [idx, n] : seen) EXPECT_GT(n, 40) << idx;
}

TEST(PowerOfTwo, NeverPicksTheMostLoadedOfTwoAndCoversPairs) {
  auto p = make_power_of_two();
  std::vector<CandidateView> c = {{.load = 5}, {.load = 0}};
  for (uint64_t r = 0; r < 64; ++r) EXPECT_EQ(p->pick({.random = r * 0x2545f4914f6cdd1dULL}, c).index, 1);
  std::vector<CandidateView> three = {{.load = 9}, {.load = 1}, {.load = 5}};
  std::map<int32_t, int> seen;
  for (uint64_t r = 0; r < 300; ++r) seen[p->pick({.random = r * 0x9e3779b97f4a7c15ULL}, three).index]++;
  EXPECT_EQ(seen.count(0), 0u);  // the busiest loses every pair it is drawn in
  EXPECT_GT(seen[1], seen[2]);
}

TEST(CacheAware, PrefersTheLongestMatchWhenBalanced) {
  auto p = make_cache_aware({});
  std::vector<CandidateView> c = {{.load = 1, .match = 10}, {.load = 1, .match = 90}, {.load = 0, .match = 0}};
  Pick pick = p->pick({.n_keys = 100}, c);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kCacheHit);
}

TEST(CacheAware, NoUsefulMatchGoesToMostFreeCache) {
  auto p = make_cache_aware({.min_match_ratio = 0.5});
  std::vector<CandidateView> c = {{.match = 10, .free_cache = 100}, {.match = 0, .free_cache = 900},
                                  {.match = 20, .free_cache = 500}};
  Pick pick = p->pick({.n_keys = 100}, c);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kFreeCache);
}

// New prefixes one at a time (nothing in flight, nothing matched) on replicas that look equally free,
// as between two polls: each must go to a different replica, not all to the first one listed (the
// e2e test saw three prefixes land on one replica this way).
TEST(CacheAware, SequentialNewPrefixesOnEquallyFreeReplicasSpread) {
  auto p = make_cache_aware({});
  std::vector<CandidateView> c(3, CandidateView{.load = 0, .match = 0, .free_cache = 1894});
  std::vector<int32_t> picks;
  for (int i = 0; i < 3; ++i) {
    Pick pick = p->pick({.n_keys = 120}, c);
    EXPECT_EQ(pick.decision, Decision::kFreeCache);
    picks.push_back(pick.index);
  }
  std::sort(picks.begin(), picks.end());
  EXPECT_EQ(picks, (std::vector<int32_t>{0, 1, 2}));
  // Turns only break ties: a replica with more free cache still wins every time.
  c[2].free_cache = 1900;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p->pick({.n_keys = 120}, c).index, 2);
}

TEST(CacheAware, ImbalanceBeyondBothThresholdsFallsBackToLeastLoaded) {
  // The count bound's own margins (--spill-factor 0): the default's cost spill would queue the far case.
  auto p = make_cache_aware({.balance_abs_threshold = 4, .balance_rel_threshold = 1.5, .spill_factor = 0});
  // Within the absolute margin: affinity wins.
  std::vector<CandidateView> close = {{.load = 4, .match = 50}, {.load = 0, .match = 0}};
  EXPECT_EQ(p->pick({.n_keys = 50}, close).index, 0);
  // Beyond the absolute margin but within 1.5x: affinity still wins.
  std::vector<CandidateView> rel = {{.load = 14, .match = 50}, {.load = 10, .match = 0}};
  EXPECT_EQ(p->pick({.n_keys = 50}, rel).index, 0);
  // Beyond both: the least loaded, and the decision says why.
  std::vector<CandidateView> far = {{.load = 9, .match = 50}, {.load = 2, .match = 0}};
  Pick pick = p->pick({.n_keys = 50}, far);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
}

// A hot prefix: every request shares it. Simulate requests arriving while earlier ones still run
// (each adds one load to its replica; one in five finishes per arrival on the busiest replica), with
// matches recorded the way the router records them. Affinity alone would send all 200 to replica 0;
// the thresholds must spread them so the busiest never exceeds the least busy by both margins.
TEST(CacheAware, HotPrefixDoesNotStarveBalance) {
  // The count bound alone (--spill-factor 0); the default's version of this case, where arrivals that
  // are not a burst may queue on the holder until a copy is cheaper, is CacheAwareCost.AHotPrefix*.
  CacheAwareConfig cfg{.balance_abs_threshold = 3, .balance_rel_threshold = 1.5, .spill_factor = 0};
  auto p = make_cache_aware(cfg);
  const int n = 4;
  std::vector<int64_t> load(n, 0);
  std::vector<int64_t> match(n, 0);
  match[0] = 100;  // replica 0 holds the hot prefix at the start
  std::vector<int> count(n, 0);
  for (int req = 0; req < 200; ++req) {
    std::vector<CandidateView> c;
    for (int i = 0; i < n; ++i) c.push_back({.load = load[i], .match = match[i], .free_cache = 1000});
    Pick pick = p->pick({.n_keys = 100}, c);
    ASSERT_GE(pick.index, 0);
    const auto i = static_cast<size_t>(pick.index);
    load[i]++;
    match[i] = 100;  // the replica now holds the prefix too
    count[i]++;
    if (req % 5 == 4) {
      auto busiest = std::max_element(load.begin(), load.end());
      if (*busiest > 0) --*busiest;
    }
    int64_t lo = *std::min_element(load.begin(), load.end());
    int64_t hi = *std::max_element(load.begin(), load.end());
    EXPECT_TRUE(hi - lo <= cfg.balance_abs_threshold + 1 || hi <= cfg.balance_rel_threshold * lo + 1)
        << "request " << req << ": loads " << lo << ".." << hi;
  }
  for (int i = 0; i < n; ++i) EXPECT_GT(count[i], 20) << "replica " << i << " starved";
}

TEST(CacheAware, PrefersLocalRegionUntilItIsSaturated) {
  auto p = make_cache_aware({.balance_abs_threshold = 2, .balance_rel_threshold = 1.5, .remote_penalty = 8});
  // A remote replica with the better match loses to an idle local one ...
  std::vector<CandidateView> c = {{.load = 0, .match = 0, .remote = false}, {.load = 0, .match = 80, .remote = true}};
  EXPECT_EQ(p->pick({.n_keys = 100}, c).index, 0);
  // ... but wins once local load exceeds the penalty plus the margins.
  std::vector<CandidateView> busy = {{.load = 30, .match = 0, .remote = false}, {.load = 0, .match = 80, .remote = true}};
  EXPECT_EQ(p->pick({.n_keys = 100}, busy).index, 1);
  // An idle remote replica does not turn the local ones' affinity into least-loaded: the local holder
  // with room keeps its prefix.
  std::vector<CandidateView> two = {{.load = 2, .match = 0}, {.load = 3, .match = 80},
                                    {.load = 0, .match = 0, .remote = true}};
  EXPECT_EQ(p->pick({.n_keys = 100}, two).index, 1);
}

}  // namespace
}  // namespace keel::router
