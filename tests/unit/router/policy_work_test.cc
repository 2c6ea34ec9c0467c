// cache_aware's work rule (policy_cache_aware.cc): a prefix holder takes warm followers the
// request-count bound would spill cold, up to --balance-work-slack requests over the bound and while
// the follower still finishes about as early as it would cold elsewhere; a holder with many requests
// still spills; with equal or nearly equal costs everywhere it is exactly the count bound.
// Every policy here runs with --spill-factor 0: the rule is consulted only then (the default's
// equal-match set and cost spill replace it; docs/router.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "bench_prompt.h"
#include "router/policy.h"

namespace keel::router {
namespace {

using namespace bench_prompt;  // kKeys, kShared, kDefaults, kCold, kWarm

RouteRequest request() { return {.n_keys = kKeys}; }

TEST(CacheAwareWork, CostIsUncachedTokensPlusThePerRequestConstant) {
  EXPECT_EQ(kCold, 142 + 16);
  EXPECT_EQ(kWarm, 15 + 16);
  EXPECT_EQ(kDefaults.cost(10, 4, 16), 6 * 16 + 16);  // character blocks stand for several tokens
  EXPECT_EQ(kDefaults.cost(10, 12, 1), 16);           // a match never exceeds the prompt
  EXPECT_EQ(CacheAwareConfig{.work_request_tokens = 0}.cost(10, 0, 0), 10);  // at least a token per key
}

TEST(CacheAwareWork, RejectsNegativeSettings) {
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.work_request_tokens = -1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.balance_abs_work = -1}).ok());
  EXPECT_FALSE(make_policy("cache_aware", CacheAwareConfig{.balance_work_slack = -1}).ok());
  EXPECT_TRUE(make_policy("cache_aware", CacheAwareConfig{.balance_work_slack = 3}).ok());
  EXPECT_EQ(kDefaults.balance_work_slack, 0);  // off unless asked for (docs/router.md says why)
}

TEST(CacheAwareWork, AHolderBusyWithOneColdPrefillTakesTheWarmFollowers) {
  // Replica 0 prefills the group's prefix (one cold request) and already took one warm follower (the
  // count bound allows two while a replica is idle); the others are idle and hold nothing.
  std::vector<CandidateView> c = {{.load = 2, .work = kCold + kWarm, .match = kShared}, {}, {}, {}};
  Pick by_count = make_cache_aware({.balance_work_slack = 0, .spill_factor = 0})->pick(request(), c);
  EXPECT_NE(by_count.index, 0);  // the count bound alone spills it: a second cold prefill
  EXPECT_EQ(by_count.decision, Decision::kImbalance);
  Pick by_work = make_cache_aware({.balance_work_slack = 1, .spill_factor = 0})->pick(request(), c);
  EXPECT_EQ(by_work.index, 0);
  EXPECT_EQ(by_work.decision, Decision::kWarmQueue);
  // Also when every replica is busy (the count bound's cap is then 2 at a least load of 1).
  std::vector<CandidateView> busy = {{.load = 2, .work = kCold + kWarm, .match = kShared},
                                     {.load = 1, .work = kWarm},
                                     {.load = 1, .work = kWarm},
                                     {.load = 1, .work = kWarm}};
  EXPECT_NE(make_cache_aware({.balance_work_slack = 0, .spill_factor = 0})->pick(request(), busy).index, 0);
  EXPECT_EQ(make_cache_aware({.balance_work_slack = 1, .spill_factor = 0})->pick(request(), busy).index, 0);
  // More slack (and a finish limit that allows it), more followers: with 3 it holds the prefill and
  // four followers, then spills.
  std::vector<CandidateView> more = {{.load = 4, .work = kCold + 3 * kWarm, .match = kShared}, {}, {}, {}};
  auto slack3 = make_cache_aware({.balance_abs_work = 200, .balance_work_slack = 3, .spill_factor = 0});
  EXPECT_EQ(slack3->pick(request(), more).index, 0);
  more[0].load = 5;
  more[0].work += kWarm;
  EXPECT_NE(slack3->pick(request(), more).index, 0);
}

TEST(CacheAwareWork, TheSlackBoundsTheFollowers) {
  // Slack 1: the prefill plus two followers, and the next spills even when it would finish in time.
  std::vector<CandidateView> c = {{.load = 3, .work = kCold + 2 * kWarm, .match = kShared}, {}, {}, {}};
  Pick pick = make_cache_aware({.balance_abs_work = 1000, .balance_work_slack = 1, .spill_factor = 0})->pick(request(), c);
  EXPECT_NE(pick.index, 0);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
}

TEST(CacheAwareWork, AHolderWithManyWarmRequestsStillSpills) {
  // Two warm requests while the others idle: a third waits about 93 tokens' worth there against a
  // 158-token cold prefill elsewhere, so it queues (one over the count bound).
  std::vector<CandidateView> two = {{.load = 2, .work = 2 * kWarm, .match = kShared}, {}, {}, {}};
  EXPECT_EQ(make_cache_aware({.balance_work_slack = 1, .spill_factor = 0})->pick(request(), two).index, 0);
  EXPECT_NE(make_cache_aware({.balance_work_slack = 0, .spill_factor = 0})->pick(request(), two).index, 0);
  // Three: the slack is used up, it spills.
  std::vector<CandidateView> three = {{.load = 3, .work = 3 * kWarm, .match = kShared}, {}, {}, {}};
  Pick pick = make_cache_aware({.balance_work_slack = 1, .spill_factor = 0})->pick(request(), three);
  EXPECT_NE(pick.index, 0);
  EXPECT_EQ(pick.decision, Decision::kImbalance);
  // Many, with a slack that would allow them: the finish limit spills it (7 x 31 + 31 > 1.5 x 158).
  std::vector<CandidateView> many = {{.load = 7, .work = 7 * kWarm, .match = kShared}, {}, {}, {}};
  EXPECT_NE(make_cache_aware({.balance_work_slack = 8, .spill_factor = 0})->pick(request(), many).index, 0);
}

TEST(CacheAwareWork, PromptsDifferingInATokenAreNotASaving) {
  // Replica 0 served a prompt sharing one more token with this one than replica 1's in-flight copy
  // ("Hot 1?" and "Hot 13?"): 31 against 32 tokens is no reason to go over the count bound.
  std::vector<CandidateView> c = {{.load = 3, .work = 3 * kWarm, .match = kShared + 1},
                                  {.load = 2, .work = 2 * kWarm, .match = kShared}};
  Pick with_rule = make_cache_aware({.balance_work_slack = 8, .spill_factor = 0})->pick(request(), c);
  EXPECT_EQ(with_rule.index, 1);
  EXPECT_NE(with_rule.decision, Decision::kWarmQueue);
}

TEST(CacheAwareWork, AHolderWhoseQueueOutlastsAColdPrefillElsewhereSpills) {
  // The holder carries a long prefill of something else: the follower would finish far later there
  // (900 + 31) than cold on an idle replica (158 x 1.5), so it spills despite the slack.
  std::vector<CandidateView> c = {{.load = 2, .work = 900, .match = kShared}, {}, {}, {}};
  EXPECT_NE(make_cache_aware({.balance_work_slack = 1, .spill_factor = 0})->pick(request(), c).index, 0);
  // --balance-abs-work lets it wait that much longer.
  EXPECT_EQ(make_cache_aware({.balance_abs_work = 800, .balance_work_slack = 1, .spill_factor = 0})->pick(request(), c).index, 0);
}

TEST(CacheAwareWork, AnotherHolderWithRoomIsPreferredToQueueing) {
  // Replica 1 holds the prefix too (a spill copy) and is under the count bound: the cheapest allowed
  // cost is warm, so the busy holder saves nothing and the count bound decides.
  std::vector<CandidateView> c = {{.load = 2, .work = kCold + kWarm, .match = kShared},
                                  {.load = 0, .match = kShared}, {}, {}};
  Pick pick = make_cache_aware({.balance_work_slack = 1, .spill_factor = 0})->pick(request(), c);
  EXPECT_EQ(pick.index, 1);
  EXPECT_EQ(pick.decision, Decision::kCacheHit);
}

TEST(CacheAwareWork, EqualCostsEverywhereReduceToTheCountBound) {
  // Random states where every candidate holds the same share of the prompt, give or take a few tokens
  // (so the request costs about the same everywhere): the work rule never changes a pick.
  std::mt19937_64 rng(7);
  auto with_rule = make_cache_aware({.balance_abs_work = 10000, .balance_work_slack = 8, .spill_factor = 0});
  auto count_only = make_cache_aware({.balance_work_slack = 0, .spill_factor = 0});
  int tried = 0;
  for (int k = 0; k < 5000; ++k) {
    const int64_t base = static_cast<int64_t>(rng() % 3) * 60;  // 0, 60 or 120 of 142 everywhere
    std::vector<CandidateView> c;
    const size_t n = 2 + rng() % 4;
    for (size_t i = 0; i < n; ++i) {
      const auto load = static_cast<int64_t>(rng() % 7);
      const int64_t match = base == 0 ? 0 : base + static_cast<int64_t>(rng() % 4);
      c.push_back({.load = load, .work = static_cast<int64_t>(rng() % 1000), .match = match,
                   .free_cache = static_cast<int64_t>(rng() % 3)});
    }
    Pick a = with_rule->pick(request(), c);
    Pick b = count_only->pick(request(), c);  // free-cache ties rotate alike: both see the same picks
    EXPECT_EQ(a.index, b.index) << "state " << k;
    EXPECT_EQ(a.decision, b.decision) << "state " << k;
    tried += a.decision == Decision::kCacheHit || a.decision == Decision::kImbalance;
  }
  EXPECT_GT(tried, 1000);  // the states reach the bound's cases, not only free-cache picks
}

// One new prefix arrives as a burst of 12 on 4 idle replicas, none finishing meanwhile; each replica
// the router sends it to holds it from then on (in flight). The holder takes the prefill and two
// followers (one more than the count bound alone allows while a replica is idle), each spill target
// the same, and the burst ends balanced, 3 each, with one cold prefill per replica either way.
TEST(CacheAwareWork, ABurstOfANewPrefixFromIdleEndsBalanced) {
  for (int64_t slack : {0, 1}) {
    SCOPED_TRACE(slack);
    auto p = make_cache_aware({.balance_work_slack = slack, .spill_factor = 0});
    std::vector<int64_t> load(4, 0), work(4, 0);
    std::vector<bool> holds(4, false);
    int warm_queued = 0, cold = 0;
    for (int k = 0; k < 12; ++k) {
      std::vector<CandidateView> c;
      for (size_t i = 0; i < 4; ++i) {
        c.push_back({.load = load[i], .work = work[i], .match = holds[i] ? kKeys : 0, .free_cache = 1000});
      }
      Pick pick = p->pick(request(), c);
      const auto i = static_cast<size_t>(pick.index);
      warm_queued += pick.decision == Decision::kWarmQueue;
      cold += c[i].match == 0;
      ++load[i];
      work[i] += kDefaults.cost(kKeys, c[i].match, 1);
      holds[i] = true;
      if (k == 2) {
        EXPECT_EQ(load[0], slack == 0 ? 2 : 3);
      }
    }
    EXPECT_EQ(load, (std::vector<int64_t>{3, 3, 3, 3}));
    EXPECT_EQ(cold, 4);  // one cold prefill per replica, as with the count bound alone
    if (slack == 0) {
      EXPECT_EQ(warm_queued, 0);
    } else {
      EXPECT_GE(warm_queued, 3);  // each of the first three holders took a follower over the count bound
    }
  }
}

}  // namespace
}  // namespace keel::router
