// cache_aware on a skewed workload, in virtual time, against a model of sglang-router 0.3.2's
// cache_aware policy and round robin: many prompt groups with Zipf popularity (group g gets a share
// ~ 1/(g+1)^s of the requests), Poisson arrivals, optionally a burst of the hottest group in the middle
// (bench/bench_router_prefix.py --zipf S --mid-burst N). Replicas as in policy_sim_test.cc: FIFO, one
// request at a time, 23 units for a request whose group's prefix the replica does not hold, 1 otherwise;
// no eviction.
//
// The sglang-router model (its src/policies/cache_aware.rs and tree.rs, defaults of its router_args.py
// 0.3.2: cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold 1.5, tree eviction only
// past 2^26 characters per replica): load = the router's in-flight count per replica; when
// max - min > 64 and max > 1.5 x min it sends the request to the least loaded (the first one listed of
// those) and records the prompt there; otherwise to a replica its tree holds the prompt's prefix for
// (the request's system prompt is ~0.9 of its characters, above the 0.3 threshold) — the tree returns
// one tenant of the deepest matched node, modelled as the holder listed first — and with no holder to
// the replica with the fewest characters in its tree (a new group: its ~600-character system prompt;
// every request also adds its ~35-character question).
//
// It predicts where the routers' decisions differ: a hot group with more traffic than one replica
// serves queues on its one holder under sglang-router until the in-flight gap passes 64, and a burst of
// the hot group queues there whole; keel spreads both (cost spills, burst guard) at the price of a few
// more cold prefills. Prediction only: the device replicas batch, this one does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <iostream>
#include <random>
#include <vector>

#include "bench_prompt.h"
#include "router/policy.h"

namespace keel::router {
namespace {

constexpr size_t kReplicas = 4;
constexpr double kCold = 23.0, kWarm = 1.0;
using bench_prompt::kKeys;
using bench_prompt::kShared;

struct Workload {
  int groups = 16;
  int total = 480;
  double zipf = 1.2;
  double rate = 2.0;  // requests per warm unit (one replica serves 1 warm request per unit)
  int mid_burst = 0;  // requests of group 0, 0.09 units (5 ms) apart, from the middle of the schedule
  // The replicas. batched: a replica serves, with its head request, every queued request whose group it
  // has cached, up to kBatch, in kWarm + kBatchStep per extra request; a cold head is prefilled alone and
  // its group cached when it ends, so a follower that arrived during that prefill runs warm in the
  // batch after it (keel serve batches; a model of it, not its step scheduler). Otherwise FIFO, one
  // request at a time (Session 9's model). cache_groups > 0: each replica caches
  // at most that many groups' prefixes, least recently used evicted (--kv-tokens 768 holds ~5 prompts).
  bool batched = false;
  int cache_groups = 0;
};
constexpr size_t kBatch = 16;
constexpr double kBatchStep = 0.1;

enum class Router { kKeel, kSglang, kRoundRobin };

struct SimResult {
  int cold = 0;
  double p50 = 0, p99 = 0;
  int hot_holders = 0;    // replicas group 0 ran on
  int hot_cold = 0;       // cold prefills of group 0 (its first, its copies, its re-prefills after evictions)
  double burst_ratio = 0;  // busiest / least busy in flight after each mid-burst request, least >= 2 (worst)
  int bursts = 0;         // keel: requests its burst guard judged part of a burst (group 0's, others')
  int bursts_hot = 0;
  int64_t max_queue = 0;  // the longest queue any replica had at an arrival
};

struct Arrival {
  double time;
  int group;
  bool mid_burst = false;
};

// Every request's arrival: Zipf-shared groups, shuffled, Poisson, plus the mid burst.
std::vector<Arrival> schedule_of(const Workload& w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> weight(static_cast<size_t>(w.groups));
  double sum = 0;
  for (int g = 0; g < w.groups; ++g) sum += weight[static_cast<size_t>(g)] = 1.0 / std::pow(g + 1, w.zipf);
  std::vector<int> groups;
  for (int g = 0; g < w.groups; ++g) {
    const int n = std::max(1, static_cast<int>(std::lround(w.total * weight[static_cast<size_t>(g)] / sum)));
    groups.insert(groups.end(), static_cast<size_t>(n), g);
  }
  std::shuffle(groups.begin(), groups.end(), rng);
  std::exponential_distribution<double> gap(w.rate);
  std::vector<Arrival> schedule;
  double t = 0;
  for (int g : groups) schedule.push_back({t += gap(rng), g});
  const double mid = schedule[schedule.size() / 2].time;
  for (int i = 0; i < w.mid_burst; ++i) schedule.push_back({mid + 0.09 * i, 0, true});
  std::stable_sort(schedule.begin(), schedule.end(), [](auto& a, auto& b) { return a.time < b.time; });
  return schedule;
}

// The sglang-router model's pick (file comment): in-flight counts, whether each replica was sent group
// gi, and the characters in each replica's tree.
size_t sglang_pick(const std::vector<int64_t>& in_flight, const std::vector<std::vector<bool>>& routed, size_t gi,
                   const std::vector<int64_t>& tree_chars) {
  const auto lo = static_cast<size_t>(std::min_element(in_flight.begin(), in_flight.end()) - in_flight.begin());
  const auto max_load = static_cast<double>(*std::max_element(in_flight.begin(), in_flight.end()));
  const auto min_load = static_cast<double>(in_flight[lo]);
  if (max_load - min_load > 64 && max_load > 1.5 * min_load) return lo;
  for (size_t r = 0; r < routed.size(); ++r) {
    if (routed[r][gi]) return r;
  }
  return static_cast<size_t>(std::min_element(tree_chars.begin(), tree_chars.end()) - tree_chars.begin());
}

// One group's arrival history as the router keeps it: routing times (units), its GroupRate (ms: a warm
// request took 57 ms on the device) and its requests in flight.
struct GroupHistory {
  const std::vector<double>& times;
  GroupRate& rate;
  int64_t in_flight;
};

// keel's pick at time `when` (units); counts the request in `bursts` when the burst guard's bar is met.
size_t keel_pick(Policy& keel, const CacheAwareConfig& cfg, GroupHistory h, double when,
                 const std::vector<CandidateView>& c, int& bursts, uint64_t group) {
  const double window = static_cast<double>(cfg.burst_window_ms) / 57.0;
  const auto recent = std::count_if(h.times.begin(), h.times.end(), [&](double x) { return x >= when - window; });
  const auto now_ms = static_cast<int64_t>(when * 57.0);
  const double expected =
      h.rate.per_ms_before(now_ms, cfg.burst_window_ms, recent) * static_cast<double>(cfg.burst_window_ms);
  const Pick p = keel.pick({.n_keys = kKeys,
                            .group_in_flight = h.in_flight,
                            .group_recent = recent,
                            .group_expected = expected,
                            .group = group},
                           c);
  h.rate.add(now_ms);
  bursts += recent >= cfg.burst_arrivals + static_cast<int64_t>(std::ceil(cfg.burst_rate_factor * expected));
  return static_cast<size_t>(p.index);
}

SimResult simulate(Router router, const Workload& w, uint64_t seed, const CacheAwareConfig& cfg = {}) {
  auto keel = make_cache_aware(cfg);
  auto rr = make_round_robin();
  const auto schedule = schedule_of(w, seed);
  const auto n_groups = static_cast<size_t>(w.groups);
  struct Job {
    int group;
    double arrival;
    int64_t cost;
    bool cold = false;
  };
  std::vector<std::deque<Job>> queue(kReplicas);
  std::vector<std::vector<Job>> running(kReplicas);
  std::vector<double> busy_until(kReplicas, 0.0);
  std::vector<std::vector<bool>> routed(kReplicas, std::vector<bool>(n_groups, false));
  // Per replica and group: last use while cached, -1 = not cached.
  std::vector<std::vector<double>> last_use(kReplicas, std::vector<double>(n_groups, -1.0));
  std::vector<std::vector<bool>> ever(kReplicas, std::vector<bool>(n_groups, false));
  std::vector<int64_t> tree_chars(kReplicas, 0), group_in_flight(n_groups, 0);
  std::vector<std::vector<double>> group_times(n_groups);
  std::vector<GroupRate> group_rate(n_groups);  // as the router keeps it, in ms (57 per unit)
  std::vector<double> latency;
  SimResult out;
  auto is_cached = [&](size_t r, int g) { return last_use[r][static_cast<size_t>(g)] >= 0; };
  auto n_cached = [&](size_t r) {
    return std::count_if(last_use[r].begin(), last_use[r].end(), [](double t) { return t >= 0; });
  };
  auto store = [&](size_t r, int g, double now) {
    if (!is_cached(r, g) && w.cache_groups > 0 && n_cached(r) >= w.cache_groups) {
      size_t lru = n_groups;
      for (size_t k = 0; k < n_groups; ++k) {
        if (last_use[r][k] >= 0 && (lru == n_groups || last_use[r][k] < last_use[r][lru])) lru = k;
      }
      last_use[r][lru] = -1.0;
    }
    last_use[r][static_cast<size_t>(g)] = now;
    ever[r][static_cast<size_t>(g)] = true;
  };
  auto start = [&](size_t r, double now) {
    if (queue[r].empty()) return;
    Job head = queue[r].front();
    if (!is_cached(r, head.group)) {  // a cold prefill, alone
      queue[r].pop_front();
      head.cold = true;
      ++out.cold;
      out.hot_cold += head.group == 0;
      running[r].push_back(head);
      busy_until[r] = now + kCold;
      return;
    }
    const size_t batch = w.batched ? kBatch : 1;
    for (auto it = queue[r].begin(); it != queue[r].end() && running[r].size() < batch;) {
      if (is_cached(r, it->group)) {
        last_use[r][static_cast<size_t>(it->group)] = now;
        running[r].push_back(*it);
        it = queue[r].erase(it);
      } else {
        ++it;
      }
    }
    busy_until[r] = now + kWarm + kBatchStep * static_cast<double>(running[r].size() - 1);
  };
  auto finish_until = [&](double until) {
    for (;;) {
      size_t r = kReplicas;
      for (size_t i = 0; i < kReplicas; ++i) {
        if (!running[i].empty() && busy_until[i] <= until && (r == kReplicas || busy_until[i] < busy_until[r])) r = i;
      }
      if (r == kReplicas) return;
      const double now = busy_until[r];
      for (const Job& j : running[r]) {
        latency.push_back(now - j.arrival);
        --group_in_flight[static_cast<size_t>(j.group)];
        if (j.cold) store(r, j.group, now);
      }
      running[r].clear();
      start(r, now);
    }
  };
  int mid_seen = 0;
  for (const auto& [when, g, in_mid_burst] : schedule) {
    finish_until(when);
    const auto gi = static_cast<size_t>(g);
    std::vector<CandidateView> c;
    std::vector<int64_t> in_flight;
    for (size_t r = 0; r < kReplicas; ++r) {
      const auto n = static_cast<int64_t>(queue[r].size() + running[r].size());
      in_flight.push_back(n);
      int64_t work = 0;
      bool queued = false;
      auto add = [&, group = g](const Job& j) {  // clang before 16 cannot capture a structured binding
        work += j.cost;
        queued = queued || j.group == group;
      };
      std::for_each(queue[r].begin(), queue[r].end(), add);
      std::for_each(running[r].begin(), running[r].end(), add);
      out.max_queue = std::max(out.max_queue, n);
      // keel's exact index: what the replica caches now, or a prompt of the group in flight there.
      const bool stored = is_cached(r, g);
      const int64_t cap = w.cache_groups > 0 ? w.cache_groups : 25;
      c.push_back(
          {.load = n, .work = work, .match = stored || queued ? kShared : 0, .free_cache = 160 * (cap - n_cached(r))});
    }
    size_t r = 0;
    if (router == Router::kSglang) {
      r = sglang_pick(in_flight, routed, gi, tree_chars);
    } else if (router == Router::kRoundRobin) {
      r = static_cast<size_t>(rr->pick({}, c).index);
    } else {
      r = keel_pick(*keel, cfg, {.times = group_times[gi], .rate = group_rate[gi], .in_flight = group_in_flight[gi]},
                    when, c, g == 0 ? out.bursts_hot : out.bursts, gi + 1);
    }
    tree_chars[r] += (routed[r][gi] ? 0 : 600) + 35;
    queue[r].push_back({g, when, cfg.cost(kKeys, c[r].match, 1)});
    routed[r][gi] = true;
    ++group_in_flight[gi];
    group_times[gi].push_back(when);
    if (running[r].empty()) start(r, when);
    // Balance during the mid-way burst, once it has filled the fleet (from its 8th request on).
    if (in_mid_burst) {
      if (++mid_seen >= 8) {
        std::vector<int64_t> now_in_flight;
        for (size_t k = 0; k < kReplicas; ++k)
          now_in_flight.push_back(static_cast<int64_t>(queue[k].size() + running[k].size()));
        const auto [lo, hi] = std::minmax_element(now_in_flight.begin(), now_in_flight.end());
        if (*lo >= 2) out.burst_ratio = std::max(out.burst_ratio, static_cast<double>(*hi) / static_cast<double>(*lo));
      }
    }
  }
  finish_until(1e18);
  for (size_t r = 0; r < kReplicas; ++r) out.hot_holders += ever[r][0];
  std::sort(latency.begin(), latency.end());
  out.p50 = latency[latency.size() / 2];
  out.p99 = latency[latency.size() * 99 / 100];
  return out;
}

struct Totals {
  double cold = 0, p50 = 0, p99 = 0, hot_holders = 0, max_queue = 0, bursts = 0, bursts_hot = 0, hot_cold = 0;
  double burst_ratio = 0;  // the worst over the seeds
};

Totals over_seeds(Router router, const Workload& w, const char* name, const CacheAwareConfig& cfg = {}) {
  Totals tot;
  constexpr int kSeeds = 20;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SimResult r = simulate(router, w, seed, cfg);
    EXPECT_GE(r.cold, w.groups) << name << " seed " << seed;  // the floor: one cold prefill per group
    tot.hot_cold += r.hot_cold / double{kSeeds};
    tot.burst_ratio = std::max(tot.burst_ratio, r.burst_ratio);
    tot.cold += r.cold / double{kSeeds};
    tot.p50 += r.p50 / kSeeds;
    tot.p99 += r.p99 / kSeeds;
    tot.hot_holders += r.hot_holders / double{kSeeds};
    tot.max_queue += static_cast<double>(r.max_queue) / kSeeds;
    tot.bursts += r.bursts / double{kSeeds};
    tot.bursts_hot += r.bursts_hot / double{kSeeds};
  }
  std::cout << name << " (zipf " << w.zipf << ", rate " << w.rate << ", mid burst " << w.mid_burst
            << (w.batched ? ", batched" : "") << ", cache groups " << w.cache_groups << "): cold " << tot.cold
            << " (hot " << tot.hot_cold << "), p50 " << tot.p50 << ", p99 " << tot.p99 << " units, hot group on "
            << tot.hot_holders << " replicas, longest queue " << tot.max_queue << ", burst-guard requests "
            << tot.bursts_hot << " hot / " << tot.bursts << " other, mid-burst busiest/least (least >= 2) "
            << tot.burst_ratio << "\n";
  return tot;
}

// The device run's shape (docs/performance.md, Session 9: 16 groups, zipf 1.2, 480 Poisson requests
// plus 24 of the hottest group mid-way; the hot group has 36 % of the requests and fits on one replica
// between bursts). The sglang-router model keeps every group on one replica and the burst whole on the
// hot group's holder; keel spreads the hot group over the fleet (cost spills while its holder
// prefills, the burst guard) and pays for it in cold prefills — the trade the device run showed
// (hit rate 0.854-0.857 against 0.863; the burst on one replica set sglang-router's TTFT p99). The
// model's TTFT is printed, not asserted: with cold = 23 warm and no batching the start's cold prefills
// dominate its tail (it ranks keel's p99 behind, the device ranked it ahead).
TEST(CacheAwareSkewSim, TheHotGroupStaysOnOneReplicaUnderTheSglangModelAndSpreadsUnderKeel) {
  const Workload w{.zipf = 1.2, .rate = 1.6, .mid_burst = 24};
  Totals keel = over_seeds(Router::kKeel, w, "keel cache_aware");
  Totals sglang = over_seeds(Router::kSglang, w, "sglang-router model");
  Totals rr = over_seeds(Router::kRoundRobin, w, "round_robin");
  EXPECT_LT(sglang.hot_holders, 1.5);
  EXPECT_GE(sglang.max_queue, 24.0);  // the burst queued whole on one replica
  EXPECT_GT(keel.hot_holders, 2.5);
  EXPECT_LT(keel.max_queue, sglang.max_queue);
  EXPECT_GT(keel.cold, sglang.cold);  // the price of spreading: the copies' prefills
  EXPECT_LT(keel.cold, sglang.cold + 12);
  EXPECT_LT(keel.cold, rr.cold / 2);  // still cache-aware: round robin prefills far more cold
}

// Session 9, second round: the burst bar relative to the group's own rate (--burst-rate-factor 3)
// against the absolute bar (0, the default). The guard no longer fires on Poisson clumps: the hot group's
// burst-guard requests drop to about the mid-way burst's own (24 less the bar), other groups' to ~0.
// Cold prefills: with spill_slack 48 (the slack never binds) the hot group stays on fewer replicas and
// the cold prefills drop (21.9 against 22.3 per run). With the default slack 12 they rise (27.4 against
// 24.0): this model's replicas serve one request at a time, so the hot group's holder queues pass the
// count cap + 12 and other groups sharing it spill (8.8 copies of other groups against 5.0); the device's
// replicas batch, and there the slack did not bind (0-1 spills a run, Session 8). Printed and asserted
// as they are. On the device the relative bar lost (more cold prefills, worse TTFT p99, both runs: the
// hot group was still copied early, by cost spills, not by the guard), so the default stayed 0.
TEST(CacheAwareSkewSim, TheRelativeBurstBarStopsFiringOnClumps) {
  const Workload w{.zipf = 1.2, .rate = 1.6, .mid_burst = 24};
  Totals rel = over_seeds(Router::kKeel, w, "keel, relative burst bar", {.burst_rate_factor = 3});
  Totals abs = over_seeds(Router::kKeel, w, "keel, absolute burst bar (default)", {});
  EXPECT_LT(rel.bursts_hot, abs.bursts_hot - 10);
  EXPECT_GE(rel.bursts_hot, 24 - 8);  // the mid-way burst is still seen (all but its first bar requests)
  EXPECT_LT(rel.bursts, 0.5);
  EXPECT_GT(abs.bursts, 0.5);
  EXPECT_GT(rel.cold, abs.cold);  // the unbatched queues pass the slack (above)
  Totals rel_slack =
      over_seeds(Router::kKeel, w, "keel, relative bar, slack 48", {.spill_slack = 48, .burst_rate_factor = 3});
  Totals abs_slack = over_seeds(Router::kKeel, w, "keel, absolute bar, slack 48", {.spill_slack = 48});
  EXPECT_LT(rel_slack.cold, abs_slack.cold);
  // 3.05 against 3.95 before Session 10 stored a prefix at the end of its prefill (not its start) and
  // took free cache from the cached groups; 3.3 against 3.75 since.
  EXPECT_LT(rel_slack.hot_holders, abs_slack.hot_holders - 0.3);
}

// Batching replicas at about the device's load (rate 0.8), without and with cache pressure (5 groups per
// replica, LRU): keel's rules make more cold prefills than the sglang-router model (the mid-way burst's
// copies of the hot group, which ends on all 4 replicas) and keep the burst's queues bounded, where the
// sglang model queues the burst on the hot group's one holder (longest queue above 20). Session 10's
// few-holders rules, compared here before, cut the model's cold prefills but not the device's and were
// removed in Session 11 (docs/performance.md).
TEST(CacheAwareSkewSim, BatchingReplicasSpreadTheBurstAtTheCostOfCopies) {
  for (int cache_groups : {0, 5}) {
    const Workload w{.zipf = 1.2, .rate = 0.8, .mid_burst = 24, .batched = true, .cache_groups = cache_groups};
    Totals keel = over_seeds(Router::kKeel, w, "keel");
    Totals sglang = over_seeds(Router::kSglang, w, "sglang-router model");
    EXPECT_GT(keel.cold, sglang.cold + 3) << cache_groups;  // the burst's copies of the hot group remain
    EXPECT_GT(keel.hot_holders, 3.5) << cache_groups;
    EXPECT_LE(keel.burst_ratio, 3.0) << cache_groups;   // bounded
    EXPECT_GT(sglang.max_queue, 20.0) << cache_groups;  // the sglang model queues the burst on one replica
    EXPECT_LT(keel.max_queue, sglang.max_queue - 5) << cache_groups;
  }
}

}  // namespace
}  // namespace keel::router
