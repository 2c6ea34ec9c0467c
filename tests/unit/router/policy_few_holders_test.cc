// cache_aware's few-holders rules (CacheAwareConfig::hold_prefilling, group_need, home_holder; off by
// default, --hold-prefilling --group-need --home-holder): a prompt group stays on as few replicas as its own load
// needs. A follower of a prefix that every holder is still prefilling queues behind that prefill; a group whose own
// requests in flight would not pay for a second cold prefill queues on its busy holder; among equal holders the group's
// home takes the request while its work is under one cold prefill. Bursts still spread (count bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_prompt.h"
#include "router/policy.h"

namespace keel::router {
namespace {

using namespace bench_prompt;  // kKeys, kShared, kCold, kWarm

constexpr CacheAwareConfig kOld{};  // the default: Session 9's rules
constexpr CacheAwareConfig kFew{.hold_prefilling = true, .group_need = true, .home_holder = true};
constexpr uint64_t kGroup = 0x5eed;

RouteRequest request(int64_t group_in_flight, int64_t group_recent = 0) {
  return {.n_keys = kKeys, .group_in_flight = group_in_flight, .group_recent = group_recent, .group = kGroup};
}

// Off by default: on the device (docs/performance.md, Session 10) they did not cut the cold prefills.
TEST(CacheAwareFewHolders, OffByDefault) {
  const CacheAwareConfig d{};
  EXPECT_FALSE(d.hold_prefilling);
  EXPECT_FALSE(d.group_need);
  EXPECT_FALSE(d.home_holder);
}

// The hot group's first prompt is being prefilled on replica 0 (matched only as a prompt in flight:
// cached 0) with eight followers queued behind it; replica 1 idles. The old cost test spills (work
// 158 + 8 x 31 = 406 > 3 x 127): a second cold prefill of the same prefix. With the rule the follower
// queues behind the prefill. Once replica 0 has the prefix stored, the cost test applies again.
TEST(CacheAwareFewHolders, AFollowerOfAPrefixStillPrefilledQueuesBehindIt) {
  const int64_t work = kCold + 8 * kWarm;
  std::vector<CandidateView> c = {{.load = 9, .work = work, .match = kShared, .cached = 0, .id = 1},
                                  {.load = 0, .id = 2}};
  EXPECT_EQ(make_cache_aware(kOld)->pick(request(9), c).index, 1);
  const Pick held = make_cache_aware(kFew)->pick(request(9), c);
  EXPECT_EQ(held.index, 0);
  EXPECT_EQ(held.decision, Decision::kWarmQueue);
  c[0].cached = kShared;  // stored: a queue of nine of the group pays for a copy
  EXPECT_EQ(make_cache_aware(kFew)->pick(request(9), c).index, 1);
  // Only while slack is left: past cap + spill_slack the holder spills whatever it holds.
  c[0].cached = 0;
  c[0].load = 2 + kDefaults.spill_slack;
  EXPECT_EQ(make_cache_aware(kFew)->pick(request(9), c).index, 1);
}

// A tail group (no other request in flight) whose holder is busy with another group's queue: the old
// cost test copies it to the idle replica; with group_need it queues on its holder, since one request
// of 31 tokens there does not pay for a 127-token extra prefill. A group with enough requests of its
// own in flight (5 x 31 >= 127) is copied as before.
TEST(CacheAwareFewHolders, AGroupIsCopiedOnlyWhenItsOwnQueuePaysForIt) {
  std::vector<CandidateView> c = {{.load = 10, .work = 14 * kWarm, .match = kShared, .id = 1}, {.load = 0, .id = 2}};
  EXPECT_EQ(make_cache_aware(kOld)->pick(request(0), c).index, 1);
  const Pick kept = make_cache_aware(kFew)->pick(request(0), c);
  EXPECT_EQ(kept.index, 0);
  EXPECT_EQ(kept.decision, Decision::kWarmQueue);
  EXPECT_EQ(make_cache_aware(kFew)->pick(request(3), c).index, 0);  // 4 x 31 = 124 < 127
  EXPECT_EQ(make_cache_aware(kFew)->pick(request(4), c).index, 1);  // 5 x 31 = 155
}

// Equal holders within the count bound: the old rule takes the least busy; with home_holder the
// group's home (the same replica whatever the candidates' order) while its work is at most one cold
// prefill, then the least busy.
TEST(CacheAwareFewHolders, EqualHoldersFavourTheGroupsHomeUntilItsQueueCostsAColdPrefill) {
  std::vector<CandidateView> c = {{.load = 1, .work = kWarm, .match = kShared, .id = 1},
                                  {.load = 1, .work = kWarm, .match = kShared, .id = 2},
                                  {.load = 1, .work = kWarm, .match = kShared, .id = 3},
                                  {.load = 1, .work = kWarm, .match = kShared, .id = 4}};
  auto policy = make_cache_aware(kFew);
  const uint64_t home = c[static_cast<size_t>(policy->pick(request(1), c).index)].id;
  std::vector<CandidateView> reversed(c.rbegin(), c.rend());
  EXPECT_EQ(reversed[static_cast<size_t>(policy->pick(request(1), reversed).index)].id, home);
  // The home busier than the others but under a cold prefill: still the home; the old rule: not it.
  for (auto& v : c) {
    if (v.id == home) v.work = kCold;
  }
  EXPECT_EQ(c[static_cast<size_t>(policy->pick(request(1), c).index)].id, home);
  EXPECT_NE(c[static_cast<size_t>(make_cache_aware(kOld)->pick(request(1), c).index)].id, home);
  // Past one cold prefill: the least busy holder.
  for (auto& v : c) {
    if (v.id == home) v.work = kCold + 1;
  }
  EXPECT_NE(c[static_cast<size_t>(policy->pick(request(1), c).index)].id, home);
  // Another group can have another home: over 64 groups the homes cover every replica.
  for (auto& v : c) v.work = kWarm;
  std::vector<int> homes(5, 0);
  for (uint64_t g = 1; g <= 64; ++g) {
    RouteRequest r = request(1);
    r.group = g;
    ++homes[static_cast<size_t>(c[static_cast<size_t>(make_cache_aware(kFew)->pick(r, c).index)].id)];
  }
  EXPECT_GT(*std::min_element(homes.begin() + 1, homes.end()), 0);
}

// In a burst the home rule is off: the least busy equal holder takes it, as with the old rules, so a
// burst over replicas that all hold the prefix spreads by work (first device run of Session 10: with
// the home rule inside bursts the closed-loop burst's full-sample ratio was 2.0 in 2 of 4 runs).
TEST(CacheAwareFewHolders, ABurstOverEqualHoldersGoesToTheLeastBusyNotTheHome) {
  std::vector<CandidateView> c = {{.load = 1, .work = kWarm, .match = kShared, .id = 1},
                                  {.load = 1, .work = kWarm, .match = kShared, .id = 2},
                                  {.load = 1, .work = kWarm, .match = kShared, .id = 3},
                                  {.load = 1, .work = kWarm, .match = kShared, .id = 4}};
  auto policy = make_cache_aware(kFew);
  const auto home = static_cast<size_t>(policy->pick(request(4), c).index);
  c[home].work = 2 * kWarm;  // still within the count bound and under a cold prefill
  EXPECT_EQ(policy->pick(request(4, /*group_recent=*/0), c).index, static_cast<int32_t>(home));
  const Pick in_burst = policy->pick(request(4, /*group_recent=*/3), c);
  EXPECT_NE(in_burst.index, static_cast<int32_t>(home));
  EXPECT_EQ(c[static_cast<size_t>(in_burst.index)].work, kWarm);
}

// A burst of one hot prefix held by replica 0 alone (still prefilling it), 12 requests from idle, 5 ms
// apart: the burst guard (3 within 100 ms) hands it to the count bound, so the few-holders rules do not
// pile it on the holder: it ends 3 / 3 / 3 / 3, as the old rules do, and after every decision the
// busiest holds at most max(least + 1, 1.5 x least) once each replica holds two (the holder's first
// three came before the guard's bar: 3 / 1 / 1 / 1 on the way, as with the old rules).
TEST(CacheAwareFewHolders, ABurstStillSpreadsWithinTheBound) {
  for (const CacheAwareConfig& cfg : {kFew, kOld}) {
    auto policy = make_cache_aware(cfg);
    std::vector<CandidateView> c = {{.id = 1}, {.id = 2}, {.id = 3}, {.id = 4}};
    c[0].match = kShared;
    c[0].cached = 0;
    for (int64_t i = 0; i < 12; ++i) {
      const Pick p = policy->pick(request(i, std::min<int64_t>(i, 20)), c);
      ASSERT_GE(p.index, 0);
      CandidateView& v = c[static_cast<size_t>(p.index)];
      v.work += cfg.cost(kKeys, v.match, 1);
      v.match = kShared;
      if (v.cached < 0) v.cached = 0;  // its prefill is in flight
      ++v.load;
      const auto [lo, hi] = std::minmax_element(c.begin(), c.end(), [](auto& a, auto& b) { return a.load < b.load; });
      if (lo->load >= 2) {
        EXPECT_LE(hi->load, std::max(lo->load + 1, lo->load * 3 / 2)) << "request " << i;
      }
    }
    for (const auto& v : c) EXPECT_EQ(v.load, 3);
  }
}

}  // namespace
}  // namespace keel::router
