// Several router instances with exact peer sync (`keel router --peer`, peer_view.h) deciding one burst
// at the same time (bench_router_prefix --routers N, the closed-loop burst: request i to instance i
// mod N within the same milliseconds). Each instance learns every other instance's decision from its
// peer feed after a lag of `lag` further decisions in the fleet (0: before the next decision), and the
// replicas push their loads and announce the prompts every `push` decisions (as the cache feeds do).
// Real Replica (load_synced with the peers' sums, or load(n) without peers), real PeerView fed the
// peers' route events as the wire carries them, real cache_aware policy; the feeds' timing is the
// only stand-in. Compare policy_instances_test.cc: the same burst without peers.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "router/peer_view.h"
#include "router/policy.h"
#include "router/replica.h"

namespace keel::router {
namespace {

constexpr int kReplicas = 4;
constexpr int64_t kKeys = 64;
constexpr uint64_t kGroup = 0x5eed;
using Fleet = std::array<int64_t, kReplicas>;

std::string url_of(size_t r) { return fmt::format("http://10.0.0.{}:8000", r + 1); }

struct Instance {
  ReplicaList replicas;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<PeerView> peers;       // one entry per other instance
  std::array<int64_t, kReplicas> own{};  // this instance's requests of the group per replica
  std::array<int64_t, kReplicas> own_work{};
  std::array<bool, kReplicas> announced{};  // holders the replicas announced (pending) by the last push
  int64_t announced_arrivals = 0;
  int64_t own_total = 0;
  int64_t peer_arrivals = 0;  // the peers' route events received (all within the burst window)
  int64_t instances = 1;
};

// One decision's event as a peer receives it: after it, instance `from` holds `in_flight` and `work` on `replica`.
struct RouteEvent {
  int from;
  size_t replica;
  int64_t in_flight, work;
};

SseEvent sse(std::string name, std::string data) { return SseEvent{.event = std::move(name), .data = std::move(data)}; }

size_t peer_slot(int me, int from) { return static_cast<size_t>(from < me ? from : from - 1); }

struct Result {
  Fleet fleet{};
  Fleet worst{};  // the least balanced state with at least 12 in flight
};

bool within_1_5(const Fleet& f) {
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  return *lo > 0 && 2 * *hi <= 3 * *lo;
}

double ratio(const Fleet& f) {
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  return *lo > 0 ? static_cast<double>(*hi) / static_cast<double>(*lo) : 1e9;
}

std::string state(const Fleet& f) { return fmt::format("{} {} {} {}", f[0], f[1], f[2], f[3]); }

// `burst` requests of one new group (no replica holds it; polled free caches differ a little, the same
// on every instance) to `n` instances in turn (or by `split`), none finishing meanwhile. `peers`: every
// instance has a live peer feed from every other (lag `lag`); else Session 10's --instance i/n estimate.
// `peer_work`: the candidates' work includes the peers' (keel router --peer-work); else own work only (the default).
// `lags`: a lag per decision for the first ones (then `lag`): the device's burst starts with decisions a
// few ms apart (each sees the last) and then packs them closer than the feed. `push_at` (non-empty): the
// decisions after which the replicas push and announce, instead of every `push`.
Result run(int n, int burst, int lag, bool peers, int push = 3, const std::vector<int>& split = {},
           bool peer_work = false, const std::vector<int>& lags = {}, const std::vector<int>& push_at = {},
           const std::array<int64_t, kReplicas>& free_cache = {9000, 9100, 8800, 8950}) {
  std::vector<Instance> inst(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Instance& in = inst[static_cast<size_t>(i)];
    CacheAwareConfig config;
    config.instance = i;
    config.instances = n;
    in.instances = n;
    in.policy = make_cache_aware(config);
    for (size_t r = 0; r < kReplicas; ++r) {
      in.replicas.push_back(std::make_shared<Replica>(r + 1, url_of(r), Endpoint{.host = "10.0.0.1", .port = 8000},
                                                      ReplicaLabels{}, BreakerConfig{}));
      in.replicas.back()->set_pushed(0);
    }
    std::vector<std::string> urls;
    for (int k = 0; k < n - 1; ++k) urls.push_back(fmt::format("http://127.0.0.1:{}", 9000 + k));
    in.peers = std::make_unique<PeerView>(urls);
    if (peers) {
      uint64_t g = 0;
      for (size_t p = 0; p + 1 < static_cast<size_t>(n); ++p) {
        EXPECT_EQ(in.peers->apply(p, sse("reset", "{}"), in.replicas, &g), PeerApply::kApplied);
      }
    }
    // Earlier decisions of other groups (long finished): each instance's turn counter out of step.
    std::vector<CandidateView> idle(kReplicas);
    for (int k = 0; k < 3 * i + 1; ++k) in.policy->pick({.n_keys = kKeys, .group = 7}, idle);
  }
  Fleet fleet{};
  Result out;
  double worst = 0;
  std::deque<std::pair<int, RouteEvent>> wire;  // (decision index it becomes visible at, event)
  auto deliver = [&](int d) {
    while (!wire.empty() && wire.front().first <= d) {
      const RouteEvent e = wire.front().second;
      wire.pop_front();
      for (int k = 0; k < n; ++k) {
        if (k == e.from) continue;
        Instance& in = inst[static_cast<size_t>(k)];
        uint64_t g = 0;
        const std::string data = fmt::format(R"({{"url":"{}","in_flight":{},"work":{},"group":{}}})", url_of(e.replica),
                                             e.in_flight, e.work, kGroup);
        EXPECT_EQ(in.peers->apply(peer_slot(k, e.from), sse("route", data), in.replicas, &g), PeerApply::kApplied);
        EXPECT_EQ(g, kGroup);
        ++in.peer_arrivals;  // RouterService::add_peer_arrival
      }
    }
  };
  auto decide = [&](int who) {
    Instance& in = inst[static_cast<size_t>(who)];
    const bool synced = in.peers->all_live();
    std::vector<CandidateView> c;
    for (size_t r = 0; r < kReplicas; ++r) {
      const Replica& rep = *in.replicas[r];
      c.push_back({.load = synced ? rep.load_synced() : rep.load(in.instances),
                   .work = rep.work.load() + (synced && peer_work ? rep.peer_work.load() : 0),
                   .match = in.own[r] > 0 || in.announced[r] ? kKeys : 0,
                   .free_cache = free_cache[r]});
    }
    // As proxy_admit.cc: own + peers' arrivals when synced, else own x n; the replicas' announcements if more.
    const int64_t mine = synced ? in.own_total + in.peer_arrivals : in.instances * in.own_total;
    const Pick p = in.policy->pick({.n_keys = kKeys,
                                    .group_in_flight = in.own_total,
                                    .group_recent = std::max(mine, in.announced_arrivals),
                                    .group = kGroup,
                                    .synced = synced},
                                   c);
    EXPECT_GE(p.index, 0);
    const auto r = static_cast<size_t>(p.index);

    const int64_t cost = CacheAwareConfig{}.cost(kKeys, c[r].match, 1);
    in.replicas[r]->in_flight.fetch_add(1);
    in.replicas[r]->work.fetch_add(cost);
    ++in.own[r];
    in.own_work[r] += cost;
    ++in.own_total;
    ++fleet[r];
    return RouteEvent{.from = who, .replica = r, .in_flight = in.own[r], .work = in.own_work[r]};
  };
  for (int d = 0; d < burst; ++d) {
    deliver(d);
    const int who = split.empty() ? d % n : split[static_cast<size_t>(d) % split.size()];
    const RouteEvent e = decide(who);
    if (peers)
      wire.emplace_back(d + 1 + (static_cast<size_t>(d) < lags.size() ? lags[static_cast<size_t>(d)] : lag), e);
    const bool pushes =
        push_at.empty() ? (d + 1) % push == 0 : std::find(push_at.begin(), push_at.end(), d) != push_at.end();
    if (pushes) {
      for (auto& other : inst) {
        for (size_t k = 0; k < kReplicas; ++k) {
          other.replicas[k]->set_pushed(fleet[k]);
          other.announced[k] = other.announced[k] || fleet[k] > 0;
        }
        other.announced_arrivals = d + 1;
      }
    }
    if (d + 1 >= 12 && ratio(fleet) > worst) {
      worst = ratio(fleet);
      out.worst = fleet;
    }
  }
  out.fleet = fleet;
  return out;
}

int64_t sum(const Fleet& f) { return f[0] + f[1] + f[2] + f[3]; }

bool within_2(const Fleet& f) {
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  return *lo > 0 && *hi <= 2 * *lo;
}

// Two instances, bursts of 12 and 24, the replicas pushing every 3 decisions, each instance seeing the
// other's decisions 0, 1 or 2 decisions late: every state with 12 or more in flight keeps 1.5x, with
// own work (the default) and with the peers' work (--peer-work). Four instances keep it while the feed
// is current (lag 0).
TEST(PeerSyncedInstances, KeepTheBound) {
  for (bool peer_work : {false, true}) {
    for (int burst : {12, 24}) {
      for (int lag : {0, 1, 2}) {
        const Result r = run(2, burst, lag, true, 3, {}, peer_work);
        EXPECT_TRUE(within_1_5(r.worst)) << "burst " << burst << ", lag " << lag << ", peer work " << peer_work << ": "
                                         << state(r.worst);
        EXPECT_EQ(sum(r.fleet), burst);
      }
      const Result four = run(4, burst, 0, true, 3, {}, peer_work);
      EXPECT_TRUE(within_1_5(four.worst)) << "four instances, burst " << burst << ": " << state(four.worst);
      EXPECT_EQ(sum(four.fleet), burst);
    }
  }
}

// Where peer sync does not keep 1.5x (stated, not hidden): four instances with the feed a decision or two
// late. With k tied candidates and n > k instances deciding on the same view, two instances take the same
// one: at lag 1 bursts of 12 and 24 pass 3 2 4 3 (2.0), at lag 2 a burst of 24 passes 3 5 3 3 (1.67); a
// burst of 12 at lag 2 keeps 3 3 3 3. (With the (i mod k)-th of the tied instead of the spread positions:
// 2 3 3 4 and 3 2 3 4 at lags 1 and 2, both bursts.) Two instances at a lag of 3 pass 3 5 3 3 in a burst
// of 24 (1.67). Every case stays within 2x.
TEST(PeerSyncedInstances, FourInstancesWithALaggingFeedStayWithinTwice) {
  for (int burst : {12, 24}) {
    for (int lag : {1, 2}) {
      const Result r = run(4, burst, lag, true);
      EXPECT_TRUE(within_2(r.worst)) << "burst " << burst << ", lag " << lag << ": " << state(r.worst);
      EXPECT_EQ(lag == 2 && burst == 12, within_1_5(r.worst))
          << "burst " << burst << ", lag " << lag << ": " << state(r.worst);
    }
  }
  EXPECT_EQ(state(run(2, 12, 3, true).worst), "3 3 3 3");
  EXPECT_TRUE(within_2(run(2, 24, 3, true).worst));
}

// The same harness without peers (Session 10's --instance i/n estimate, the bench's --no-peers), pushes
// every 3 decisions: one push shows one instance's picks and not the other's and both take the same
// least loaded replica (two instances: 3 2 3 4; the device held 3 4 3 2).
TEST(PeerSyncedInstances, WithoutPeersTheSameHarnessBreaksTheBound) {
  for (int n : {2, 4}) {
    for (int burst : {12, 24}) {
      const Result r = run(n, burst, 0, false);
      EXPECT_FALSE(within_1_5(r.worst)) << n << " instances, burst " << burst << ": " << state(r.worst);
    }
  }
}

// An uneven split (8 and 4 of every 12 between two instances): the instance with two of every three
// requests decides twice on a view missing the other's pick. Taking the two ends of the tied list, both
// bursts keep 1.5x at lags 0-1 (burst 24 at lag 1: 3 3 3 4; the (i mod k)-th of the tied passed 4 5 3 4
// there, 1.67); at lag 2 both pass 2 3 3 4 (2.0). Bound reached: 2x at every lag 0-2 (without peers:
// 4 2 3 3, 2.0, at pushes every 3).
TEST(PeerSyncedInstances, UnevenSplitStaysWithinTwice) {
  const std::vector<int> split{0, 0, 1};
  for (int burst : {12, 24}) {
    for (int lag : {0, 1, 2}) {
      const Result r = run(2, burst, lag, true, 3, split);
      EXPECT_TRUE(within_2(r.worst)) << burst << " " << lag << ": " << state(r.worst);
      const bool expect_1_5 = lag <= 1;
      EXPECT_EQ(expect_1_5, within_1_5(r.worst)) << burst << " " << lag << ": " << state(r.worst);
    }
  }
}

// Traced with keel router --decision-log (docs/performance.md Session 11; 3 3 4 2 on the device and on the
// development VM): the burst's first two requests reach the instances a few ms apart, so the second sees
// the first (its replica announced the prompt) and queues on that holder; the third and fourth come to
// the two instances within the feed's lag, before either sees the burst guard's third arrival, and both
// queue on the holder past the count bound by the cost test (warm_queue): 4 there, and the rest of the
// burst fills 3 3 4 2. Here: decisions 0-1 seen at once, decision 2 one decision late, then at once; the
// replicas announce after decision 0 and then every 3.
TEST(PeerSyncedInstances, TwoWarmQueuesOnOneViewBeforeTheGuardFires) {
  const Result r = run(2, 12, 0, true, 3, {}, false, {0, 0, 1}, {0, 5, 8, 11});
  EXPECT_TRUE(within_1_5(r.worst)) << state(r.worst);
  EXPECT_EQ(sum(r.fleet), 12);
}

// Traced with --decision-log (Session 11 call 4 run 1, docs/performance.md: 2 3 3 4 on the device): the
// burst's first two requests reach the instances 0.14 ms apart, each deciding before the other's pick
// arrives; one replica is clearly the most free (1,777 slots against 1,438-1,521) and with free caches
// within 1/8 tied both took it, then each queued its next request on it (4 there). Here: the first
// three decisions seen 3, 2 and 1 decisions late (all at the fifth), the rest at once.
TEST(PeerSyncedInstances, FirstPicksOnOneViewWithOneClearlyFreestReplica) {
  const Result r = run(2, 12, 0, true, 3, {}, false, {3, 2, 1}, {}, {1455, 1521, 1438, 1777});
  EXPECT_TRUE(within_1_5(r.worst)) << state(r.worst);
  EXPECT_EQ(sum(r.fleet), 12);
}

// Random feed timing (fixed seed): 2,000 bursts of 12 and of 24 on two instances, each decision's event
// reaching the other 0-2 decisions late, the replicas announcing after a random third of the decisions,
// free caches spread over 1,000-2,000 slots. Every state with 12 or more in flight stays within 2x. The share
// within 1.5x is printed, not asserted: it is the figure a rule for the burst's first picks should raise
// (with c2ea011's near-burst rule: 1,352 of 2,000 for bursts of 12, 959 without it; 1,057 for bursts of 24;
// with free caches within 1/2 tied instead of 1/8: 1,529 and 1,171).
TEST(PeerSyncedInstances, RandomFeedTimingStaysWithinTwice) {
  for (int burst : {12, 24}) {
    std::mt19937 rng(1);
    int within = 0;
    constexpr int kBursts = 2000;
    for (int k = 0; k < kBursts; ++k) {
      std::vector<int> lags(static_cast<size_t>(burst));
      for (auto& l : lags) l = static_cast<int>(rng() % 3);
      std::vector<int> push_at;
      for (int d = 0; d < burst; ++d) {
        if (rng() % 3 == 0) push_at.push_back(d);
      }
      if (push_at.empty()) push_at.push_back(burst - 1);
      std::array<int64_t, kReplicas> free_cache{};
      for (auto& f : free_cache) f = 1000 + static_cast<int64_t>(rng() % 1000);
      const Result r = run(2, burst, 0, true, 3, {}, false, lags, push_at, free_cache);
      ASSERT_TRUE(within_2(r.worst)) << "burst " << burst << ", schedule " << k << ": " << state(r.worst);
      ASSERT_EQ(sum(r.fleet), burst);
      within += within_1_5(r.worst) ? 1 : 0;
    }
    fmt::print("burst of {}: {} of {} random feed timings within 1.5x\n", burst, within, kBursts);
  }
}

// --near-burst-window-ms (CacheAwareConfig::near_burst_window_ms): the hot group's Poisson pair (2 seen in
// the burst window, the holder over the count bound but cheap to queue on by the cost test) is a warm
// queue when its previous arrival is older than the window, and a spill (the near-burst rule: the other
// instance may have a third unseen) when it is younger or the window is 0 (Session 11's rule, the default).
TEST(PeerSyncedInstances, NearBurstWindowLetsAPoissonPairQueueOnItsHolder) {
  const std::vector<CandidateView> c{{.load = 4, .work = 68, .match = kKeys, .free_cache = 1000},
                                     {.load = 2, .work = 160, .match = 0, .free_cache = 1000},
                                     {.load = 2, .work = 160, .match = 0, .free_cache = 1000},
                                     {.load = 2, .work = 160, .match = 0, .free_cache = 1000}};
  auto pick = [&](int64_t window_ms, int64_t gap_ms) {
    CacheAwareConfig config;
    config.instance = 0;
    config.instances = 2;
    config.near_burst_window_ms = window_ms;
    return make_cache_aware(config)->pick({.n_keys = kKeys,
                                           .group_in_flight = 4,
                                           .group_recent = 2,
                                           .group_gap_ms = gap_ms,
                                           .group = kGroup,
                                           .synced = true},
                                          c);
  };
  const Pick old_pair = pick(2, 13);
  EXPECT_EQ(old_pair.index, 0);
  EXPECT_EQ(old_pair.decision, Decision::kWarmQueue);
  for (const Pick p : {pick(2, 1), pick(0, 13)}) {
    EXPECT_NE(p.index, 0);
    EXPECT_EQ(p.decision, Decision::kImbalance);
  }
  CacheAwareConfig bad;
  bad.near_burst_window_ms = -1;
  EXPECT_FALSE(bad.validate().ok());
}

}  // namespace
}  // namespace keel::router
