// cache_aware under a hot-prefix burst: the balance bound holds at every decision once every replica
// is busy, while most hot-prefix requests still land where the prefix is cached. Plus the spill
// target (next-best match, not the least loaded) and the load signal (polls never hide fresh counts).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "router/policy.h"
#include "router/replica.h"

namespace keel::router {
namespace {

// Closed loop: `clients` requests always outstanding. Replica i finishes its oldest request every
// period[i] ticks (different speeds); each finished request is replaced at once by a new one, so
// every routing decision follows one completion. Three in four requests share a hot prefix (held at
// the start by replica 0, the slowest, and then by every replica the router sent it to); the fourth
// has a prefix no replica holds. Each replica's work in flight is the summed cost of its requests as
// the router counts it (CacheAwareConfig::cost at the match when routed: a hot request on a holder
// costs 26, any other 116), so the work rule sees what it sees in the router. Checked after every decision but the first n (warm-up): while all
// replicas are busy the busiest holds at most 1.5x the least busy, or one more (a single
// request is the finest step); while one is idle, nobody holds more than 2.
struct BurstResult {
  int decisions_checked = 0;
  int violations = 0;
  std::string first_violation;
  int hot = 0;
  int hot_on_holder = 0;
  int warm_queued = 0;  // picks over the count bound (work rule, group affinity)
  std::vector<int> per_replica;
};

// Decisions before the first `unchecked` (default: one per replica) are not checked; while a replica
// is idle nobody may hold more than idle_hi; while all are busy, busy_extra loosens "or one more".
BurstResult run_burst(Policy& p, int clients, const std::vector<int>& period, int ticks, int unchecked = -1,
                      int64_t idle_hi = 2, int64_t busy_extra = 0) {
  const size_t n = period.size();
  std::vector<int64_t> load(n, 0);
  std::vector<std::deque<int64_t>> costs(n);  // in flight, oldest first
  std::vector<std::deque<bool>> hot_flags(n);  // which of them are hot (one prompt group)
  int64_t hot_in_flight = 0;
  std::vector<bool> holds(n, false);
  holds[0] = true;
  BurstResult out;
  out.per_replica.assign(n, 0);
  int next_req = 0;
  auto route_one = [&] {
    const bool hot = next_req++ % 4 != 3;
    std::vector<CandidateView> c;
    for (size_t i = 0; i < n; ++i) {
      int64_t work = 0;
      for (int64_t w : costs[i]) work += w;
      c.push_back({.load = load[i], .work = work, .match = hot && holds[i] ? 90 : 0, .free_cache = 1000 - 10 * load[i]});
    }
    // In a burst every hot request in flight was routed moments ago: all count as recent.
    Pick pick = p.pick({.n_keys = 100, .group_in_flight = hot ? hot_in_flight : 0, .group_recent = hot ? hot_in_flight : 0}, c);
    if (pick.index < 0) {
      ADD_FAILURE() << "no pick";
      return;
    }
    const auto i = static_cast<size_t>(pick.index);
    if (hot) {
      ++out.hot;
      if (holds[i]) ++out.hot_on_holder;
      holds[i] = true;  // the router now counts it as holding the prefix (in flight, then cached)
    }
    ++load[i];
    costs[i].push_back(CacheAwareConfig{}.cost(100, c[i].match, 1));
    hot_flags[i].push_back(hot);
    hot_in_flight += hot;
    if (pick.decision == Decision::kWarmQueue || pick.decision == Decision::kGroupAffinity) ++out.warm_queued;
    ++out.per_replica[i];
    const int64_t lo = *std::min_element(load.begin(), load.end());
    const int64_t hi = *std::max_element(load.begin(), load.end());
    if (next_req <= (unchecked < 0 ? static_cast<int>(n) : unchecked)) return;  // warm-up
    ++out.decisions_checked;
    // Every replica busy (a burst): the goal. One idle: a holder may have taken a second request.
    if (lo > 0 ? static_cast<double>(hi) <= 1.5 * static_cast<double>(lo) || hi - lo <= 1 + busy_extra : hi <= idle_hi) {
      return;
    }
    if (out.violations++ == 0) out.first_violation = fmt::format("decision {}: in-flight {}..{}", next_req, lo, hi);
  };
  for (int k = 0; k < clients; ++k) route_one();  // the burst arrives at once
  for (int t = 1; t <= ticks; ++t) {
    for (size_t i = 0; i < n; ++i) {
      if (t % period[i] != 0 || load[i] == 0) continue;
      --load[i];
      costs[i].pop_front();
      hot_in_flight -= hot_flags[i].front();
      hot_flags[i].pop_front();
      route_one();
    }
  }
  return out;
}

// The count bound alone (--spill-factor 0): the default keeps a bound one looser in the ramp
// (CostSpillsLeaveABurstToTheCountBound below).
TEST(CacheAwareBurst, BalanceHoldsAtEveryDecisionAndTheHotPrefixMostlyHits) {
  for (int clients : {8, 12, 24, 48, 96}) {  // more requests than replicas: bursts
    SCOPED_TRACE(clients);
    auto p = make_cache_aware({.spill_factor = 0});
    BurstResult r = run_burst(*p, clients, {5, 3, 2, 1}, 600);
    EXPECT_GT(r.decisions_checked, 300);
    EXPECT_EQ(r.violations, 0) << r.first_violation;
    std::cout << clients << " clients: " << r.hot_on_holder << " of " << r.hot << " hot requests on a holder, work per replica "
              << r.per_replica[0] << "/" << r.per_replica[1] << "/" << r.per_replica[2] << "/" << r.per_replica[3] << "\n";
    EXPECT_GT(2 * r.hot_on_holder, r.hot) << r.hot_on_holder << " of " << r.hot << " hot requests hit";
    // The fast replica must get the most work: balance follows completion speed.
    EXPECT_EQ(std::max_element(r.per_replica.begin(), r.per_replica.end()) - r.per_replica.begin(), 3);
  }
}

// The work rule (--balance-work-slack 1) in the same closed loop, where the router's work in
// flight sees the cold requests' cost: a holder busy with a spill's cold prefill takes one warm
// request over the count bound during the burst's ramp (`warm_queue`), so for a few decisions the
// busiest holds one more than the count bound allows; once the burst is in (12 or more requests on 4
// replicas) the count bound holds at every decision again. A burst of 8 leaves the slow holder with 3
// against 1 after the ramp for a while (the idle cap's price, below).
TEST(CacheAwareBurst, TheWorkRuleCostsTheRampAtMostItsSlack) {
  for (int clients : {8, 12, 24, 48, 96}) {
    SCOPED_TRACE(clients);
    auto p = make_cache_aware({.balance_work_slack = 1, .spill_factor = 0});
    BurstResult r = run_burst(*p, clients, {5, 3, 2, 1}, 600, -1, /*idle_hi=*/3, /*busy_extra=*/1);
    EXPECT_GT(r.decisions_checked, 300);
    EXPECT_EQ(r.violations, 0) << r.first_violation;
    EXPECT_GE(r.warm_queued, 1);  // the rule did act
    EXPECT_GT(2 * r.hot_on_holder, r.hot);
    EXPECT_EQ(std::max_element(r.per_replica.begin(), r.per_replica.end()) - r.per_replica.begin(), 3);
    auto fresh = make_cache_aware({.balance_work_slack = 1, .spill_factor = 0});
    BurstResult after_ramp = run_burst(*fresh, clients, {5, 3, 2, 1}, 600, /*unchecked=*/clients);
    if (clients >= 12) {
      EXPECT_EQ(after_ramp.violations, 0) << after_ramp.first_violation;
    } else {
      EXPECT_GT(after_ramp.violations, 0);  // the price named above; the simulation must show it
    }
  }
}

// Group affinity (--group-affinity 3) in the same closed loop: the hot prefix is one group with many
// requests in flight, so after the ramp the count bound decides every hot request; the ramp may leave
// a holder with 3 while a replica idles.
TEST(CacheAwareBurst, GroupAffinityLeavesABurstToTheCountBound) {
  for (int clients : {8, 12, 24, 48, 96}) {
    SCOPED_TRACE(clients);
    auto p = make_cache_aware({.group_affinity = 3, .spill_factor = 0});
    BurstResult r = run_burst(*p, clients, {5, 3, 2, 1}, 600, -1, /*idle_hi=*/3, /*busy_extra=*/1);
    EXPECT_GT(r.decisions_checked, 300);
    EXPECT_EQ(r.violations, 0) << r.first_violation;
    EXPECT_GE(r.warm_queued, 1);  // it did act, in the ramp
    EXPECT_GT(2 * r.hot_on_holder, r.hot);
    auto fresh = make_cache_aware({.group_affinity = 3, .spill_factor = 0});
    BurstResult after_ramp = run_burst(*fresh, clients, {5, 3, 2, 1}, 600, /*unchecked=*/clients);
    if (clients >= 12) {
      EXPECT_EQ(after_ramp.violations, 0) << after_ramp.first_violation;
    }
  }
}

// Cost spills (the default, --spill-factor 3): in a burst the group's requests arrive together, so from the third
// on the count bound decides and, once every replica holds the prefix, the equal-match set sends each
// request to the least busy holder; the ramp may leave a holder with 3 while a replica idles.
// The same with --burst-share 1/3: the hot group holds three quarters of the requests in flight.
TEST(CacheAwareBurst, CostSpillsLeaveABurstToTheCountBound) {
  for (double share : {0.0, 1.0 / 3}) {
    for (int clients : {8, 12, 24, 48, 96}) {
      SCOPED_TRACE(clients);
      SCOPED_TRACE(share);
      auto p = make_cache_aware({.burst_share = share});
      BurstResult r = run_burst(*p, clients, {5, 3, 2, 1}, 600, -1, /*idle_hi=*/3, /*busy_extra=*/1);
      EXPECT_GT(r.decisions_checked, 300);
      EXPECT_EQ(r.violations, 0) << r.first_violation;
      EXPECT_GT(2 * r.hot_on_holder, r.hot);
      EXPECT_EQ(std::max_element(r.per_replica.begin(), r.per_replica.end()) - r.per_replica.begin(), 3);
      auto fresh = make_cache_aware({.burst_share = share});
      BurstResult after_ramp = run_burst(*fresh, clients, {5, 3, 2, 1}, 600, /*unchecked=*/clients);
      if (clients >= 12) {
        EXPECT_EQ(after_ramp.violations, 0) << after_ramp.first_violation;
      }
    }
  }
}

// The old rule (margin on the candidate's current load: load - min <= 4 OR load <= 1.5 x min) is
// what let a hot prefix pile up; the same simulation must catch it, or the test above proves nothing.
class MarginOnCurrentLoad final : public Policy {
 public:
  std::string_view name() const override { return "margin"; }
  Pick pick(const RouteRequest&, std::span<const CandidateView> c) override {
    int64_t lo = c[0].load;
    for (const auto& v : c) lo = std::min(lo, v.load);
    int32_t best = -1;
    for (size_t i = 0; i < c.size(); ++i) {
      const bool ok = c[i].load - lo <= 4 || static_cast<double>(c[i].load) <= 1.5 * static_cast<double>(lo);
      if (ok && (best < 0 || c[i].match > c[static_cast<size_t>(best)].match)) best = static_cast<int32_t>(i);
    }
    return {.index = best, .decision = Decision::kCacheHit};
  }
};

TEST(CacheAwareBurst, TheSimulationCatchesAMarginOnCurrentLoad) {
  MarginOnCurrentLoad p;
  EXPECT_GT(run_burst(p, 12, {5, 3, 2, 1}, 600).violations, 0);
}

TEST(CacheAwareBurst, SpillGoesToTheNextBestMatchNotTheLeastLoaded) {
  // The count bound alone (--spill-factor 0): the default queues this request on the full holder
  // (its work in flight is 0 here) and sends a real spill where it finishes first
  // (CacheAwareCost.TheSpillGoesWhereTheRequestFinishesFirst).
  auto p = make_cache_aware({.spill_factor = 0});
  // Replica 0 holds the whole prefix but is at the cap (6 = 1.5 x 4); replica 1 holds most of it and
  // has room; replica 2 is the least loaded and holds none.
  std::vector<CandidateView> c = {{.load = 6, .match = 100}, {.load = 5, .match = 60}, {.load = 4, .match = 0}};
  Pick pick = p->pick({.n_keys = 100}, c);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
}

TEST(CacheAwareBurst, RepairsAStateThatCompletionsPushedOverTheBound) {
  auto p = make_cache_aware({});
  // The least busy just drained to 2 while another holds 5: only it moves toward the bound, even
  // though the cold request would otherwise go to the most free cache.
  std::vector<CandidateView> c = {{.load = 5, .free_cache = 10}, {.load = 2, .free_cache = 1},
                                  {.load = 3, .free_cache = 900}, {.load = 3, .free_cache = 900}};
  EXPECT_EQ(p->pick({.n_keys = 100}, c).index, 1);
}

// --balance-idle-cap: a prefix holder queues a third request instead of spilling it cold while the
// fleet has spare capacity (a replica idle, no more requests in flight than replicas). Consulted only
// with --spill-factor 0, as every test of it here runs.
TEST(CacheAwareIdleCap, AHolderQueuesWhileTheFleetHasSpareCapacity) {
  std::vector<CandidateView> c = {{.load = 2, .match = 100}, {}, {}, {}};
  Pick by_default = make_cache_aware({.spill_factor = 0})->pick({.n_keys = 100}, c);
  EXPECT_NE(by_default.index, 0);  // the default cap (2 while a replica is idle) spills it
  EXPECT_EQ(by_default.decision, Decision::kImbalance);
  Pick relaxed = make_cache_aware({.balance_idle_cap = 3, .spill_factor = 0})->pick({.n_keys = 100}, c);
  EXPECT_EQ(relaxed.index, 0);
  EXPECT_EQ(relaxed.decision, Decision::kCacheHit);
  // At the idle cap itself it spills again.
  c[0].load = 3;
  EXPECT_NE(make_cache_aware({.balance_idle_cap = 3, .spill_factor = 0})->pick({.n_keys = 100}, c).index, 0);
}

TEST(CacheAwareIdleCap, EndsOnceMoreRequestsThanReplicasAreInFlight) {
  // One replica idle, but 4 requests in flight on 4 replicas: the normal bound (cap 2) applies.
  std::vector<CandidateView> c = {{.load = 2, .match = 100}, {.load = 1}, {.load = 1}, {.load = 0}};
  Pick pick = make_cache_aware({.balance_idle_cap = 3, .spill_factor = 0})->pick({.n_keys = 100}, c);
  EXPECT_EQ(pick.index, 3);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
}

TEST(CacheAwareIdleCap, AHotBurstFromIdleStillEndsBalanced) {
  // 12 requests of one hot prefix arrive at once on 4 idle replicas (none finishes meanwhile): the
  // holder takes 3 while the others are idle, then the bound evens it out.
  auto p = make_cache_aware({.balance_idle_cap = 3, .spill_factor = 0});
  std::vector<int64_t> load(4, 0);
  std::vector<bool> holds = {true, false, false, false};
  for (int k = 0; k < 12; ++k) {
    std::vector<CandidateView> c;
    for (size_t i = 0; i < 4; ++i) c.push_back({.load = load[i], .match = holds[i] ? 90 : 0, .free_cache = 1000});
    const auto i = static_cast<size_t>(p->pick({.n_keys = 100}, c).index);
    ++load[i];
    holds[i] = true;
    if (k == 2) {
      EXPECT_EQ(load[0], 3) << "the holder queues while the fleet has room";
    }
  }
  EXPECT_EQ(load, (std::vector<int64_t>{3, 3, 3, 3}));
}

TEST(CacheAwareIdleCap, ClosedLoopBurstsKeepTheBoundAfterTheRampOnlyFromThreePerReplica) {
  // Saturated (more requests than replicas) the relaxation never applies, so after the ramp the bound
  // holds as with the default, provided the ramp itself ended balanced: 12 or more requests on 4
  // replicas end at 3 each or more.
  for (int clients : {12, 24}) {
    SCOPED_TRACE(clients);
    auto p = make_cache_aware({.balance_idle_cap = 3, .spill_factor = 0});
    BurstResult r = run_burst(*p, clients, {5, 3, 2, 1}, 600, /*unchecked=*/clients, /*idle_hi=*/3);
    EXPECT_GT(r.decisions_checked, 300);
    EXPECT_EQ(r.violations, 0) << r.first_violation;
  }
  // The price (why the default is 2): a burst of 8 on 4 replicas leaves the ramp at [3,2,2,1] and the
  // slow holder keeps its 3 for a while; the default cap never lets it take the third.
  auto relaxed = make_cache_aware({.balance_idle_cap = 3, .spill_factor = 0});
  EXPECT_GT(run_burst(*relaxed, 8, {5, 3, 2, 1}, 600, 8, 3).violations, 0);
  auto by_default = make_cache_aware({.spill_factor = 0});
  EXPECT_EQ(run_burst(*by_default, 8, {5, 3, 2, 1}, 600, 8, 2).violations, 0);
}

TEST(ReplicaLoad, PolledQueueAddsOnlyTrafficTheRouterDidNotSend) {
  Replica r(1, "http://127.0.0.1:1", {.host = "127.0.0.1", .port = 1}, {}, {});
  r.in_flight = 3;
  r.set_reported(/*queued_now=*/1, /*running_now=*/2, /*ours=*/3);  // all of it ours
  EXPECT_EQ(r.load(), 3);
  r.in_flight = 7;  // a burst since the poll: the fresh count rules
  EXPECT_EQ(r.load(), 7);
  r.set_reported(4, 4, 7);  // one request the replica still counts after we got its answer: one poll
  EXPECT_EQ(r.load(), 7);   // does not make it load
  r.set_reported(6, 4, 7);  // three from elsewhere, two polls in a row
  EXPECT_EQ(r.load(), 8);   // the smaller excess of the two (1)
  r.set_reported(6, 4, 7);
  EXPECT_EQ(r.load(), 10);
  r.set_reported(0, 0, 7);  // a stale, lower report never hides our count
  EXPECT_EQ(r.load(), 7);
  r.set_reported(-1, -1, 7);  // replica reports nothing
  EXPECT_EQ(r.load(), 7);
}

}  // namespace
}  // namespace keel::router
