// Two router instances in front of the same replicas during one group's burst (--routers 2 in
// bench_router_prefix): each instance counts only its own requests, so alone it sees half the burst
// (its burst guard fires late: each queues burst_arrivals at the holder) and half the load. With the
// replicas' feeds it sees both: the pushed in-flight counts (`event: load`, Replica::set_pushed) and
// the announced prompts (`event: pending`, PrefixIndex::announced_since as the group's arrivals, as
// proxy_admit.cc takes them). Real Replica, PrefixIndex and cache_aware policy; the replicas' feeds
// are the only stand-in (their events are applied directly, as cache_feed.cc does).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "router/policy.h"
#include "router/prefix_index.h"
#include "router/replica.h"

namespace keel::router {
namespace {

constexpr int kReplicas = 4;
constexpr int64_t kKeys = 64;

struct Instance {
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<Policy> policy = make_cache_aware({});
  PrefixIndex index{1000, 0, 60'000};
  int64_t own_group = 0;  // this instance's requests of the group (all in flight, all recent)
  Instance() {
    for (int i = 0; i < kReplicas; ++i) {
      replicas.push_back(std::make_unique<Replica>(i, "http://127.0.0.1:1", Endpoint{.host = "127.0.0.1", .port = 1},
                                                   ReplicaLabels{}, BreakerConfig{}));
    }
  }
};

struct BurstResult {
  std::array<int64_t, kReplicas> final{};
  double worst = 0;  // busiest / least over the states after each decision where every replica is busy
  std::string worst_state;
  double worst_lo2 = 0;  // the same over the states where the least busy holds at least 2
};

// `burst` requests of one group (kKeys keys; replica 0 holds it at the start, and every replica that
// takes one holds it from then on), sent to the two instances in runs of `block`, none finishing
// meanwhile (a burst outruns the replicas). With `feeds`, each decision's replica announces the
// prompt and pushes its in-flight count (all instances' requests) to both instances before the next
// decision; without, each instance knows only its own requests (polls are too late for a burst).
BurstResult run_burst(int burst, bool feeds, int block) {
  std::array<Instance, 2> inst;
  std::array<bool, kReplicas> holds{true, false, false, false};
  auto keys = std::make_shared<const std::vector<uint64_t>>([] {
    std::vector<uint64_t> k(kKeys);
    for (int64_t i = 0; i < kKeys; ++i) k[static_cast<size_t>(i)] = 1000 + static_cast<uint64_t>(i);
    return k;
  }());
  const auto group_index = static_cast<size_t>(kGroupTokens - 1);
  BurstResult out;
  for (int i = 0; i < burst; ++i) {
    Instance& in = inst[static_cast<size_t>((i / block) % 2)];
    std::vector<CandidateView> c;
    for (int r = 0; r < kReplicas; ++r) {
      const Replica& rep = *in.replicas[static_cast<size_t>(r)];
      c.push_back({.load = rep.load(),
                   .work = rep.work.load(),
                   .match = holds[static_cast<size_t>(r)] ? kKeys : 0,
                   .free_cache = 1000});
    }
    int64_t recent = in.own_group;
    if (feeds)
      recent = std::max(recent, in.index.announced_since(group_index, (*keys)[group_index], now_us() - 100'000));
    const Pick p = in.policy->pick({.n_keys = kKeys, .group_in_flight = in.own_group, .group_recent = recent}, c);
    const auto r = static_cast<size_t>(p.index);
    in.replicas[r]->in_flight.fetch_add(1);
    in.replicas[r]->work.fetch_add(CacheAwareConfig{}.cost(kKeys, c[r].match, 1));
    holds[r] = true;
    ++in.own_group;
    std::array<int64_t, kReplicas> total{};
    for (size_t k = 0; k < kReplicas; ++k)
      total[k] = inst[0].replicas[k]->in_flight.load() + inst[1].replicas[k]->in_flight.load();
    if (feeds) {
      for (auto& other : inst) {
        other.index.add_pending(static_cast<ReplicaId>(r), keys);
        for (size_t k = 0; k < kReplicas; ++k) other.replicas[k]->set_pushed(total[k]);
      }
    }
    const auto [lo, hi] = std::minmax_element(total.begin(), total.end());
    if (*lo > 0 && static_cast<double>(*hi) / static_cast<double>(*lo) > out.worst) {
      out.worst = static_cast<double>(*hi) / static_cast<double>(*lo);
      out.worst_state = std::to_string(total[0]) + " " + std::to_string(total[1]) + " " + std::to_string(total[2]) +
                        " " + std::to_string(total[3]);
    }
    if (*lo >= 2) out.worst_lo2 = std::max(out.worst_lo2, static_cast<double>(*hi) / static_cast<double>(*lo));
    out.final = total;
  }
  return out;
}

// Interleaved (each request to the other instance, as bench_router_prefix sends them) and in runs of
// two and three: with the feeds two instances place the burst as one instance does (the holder
// queues burst_arrivals before the burst guard fires, then the bound holds: the worst state is the
// one instance's, and once the least busy holds 2 the busiest holds at most 1.5x); without them the
// holder's queue is one instance's twice over (worst 5-6x; 2.5-3x with the least busy at 2).
TEST(TwoInstances, TheFeedsMakeTwoInstancesPlaceABurstAsOneDoes) {
  for (int burst : {16, 24, 48}) {
    const BurstResult one = run_burst(burst, false, burst);  // every request through instance 0
    for (int block : {1, 2, 3}) {
      const BurstResult with = run_burst(burst, true, block);
      const BurstResult without = run_burst(burst, false, block);
      int64_t sum = 0;
      for (int64_t v : with.final) sum += v;
      EXPECT_EQ(sum, burst);
      EXPECT_LE(with.worst, one.worst) << "block " << block << " burst " << burst << ": " << with.worst_state;
      EXPECT_LE(with.worst_lo2, 1.5) << "block " << block << " burst " << burst;
      EXPECT_GT(without.worst, one.worst) << "block " << block << " burst " << burst << ": " << without.worst_state;
      EXPECT_GT(without.worst_lo2, 1.5) << "block " << block << " burst " << burst;
    }
  }
}

}  // namespace
}  // namespace keel::router
