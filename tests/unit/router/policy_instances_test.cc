// Several router instances deciding one burst at the same time (bench_router_prefix --routers N, the
// closed-loop burst): the client sends request i to instance i mod N within the same milliseconds, so
// each instance makes its picks before the replicas' pushed loads and announced prompts from the
// others' picks reach it. On the device (docs/performance.md, Session 10 two instances) that left a
// replica idle while the others held 4-6 (full-sample ratio infinite). Real Replica (load with pushed
// counts) and cache_aware policy; the replicas' feeds are the only stand-in: their pushes and pending
// announcements are applied directly, every `lag` decisions (lag >= the burst: none during it).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "router/policy.h"
#include "router/replica.h"

namespace keel::router {
namespace {

constexpr int kReplicas = 4;
constexpr int64_t kKeys = 64;

// kSingle: the single-router defaults on every instance; kRotation: --instance i/n (the default,
// Session 10's second step); kShares: --instance i/n --burst-shares (the third step, off by default).
enum class Mode { kSingle, kRotation, kShares };

struct Instance {
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<Policy> policy;
  std::array<int64_t, kReplicas> own{};     // this instance's requests of the group per replica
  std::array<bool, kReplicas> announced{};  // holders the feeds announced (pending) by the last push
  int64_t announced_arrivals = 0;           // the group's arrivals the feeds announced by the last push
  int64_t own_total = 0;
  int64_t instances = 1;
  Instance(int64_t i, int64_t n, Mode mode) {
    CacheAwareConfig config;
    if (mode != Mode::kSingle) {
      config.instance = i;
      config.instances = n;
      config.burst_shares = mode == Mode::kShares;
      instances = n;
    }
    EXPECT_TRUE(config.validate().ok());
    policy = make_cache_aware(config);
    for (int r = 0; r < kReplicas; ++r) {
      replicas.push_back(std::make_unique<Replica>(
          r + 1, "http://127.0.0.1:1", Endpoint{.host = "127.0.0.1", .port = 1}, ReplicaLabels{}, BreakerConfig{}));
      replicas.back()->set_pushed(0);  // the feeds are up: the replicas pushed 0 in flight before the burst
    }
  }
};

struct Burst {
  std::array<int64_t, kReplicas> fleet{};  // after the burst
  std::array<int64_t, kReplicas> worst{};  // the least balanced state with at least 12 in flight
};

// The fleet's in-flight counts per replica after a burst of `burst` requests of one new group (no
// replica holds it; polled free caches differ a little, the same in every instance) sent to `n`
// instances in turn, none finishing meanwhile (a cold prefill outlasts the burst's arrivals). Every
// `lag` decisions the replicas push their counts and announce the prompts to every instance.
bool within_1_5(const std::array<int64_t, kReplicas>& f);

// `split`: which instance gets each decision, in turn (empty: decision d goes to instance d mod n).
// `finish` >= 0: after the burst the replicas push, that replica finishes one request (of the first
// instance with one there) and pushes, and instance `next` routes the closed loop's replacement; the
// fleet after it is returned in Burst::fleet.
Burst run(int n, int burst, int lag, Mode mode, const std::vector<int>& split = {}, int finish = -1, int next = 0) {
  std::vector<Instance> inst;
  for (int i = 0; i < n; ++i) inst.emplace_back(i, n, mode);
  // Before the burst each instance made its own number of earlier decisions (other groups, long
  // finished): their turns are out of step, as on the device.
  for (int i = 0; i < n; ++i) {
    std::vector<CandidateView> idle(kReplicas);
    for (int k = 0; k < 3 * i + 1; ++k) inst[static_cast<size_t>(i)].policy->pick({.n_keys = kKeys, .group = 7}, idle);
  }
  std::array<int64_t, kReplicas> fleet{};
  Burst out;
  double worst_ratio = 0;
  const std::array<int64_t, kReplicas> free_cache{9000, 9100, 8800, 8950};
  auto decide = [&](Instance& in) {
    std::vector<CandidateView> c;
    for (size_t r = 0; r < kReplicas; ++r) {
      const Replica& rep = *in.replicas[r];
      const bool holds = in.own[r] > 0 || in.announced[r];
      c.push_back({.load = rep.load(in.instances),
                   .work = rep.work.load(),
                   .match = holds ? kKeys : 0,
                   .free_cache = free_cache[r],
                   .id = rep.id,
                   .sent = rep.sent_since_push(),
                   .drained = rep.pushed_fell.load()});
    }
    // As proxy_admit.cc: the larger of this instance's own arrivals (x n when instance-aware) and the
    // arrivals the replicas announced.
    const int64_t recent = std::max(in.instances * in.own_total, in.announced_arrivals);
    const Pick p =
        in.policy->pick({.n_keys = kKeys, .group_in_flight = in.own_total, .group_recent = recent, .group = 0x5eed}, c);
    EXPECT_GE(p.index, 0);
    const auto r = static_cast<size_t>(p.index);
    in.replicas[r]->in_flight.fetch_add(1);
    in.replicas[r]->work.fetch_add(CacheAwareConfig{}.cost(kKeys, c[r].match, 1));
    ++in.own[r];
    ++in.own_total;
    ++fleet[r];
  };
  auto push = [&](int64_t arrivals) {
    for (auto& other : inst) {
      for (size_t k = 0; k < kReplicas; ++k) {
        other.replicas[k]->set_pushed(fleet[k]);
        other.announced[k] = other.announced[k] || fleet[k] > 0;
      }
      other.announced_arrivals = arrivals;
    }
  };
  for (int d = 0; d < burst; ++d) {
    const int who = split.empty() ? d % n : split[static_cast<size_t>(d) % split.size()];
    decide(inst[static_cast<size_t>(who)]);
    if ((d + 1) % lag == 0) push(d + 1);
    // The benchmark's closed loop keeps 12 in flight: its "full" samples are states with 12 or more.
    const auto [lo, hi] = std::minmax_element(fleet.begin(), fleet.end());
    const double ratio = *lo > 0 ? static_cast<double>(*hi) / static_cast<double>(*lo) : 1e9;
    if (d + 1 >= 12 && ratio > worst_ratio) {
      worst_ratio = ratio;
      out.worst = fleet;
    }
  }
  if (finish >= 0) {
    const auto f = static_cast<size_t>(finish);
    push(burst);
    for (auto& in : inst) {
      if (in.own[f] == 0) continue;
      in.replicas[f]->in_flight.fetch_sub(1);
      in.replicas[f]->work.fetch_sub(CacheAwareConfig{}.cost(kKeys, kKeys, 1));
      --in.own[f];
      --fleet[f];
      break;
    }
    push(burst);
    decide(inst[static_cast<size_t>(next)]);
  }
  out.fleet = fleet;
  return out;
}

std::string state(const std::array<int64_t, kReplicas>& f) {
  return std::to_string(f[0]) + " " + std::to_string(f[1]) + " " + std::to_string(f[2]) + " " + std::to_string(f[3]);
}

bool within_1_5(const std::array<int64_t, kReplicas>& f) {
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  return *lo > 0 && 2 * *hi <= 3 * *lo;
}

// Two instances, 12 and 24 requests (the benchmark's closed-loop burst holds 12 at once), the pushes
// arriving after the whole burst or every 4 decisions: with --instance i/2 every state with 12 or more
// in flight is within 1.5x of the least busy; with the single-router defaults on both it is not (the
// same picks stacked: a replica idle, or 2x). One instance is unchanged by construction (1/1 is the
// default); its burst keeps the bound too.
TEST(SimultaneousInstances, InstanceAwarePicksInterleaveAndKeepTheBound) {
  for (int burst : {12, 24}) {
    for (int lag : {4, 1000}) {
      const auto before = run(2, burst, lag, Mode::kSingle).worst;
      const auto after = run(2, burst, lag, Mode::kRotation).worst;
      EXPECT_FALSE(within_1_5(before)) << "burst " << burst << " lag " << lag << ": " << state(before);
      EXPECT_TRUE(within_1_5(after)) << "burst " << burst << " lag " << lag << ": " << state(after);
      int64_t sum = 0;
      for (int64_t v : run(2, burst, lag, Mode::kRotation).fleet) sum += v;
      EXPECT_EQ(sum, burst);
    }
    const auto one = run(1, burst, 1, Mode::kRotation).worst;
    EXPECT_TRUE(within_1_5(one)) << "one instance, burst " << burst << ": " << state(one);
  }
}

// Four instances on four replicas, blind for the whole burst of 12 or 24: their rotations start on
// different replicas, and every state with 12 or more in flight keeps the bound (the defaults stack it).
TEST(SimultaneousInstances, GeneralisesToFourInstances) {
  for (int burst : {12, 24}) {
    const auto before = run(4, burst, 1000, Mode::kSingle).worst;
    const auto after = run(4, burst, 1000, Mode::kRotation).worst;
    EXPECT_FALSE(within_1_5(before)) << "burst " << burst << ": " << state(before);
    EXPECT_TRUE(within_1_5(after)) << "burst " << burst << ": " << state(after);
  }
}

bool within_2(const std::array<int64_t, kReplicas>& f) {
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  return *lo > 0 && *hi <= 2 * *lo;
}

// Burst shares (the third step): with the pushes arriving every few decisions, one push shows one
// instance's latest picks and not the other's, the loads are no longer tied and the rotation alone (the
// second step, the default) sent both instances to the same least busy replica: 3 2 3 4 at a lag
// of 3, the state the device held. Each instance filling its own share keeps every state with 12 or
// more in flight within 1.5x at every lag from 2 to 12 and with no push during the burst, for bursts
// of 12 and 24 on two instances and on four.
TEST(SimultaneousInstances, BurstSharesKeepTheBoundWhateverThePushLag) {
  for (int n : {2, 4}) {
    for (int burst : {12, 24}) {
      for (int lag : {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1000}) {
        const Burst b = run(n, burst, lag, Mode::kShares);
        EXPECT_TRUE(within_1_5(b.worst)) << n << " instances, burst " << burst << " lag " << lag << ": "
                                         << state(b.worst);
        int64_t sum = 0;
        for (int64_t v : b.fleet) sum += v;
        EXPECT_EQ(sum, burst);
      }
      const auto rotation = run(n, burst, 3, Mode::kRotation).worst;
      EXPECT_FALSE(within_1_5(rotation)) << n << " instances, burst " << burst << ": " << state(rotation);
    }
  }
  // Four instances: the rotation also stacks at lags 6 and 7 (3 2 2 5, 5 3 2 2).
  for (int lag : {6, 7}) EXPECT_FALSE(within_1_5(run(4, 12, lag, Mode::kRotation).worst)) << lag;
}

// Where burst shares do not reach 1.5x (stated, not hidden). A push after every decision (no picks
// unseen): the burst's first picks, made before the burst guard, put 3 on one replica of one
// instance's share and the share rule's one-request tolerance then adds a 4th (4 3 3 2; the rotation
// alone ends 3 3 3 3 there). An uneven split (8 and 4 requests of 12 between two instances) leaves
// one share fuller (4 3 2 3, or 4 4 2 2 with no push; the rotation alone: 4 2 3 3 at lag 3, 3 2 4 3
// with none). Both stay within 2x at every lag.
TEST(SimultaneousInstances, BurstSharesStayWithinTwiceOnFreshPushesAndUnevenSplits) {
  for (int burst : {12, 24}) {
    const auto fresh = run(2, burst, 1, Mode::kShares).worst;
    EXPECT_TRUE(within_2(fresh)) << burst << ": " << state(fresh);
  }
  const std::vector<int> split{0, 0, 1};
  for (int lag : {1, 2, 3, 4, 5, 6, 1000}) {
    const auto uneven = run(2, 12, lag, Mode::kShares, split).worst;
    EXPECT_TRUE(within_2(uneven)) << lag << ": " << state(uneven);
  }
  EXPECT_FALSE(within_1_5(run(2, 12, 1000, Mode::kShares, split).worst));
}

// The closed loop after the burst: a request finishes (the replica pushes a lower count) and the
// replacement reaches an instance whose share is not the drained replica's. The gap is real then, so
// the least busy that keeps the bound takes it, whoever's share: back to 3 3 3 3 for every replica and
// either instance (without the drained signal the share's one-request tolerance made 4 3 2 3 or alike).
TEST(SimultaneousInstances, BurstSharesRefillTheDrainedReplica) {
  for (int finish = 0; finish < kReplicas; ++finish) {
    for (int next : {0, 1}) {
      const Burst b = run(2, 12, 1000, Mode::kShares, {}, finish, next);
      EXPECT_EQ(state(b.fleet), "3 3 3 3") << "replica " << finish << " drained, instance " << next;
    }
  }
}

TEST(SimultaneousInstances, InstanceFlagIsParsedAndChecked) {
  CacheAwareConfig c;
  EXPECT_TRUE(c.set_instance("1/2").ok());
  EXPECT_EQ(c.instance, 1);
  EXPECT_EQ(c.instances, 2);
  EXPECT_TRUE(c.validate().ok());
  for (const char* bad : {"2/2", "-1/2", "1/0", "x", "1/", "/2", "1/2x", "0/65", ""}) {
    CacheAwareConfig d;
    EXPECT_FALSE(d.set_instance(bad).ok()) << bad;
    EXPECT_EQ(d.instances, 1) << bad;
  }
  CacheAwareConfig e;
  e.instance = 3;
  e.instances = 2;
  EXPECT_FALSE(e.validate().ok());
}

}  // namespace
}  // namespace keel::router
