// cache_aware with the equal-match set and cost spills (--spill-factor F > 0, policy_cache_aware.cc):
// holders whose matches differ by a token or two are equivalent and the least busy allowed one takes
// the request; when the count bound allows none, the least busy holder still takes it unless the
// spill is cheaper by F (work ahead vs. the spill's extra prefill plus the target's work ahead), the
// request is part of a burst, or the holder's slack over the count cap is used up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_prompt.h"
#include "router/policy.h"

namespace keel::router {
namespace {

using namespace bench_prompt;  // kKeys, kShared, kDefaults, kCold, kWarm

CacheAwareConfig cost_mode(double factor = 2.0) { return {.spill_factor = factor}; }
// A request whose group had group_recent routed within the burst window, and (by default) that many
// still in flight: a burst's requests are all in flight when the next arrives.
RouteRequest request(int64_t group_recent = 0, int64_t group_in_flight = -1) {
  return {.n_keys = kKeys, .group_in_flight = group_in_flight < 0 ? group_recent : group_in_flight, .group_recent = group_recent};
}

TEST(CacheAwareCost, OnByDefaultAndValidated) {
  EXPECT_EQ(kDefaults.spill_factor, 3.0);  // the default since Session 7 (docs/router.md says why)
  EXPECT_TRUE(make_policy("cache_aware", CacheAwareConfig{.spill_factor = 0}).ok());  // the count bound's rules
  EXPECT_TRUE(make_policy("cache_aware", cost_mode()).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.spill_factor = -1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.equal_match_tokens = -1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.equal_match_ratio = 1.5}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.spill_slack = -1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.burst_window_ms = -1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.burst_arrivals = 0}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.burst_arrivals = kMaxBurstArrivals + 1}).ok());
}

TEST(CacheAwareCost, RecentArrivalsCountsTheNewestTimesInAWindow) {
  RecentArrivals r;
  EXPECT_EQ(r.since(0), 0);
  for (int64_t t : {100, 150, 190, 200}) r.add(t);
  EXPECT_EQ(r.since(100), 4);  // the window's start is inside it
  EXPECT_EQ(r.since(101), 3);
  EXPECT_EQ(r.since(201), 0);
  // Only the newest kMaxBurstArrivals are kept: older ones drop out, the count saturates.
  for (int64_t k = 0; k < kMaxBurstArrivals; ++k) r.add(1000 + k);
  EXPECT_EQ(r.since(0), kMaxBurstArrivals);
  EXPECT_EQ(r.since(1000 + kMaxBurstArrivals - 2), 2);
}

TEST(CacheAwareCost, EqualHoldersTakeTurnsByWorkNotByAToken) {
  // Replica 0 served "Hot 1?" and matches "Hot 13?" one token further than replica 1, but has more
  // work in flight; both are within the count bound (2 while replica 2 idles).
  std::vector<CandidateView> c = {{.load = 1, .work = 2 * kWarm, .match = kShared + 1},
                                  {.load = 1, .work = kWarm, .match = kShared}, {}};
  Pick by_match = make_cache_aware({.spill_factor = 0})->pick(request(), c);
  EXPECT_EQ(by_match.index, 0);  // the count bound alone: the longer match while within the cap
  Pick equal = make_cache_aware(cost_mode())->pick(request(), c);
  EXPECT_EQ(equal.index, 1);
  EXPECT_EQ(equal.decision, Decision::kCacheHit);
  // Equal work and requests: the longer match (its extra tokens are hits).
  c[0].work = kWarm;
  EXPECT_EQ(make_cache_aware(cost_mode())->pick(request(), c).index, 0);
}

TEST(CacheAwareCost, AMuchShorterMatchIsNotAnEqualHolder) {
  // Replica 1 holds only the chat template's first 20 tokens: 107 more uncached tokens, not equal.
  std::vector<CandidateView> c = {{.load = 1, .work = kWarm, .match = kShared}, {.load = 0, .match = 20}};
  EXPECT_EQ(make_cache_aware(cost_mode())->pick(request(), c).index, 0);
  // The tolerance is max(tokens, ratio x prompt): 8 tokens or 5 % of 142 = 7; 9 apart is not equal ...
  std::vector<CandidateView> near = {{.load = 1, .work = kWarm, .match = kShared}, {.load = 0, .match = kShared - 9}};
  EXPECT_EQ(make_cache_aware(cost_mode())->pick(request(), near).index, 0);
  // ... 8 apart is.
  near[1].match = kShared - 8;
  EXPECT_EQ(make_cache_aware(cost_mode())->pick(request(), near).index, 1);
}

TEST(CacheAwareCost, AHolderPrefillingTheGroupKeepsItsFollowersUnlessTheSpillIsCheaper) {
  // Replica 0 prefills the group's prefix and holds one follower; the others are idle and hold
  // nothing; the count bound (2 while a replica is idle) refuses replica 0.
  std::vector<CandidateView> c = {{.load = 2, .work = kCold + kWarm, .match = kShared}, {}, {}, {}};
  Pick by_count = make_cache_aware({.spill_factor = 0})->pick(request(), c);
  EXPECT_NE(by_count.index, 0);
  EXPECT_EQ(by_count.decision, Decision::kImbalance);
  // Work ahead 189 against the spill's extra 127 tokens on an idle replica: F = 2 (254) queues it ...
  Pick queued = make_cache_aware(cost_mode(2.0))->pick(request(), c);
  EXPECT_EQ(queued.index, 0);
  EXPECT_EQ(queued.decision, Decision::kWarmQueue);
  // ... F = 1 (the request's own finish time only: 189 + 31 later than 0 + 158) spills it.
  Pick spilled = make_cache_aware(cost_mode(1.0))->pick(request(), c);
  EXPECT_NE(spilled.index, 0);
  EXPECT_EQ(spilled.decision, Decision::kImbalance);
}

TEST(CacheAwareCost, TheQueueGrowsUntilASpillIsCheaper) {
  auto p = make_cache_aware(cost_mode(2.0));
  // Followers queue while work(h) <= 2 x 127: the prefill and three followers (251), then it spills.
  std::vector<CandidateView> c = {{.load = 4, .work = kCold + 3 * kWarm, .match = kShared}, {}, {}, {}};
  EXPECT_EQ(p->pick(request(), c).index, 0);
  c[0].load = 5;
  c[0].work += kWarm;
  Pick pick = p->pick(request(), c);
  EXPECT_NE(pick.index, 0);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
  // The target's own work ahead counts on the spill's side: with every other replica busy (100 each,
  // within the count bound at 1 each), 282 <= 2 x (127 + 100) queues it again.
  std::vector<CandidateView> busy = {{.load = 5, .work = kCold + 4 * kWarm, .match = kShared},
                                     {.load = 3, .work = 100}, {.load = 3, .work = 100}, {.load = 3, .work = 100}};
  EXPECT_EQ(p->pick(request(), busy).index, 0);
}

TEST(CacheAwareCost, TheSpillGoesWhereTheRequestFinishesFirst) {
  // Holder full; replica 1 holds part of the prompt and a long queue, replica 2 nothing and no work:
  // 400 + 101 against 0 + 158: replica 2.
  std::vector<CandidateView> c = {{.load = 9, .work = 2000, .match = kShared},
                                  {.load = 1, .work = 400, .match = 57}, {.load = 1, .work = 0}};
  EXPECT_EQ(make_cache_aware(cost_mode())->pick(request(), c).index, 2);
  c[1].work = 20;  // 20 + 101 < 158: the partial holder
  EXPECT_EQ(make_cache_aware(cost_mode())->pick(request(), c).index, 1);
}

TEST(CacheAwareCost, ABurstIsLeftToTheCountBound) {
  std::vector<CandidateView> c = {{.load = 2, .work = kCold + kWarm, .match = kShared}, {}, {}, {}};
  auto p = make_cache_aware(cost_mode());
  EXPECT_EQ(p->pick(request(/*group_recent=*/2, /*group_in_flight=*/2), c).index, 0);  // two of its group just routed: queues
  Pick burst = p->pick(request(/*group_recent=*/3, /*group_in_flight=*/2), c);           // three: a burst
  EXPECT_NE(burst.index, 0);
  EXPECT_EQ(burst.decision, Decision::kImbalance);
}

// --burst-share 1/3: three of a group within the window while the fleet is busy with other groups (a
// Poisson clump at high load: the group holds 3 of the 11 requests in flight) is no burst, and the
// holder keeps it by cost; once the group holds a third of the requests in flight (a hot prefix
// filling the fleet) it is a burst. With the default (0, any share) the clump is a burst and spills.
TEST(CacheAwareCost, WithABurstShareAClumpOfOneGroupAmongManyIsNoBurst) {
  const CacheAwareConfig share{.spill_factor = 2.0, .burst_share = 1.0 / 3};
  std::vector<CandidateView> c = {{.load = 4, .work = kCold + 3 * kWarm, .match = kShared},
                                  {.load = 2, .work = 2 * kWarm}, {.load = 3, .work = kCold}, {.load = 2, .work = 2 * kWarm}};
  Pick clump = make_cache_aware(share)->pick(request(/*group_recent=*/3, /*group_in_flight=*/3), c);
  EXPECT_EQ(clump.index, 0);
  EXPECT_EQ(clump.decision, Decision::kWarmQueue);
  Pick any_share = make_cache_aware(cost_mode())->pick(request(3, 3), c);
  EXPECT_NE(any_share.index, 0);
  EXPECT_EQ(any_share.decision, Decision::kImbalance);
  // The same holder with the group's requests making up 4 of the 11 in flight: a burst.
  Pick burst = make_cache_aware(share)->pick(request(3, 4), c);
  EXPECT_NE(burst.index, 0);
  EXPECT_EQ(burst.decision, Decision::kImbalance);
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.burst_share = -0.1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.burst_share = 1.5}).ok());
}

TEST(CacheAwareCost, TheSlackCapsTheQueue) {
  // F = 100 would queue anything; slack 1 allows one request over the count cap (2): 3, not 4.
  auto p = make_cache_aware({.spill_factor = 100, .spill_slack = 1});
  std::vector<CandidateView> c = {{.load = 2, .work = kCold + kWarm, .match = kShared}, {}, {}, {}};
  EXPECT_EQ(p->pick(request(), c).index, 0);
  c[0].load = 3;
  EXPECT_NE(p->pick(request(), c).index, 0);
}

TEST(CacheAwareCost, NoUsefulMatchStillGoesToTheMostFreeCache) {
  std::vector<CandidateView> c = {{.load = 1, .match = 3, .free_cache = 100}, {.load = 0, .free_cache = 900},
                                  {.load = 0, .free_cache = 500}};
  Pick pick = make_cache_aware(cost_mode())->pick(request(), c);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kFreeCache);
}

// One new prefix arrives as 12 requests at once on 4 idle replicas (every earlier one of the burst
// routed within the window), none finishing meanwhile: the holder takes three (the third queued by
// cost: two of its group so far is no burst yet), then the count bound alone; 3 each.
TEST(CacheAwareCost, ABurstOfANewPrefixFromIdleEndsBalanced) {
  auto p = make_cache_aware(cost_mode());
  std::vector<int64_t> load(4, 0), work(4, 0);
  std::vector<bool> holds(4, false);
  for (int64_t k = 0; k < 12; ++k) {
    std::vector<CandidateView> c;
    for (size_t i = 0; i < 4; ++i) c.push_back({.load = load[i], .work = work[i], .match = holds[i] ? kKeys - 3 : 0, .free_cache = 1000});
    const auto i = static_cast<size_t>(p->pick(request(/*group_recent=*/k), c).index);
    ++load[i];
    work[i] += kDefaults.cost(kKeys, c[i].match, 1);
    holds[i] = true;
    if (k == 2) {
      EXPECT_EQ(load[0], 3);
    }
  }
  EXPECT_EQ(load, (std::vector<int64_t>{3, 3, 3, 3}));
}

// A single hot prefix held by one replica whose requests are never seen as a burst (the guard that is
// left is the cost test and the slack): a request arrives every tick, each replica finishes one
// request every 4 ticks, so the traffic needs every replica. The holder's queue grows until a spill is cheaper; the spill's copy makes the
// target an equal holder, the least busy holder takes the next requests, and the load spreads: every
// replica ends up holding the prefix and serving a share, and no replica ever holds more than the
// count cap plus the slack.
TEST(CacheAwareCost, AHotPrefixHeldByOneReplicaSpreadsOnceItsQueueCostsMoreThanACopy) {
  CacheAwareConfig cfg = cost_mode(2.0);
  auto p = make_cache_aware(cfg);
  const size_t n = 4;
  std::vector<std::vector<int64_t>> queue(n);  // costs in flight, oldest first
  std::vector<bool> holds = {true, false, false, false};
  std::vector<int> served(n, 0);
  int spills = 0, first_spill = -1, hits_after_spill = 0;
  for (int t = 0; t < 400; ++t) {
    if (t % 4 == 3) {
      for (auto& q : queue) {
        if (!q.empty()) q.erase(q.begin());
      }
    }
    std::vector<CandidateView> c;
    for (size_t i = 0; i < n; ++i) {
      int64_t w = 0;
      for (int64_t x : queue[i]) w += x;
      c.push_back({.load = static_cast<int64_t>(queue[i].size()), .work = w, .match = holds[i] ? kShared : 0, .free_cache = 1000});
    }
    Pick pick = p->pick(request(), c);
    const auto i = static_cast<size_t>(pick.index);
    if (!holds[i]) {
      ++spills;
      if (first_spill < 0) first_spill = t;
    } else if (spills > 0) {
      ++hits_after_spill;
    }
    queue[i].push_back(kDefaults.cost(kKeys, c[i].match, 1));
    holds[i] = true;
    ++served[i];
    int64_t lo = 1 << 20, hi = 0;
    for (const auto& q : queue) {
      lo = std::min<int64_t>(lo, static_cast<int64_t>(q.size()));
      hi = std::max<int64_t>(hi, static_cast<int64_t>(q.size()));
    }
    const int64_t cap = std::max<int64_t>(std::max<int64_t>(lo, 1) + cfg.balance_abs_threshold,
                                          static_cast<int64_t>(cfg.balance_rel_threshold * static_cast<double>(lo)));
    ASSERT_LE(hi, cap + cfg.spill_slack) << "tick " << t;
  }
  EXPECT_GE(first_spill, 1);  // it did queue first
  EXPECT_EQ(spills, 3);       // one copy per other replica, no more: every spill target is a holder from then on
  EXPECT_GT(hits_after_spill, 250);
  for (size_t i = 0; i < n; ++i) EXPECT_GT(served[i], 30) << "replica " << i << " starved";
}

}  // namespace
}  // namespace keel::router

namespace keel::router {
namespace {

TEST(CacheAwarePullCost, APullCostsTheHoldersUncachedTokensPlusItsShareOfThePulledOnes) {
  const CacheAwareConfig c{.kv_pull_cost = 0.1};
  // 142 keys, 127 held elsewhere, none here: 15 uncached + 16 per request + ceil(0.1 x 127) = 13.
  EXPECT_EQ(c.cost_with_pull(kKeys, 0, kShared, 1), c.cost(kKeys, kShared, 1) + 13);
  // Nothing more to pull, or pulls not weighed: the plain cost.
  EXPECT_EQ(c.cost_with_pull(kKeys, kShared, kShared, 1), c.cost(kKeys, kShared, 1));
  EXPECT_EQ(CacheAwareConfig{}.cost_with_pull(kKeys, 0, kShared, 1), CacheAwareConfig{}.cost(kKeys, 0, 1));
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.kv_pull_cost = -0.1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.kv_pull_cost = 1.5}).ok());
}

TEST(CacheAwarePullCost, AReplicaThatCanPullTakesTheSpillAHolderWouldOtherwiseQueue) {
  // The holder prefills the group and holds one follower (the AHolderPrefillingTheGroup... case): at
  // F = 2 the follower queues there, since a spill would prefill 127 tokens again ...
  std::vector<CandidateView> c = {{.load = 2, .work = kCold + kWarm, .match = kShared}, {}, {}, {}};
  RouteRequest r = request();
  r.pull_match = kShared;
  CacheAwareConfig config = cost_mode(2.0);
  config.kv_pull_cost = 0.1;
  EXPECT_EQ(make_cache_aware(config)->pick(r, c).index, 0);
  // ... but a replica that can pull the prefix costs 13 tokens more than the holder, not 127: the
  // holder's work ahead (189) exceeds 2 x (13 + 0), so the request goes there.
  for (size_t i = 1; i < c.size(); ++i) c[i].can_pull = true;
  Pick pick = make_cache_aware(config)->pick(r, c);
  EXPECT_NE(pick.index, 0);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
  // Pulls not weighed (kv_pull_cost 0, the default): it queues as before.
  EXPECT_EQ(make_cache_aware(cost_mode(2.0))->pick(r, c).index, 0);
}

}  // namespace
}  // namespace keel::router
