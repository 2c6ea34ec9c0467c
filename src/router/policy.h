// Routing policies: pick one replica among the candidates the proxy has already filtered (healthy,
// not draining, breaker closed or probing, in the tenant's pool). Policies see plain numbers only, so
// each is a pure function of its inputs plus its own counter/RNG and is unit-tested without sockets.
// pick() may run concurrently on every io thread.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"

namespace keel::router {

struct CandidateView {
  int64_t load = 0;        // router's in-flight count + traffic the replica reports that the router did not send
  int64_t work = 0;        // router's work in flight there: the summed cost (tokens) of its requests (below)
  int64_t match = 0;       // leading prefix keys of this request the replica holds
  int64_t free_cache = 0;  // free KV slots if known, else minus the index entries we hold for it
  bool remote = false;     // not in the request's region
  bool can_pull = false;   // may copy the prefix's KV from another replica (RouteRequest::pull_match)
};

struct RouteRequest {
  int64_t n_keys = 0;           // prefix keys of the prompt (tokens or character blocks)
  int64_t tokens_per_key = 1;   // tokens one key stands for (1 for token keys, estimated for character blocks)
  int64_t group_in_flight = 0;  // requests of this prompt's group (its first kGroupTokens) in flight, before it
  int64_t group_recent = 0;     // requests of this prompt's group routed in the last burst_window_ms, before it
  // Arrivals of this group that its own rate (GroupRate, measured before the window) predicts within
  // burst_window_ms: the burst guard's bar rises with it (CacheAwareConfig::burst_rate_factor).
  double group_expected = 0;
  // ms since the group's previous arrival at any instance (its own or a peer's route event); 0 when
  // unknown (CacheAwareConfig::near_burst_window_ms).
  int64_t group_gap_ms = 0;
  uint64_t random = 0;  // fresh random bits for this decision
  uint64_t group = 0;   // the prompt group's key (its first kGroupTokens), 0 = none: starts the instances' tie rotation
  // Every peer instance's decisions are in the loads and work (keel router --peer, all feeds live): no
  // --instance estimate; ties among several instances split by nth_tied (policy_cache_aware.cc).
  bool synced = false;
  // KV pulls (docs/router.md "KV pulls"): the longest match among the replicas that can export, when
  // pulls are on. A candidate with can_pull gets the prompt's prefix up to it by a transfer, so its
  // cost counts from there plus the transfer (CacheAwareConfig::kv_pull_cost).
  int64_t pull_match = 0;
};

// kWarmQueue: the best match was over the request-count bound and took the request by the work rule
// (or, with spill_factor > 0, because a spill would cost more than queueing there).
// kGroupAffinity: it was over the bound and took it because its prompt group has few requests in flight.
enum class Decision {
  kRoundRobin,
  kRandom,
  kPowerOfTwo,
  kCacheHit,
  kImbalance,
  kFreeCache,
  kWarmQueue,
  kGroupAffinity
};
std::string_view decision_name(Decision d);
inline constexpr int kNumDecisions = 8;

// A prompt's group: the prefix key covering its first kGroupTokens tokens (the start of a shared system
// prompt), used to count a group's requests in flight for CacheAwareConfig::group_affinity.
inline constexpr int64_t kGroupTokens = 32;
// Most recent routing times kept per group for RouteRequest::group_recent (bounds burst_arrivals and
// the burst guard's bar).
inline constexpr int64_t kMaxBurstArrivals = 64;

// The newest kMaxBurstArrivals routing times (ms, monotonic) of one prompt group.
class RecentArrivals {
 public:
  void add(int64_t now_ms) { ms_[static_cast<size_t>(n_++ % kMaxBurstArrivals)] = now_ms; }
  // How many of the kept times are at or after since_ms.
  int64_t since(int64_t since_ms) const {
    int64_t k = 0;
    for (int64_t i = 0; i < std::min<int64_t>(n_, kMaxBurstArrivals); ++i) k += ms_[static_cast<size_t>(i)] >= since_ms;
    return k;
  }

 private:
  std::array<int64_t, kMaxBurstArrivals> ms_{};
  int64_t n_ = 0;
};

// A prompt group's own arrival rate: an exponentially decayed count of its routing times (time
// constant kGroupRateMemoryMs). per_ms_before() leaves out the `recent` arrivals of the burst window, so
// a burst does not raise its own bar, and divides by the decayed span of the older ones (at least
// kGroupRateMinSpanMs, so two early arrivals a few ms apart do not read as a high rate).
inline constexpr double kGroupRateMemoryMs = 10000;
inline constexpr double kGroupRateMinSpanMs = 1000;
class GroupRate {
 public:
  void add(int64_t now_ms) {
    decayed_ = at(now_ms) + 1;
    if (n_++ == 0) first_ms_ = now_ms;
    last_ms_ = now_ms;
  }
  double per_ms_before(int64_t now_ms, int64_t window_ms, int64_t recent) const {
    const double older = at(now_ms) - static_cast<double>(recent);
    const auto span = static_cast<double>(now_ms - window_ms - first_ms_);
    if (n_ == 0 || older < 0.5 || span <= 0) return 0;
    return older / (kGroupRateMemoryMs * (1 - std::exp(-std::max(span, kGroupRateMinSpanMs) / kGroupRateMemoryMs)));
  }
  int64_t last_ms() const { return last_ms_; }

 private:
  double at(int64_t now_ms) const {
    return n_ == 0 ? 0 : decayed_ * std::exp(-static_cast<double>(now_ms - last_ms_) / kGroupRateMemoryMs);
  }
  double decayed_ = 0;
  int64_t first_ms_ = 0, last_ms_ = 0, n_ = 0;
};

struct Pick {
  int32_t index = -1;  // into the candidates; -1 only when there were none
  Decision decision = Decision::kRoundRobin;
};

struct CacheAwareConfig {
  // After a decision no replica may hold more than max(max(lo, 1) + abs, rel x lo) requests, lo the
  // least busy candidate's count (policy_cache_aware.cc).
  int64_t balance_abs_threshold = 1;
  double balance_rel_threshold = 1.5;
  // While a candidate stays idle after the decision, a replica may hold up to this many (if more than
  // the cap above allows at lo = 0): queueing on a prefix holder beats a cold prefill elsewhere when
  // there is spare capacity; the idle replicas still get the next requests that no holder can take.
  int64_t balance_idle_cap = 2;
  double min_match_ratio = 0.25;  // matched keys / prompt keys below this: no useful match
  int64_t remote_penalty = 8;     // load added to replicas outside the request's region
  // Work in flight (policy_cache_aware.cc, "work rule"). A request's cost on a replica is its uncached
  // prompt tokens there plus work_request_tokens (decode and per-request overhead). A replica the
  // count bound refuses may still take the request when its cost there is at most half the cheapest
  // cost on the replicas the bound allows (they would prefill again what it holds), the request would
  // finish there within max(rel x, + balance_abs_work) of its earliest finish among the allowed
  // replicas (work in flight + cost, rel = balance_rel_threshold), and the replica then holds at most
  // balance_work_slack requests more than the count bound allows. balance_work_slack = 0 turns the
  // rule off (the count bound alone).
  int64_t work_request_tokens = 16;
  int64_t balance_abs_work = 0;
  int64_t balance_work_slack = 0;
  // Group affinity (0 = off): while a prompt group has fewer than this many requests in flight (this
  // one would be at most the N-th), its request goes to the best-matching replica whatever the count
  // bound, as peer routers do; from the N+1-th on (a burst of one prefix) the bound applies as usual.
  int64_t group_affinity = 0;
  // Equal-match set and cost spills (spill_factor = F > 0, the default; 0 = the count bound with the
  // idle cap, work rule and group affinity above, which are consulted only then). Replicas
  // whose uncached tokens for the request are within max(equal_match_tokens, equal_match_ratio x prompt
  // tokens) of the best are equivalent holders; the one with the least work in flight (then requests)
  // among those the count bound allows takes it. When the count bound allows none of them, the least
  // busy holder h still takes it unless the request is part of a burst (at least burst_arrivals of its
  // group routed in the last burst_window_ms) or h's work ahead exceeds F x (the extra uncached work
  // the request costs on the spill target a, plus a's work ahead), or h would then hold more than
  // spill_slack requests over the count cap; otherwise it spills to a, the allowed replica where it
  // would finish first (work in flight + cost). policy_cache_aware.cc has the reasoning.
  double spill_factor = 3;
  int64_t equal_match_tokens = 8;
  double equal_match_ratio = 0.05;
  int64_t spill_slack = 12;
  int64_t burst_window_ms = 100;
  int64_t burst_arrivals = 3;
  // ... and only while the group holds at least this share of the in-scope requests in flight (before
  // this one): a hot prefix's burst fills the fleet, while a Poisson clump of one group among several
  // (three within the window at a few requests per second) is a small share. 0 = any share (the
  // default; 1/3 wins in the simulation but was not better on the device, docs/router.md).
  double burst_share = 0;
  // The bar rises with the group's own rate: a burst needs at least burst_arrivals + ceil(burst_rate_factor
  // x the arrivals its own rate predicts in the window) (RouteRequest::group_expected), so a hot group's
  // ordinary Poisson clumps (3 within 100 ms at 7 requests/s) are no burst; a new or quiet group keeps
  // the bar of burst_arrivals. 0 = the absolute bar (the default: 3 made more cold prefills and a worse
  // TTFT p99 than 0 in both device runs of Session 9's second round, docs/performance.md).
  double burst_rate_factor = 0;
  // The near-burst rule of peer-synced instances (policy_cache_aware.cc: no warm queue past the count
  // bound while the other instances' possible unseen arrivals would reach the burst guard's bar) counts
  // those arrivals only while the group's previous arrival is at most this many ms old
  // (RouteRequest::group_gap_ms): another instance can be deciding on the same view only within the
  // feeds' lag (0-0.07 ms on the device since Session 12), while a hot group's Poisson pairs, which
  // the rule turned into cold copies, come 10+ ms apart. 0 = always (the default, Session 11's rule;
  // a window is not measured on the device yet, docs/performance.md Session 12).
  int64_t near_burst_window_ms = 0;
  // Several router instances (--instance i/n: this is instance `instance` of `instances`, each behind a
  // round-robin balancer on the same replicas). Their decisions in one burst are made within the
  // milliseconds before the replicas' pushed loads reach the others, on the same cache view, so with
  // the same tie-breaks they make the same picks and stack them (docs/router.md, load signal). With
  // instances = n > 1: a request this instance sent since the replica's last push counts n times
  // (the other instances are assumed to have sent as many meanwhile; Replica::load), the group's
  // arrivals this instance saw count n times in the burst guard (it sees 1/n of them), and ties
  // (equal work, load and match; free cache within 1/2) go to the replicas in a rotation started at
  // instance x replicas / n, so the instances' simultaneous picks interleave. 1/1: the single router.
  int64_t instance = 0;
  int64_t instances = 1;
  // Cost of a pulled token, as a share of a prefilled one (0 = the policy ignores pulls: a replica
  // without the prefix costs a whole prefill even where a pull would spare it).
  double kv_pull_cost = 0;

  Status validate() const;
  // Sets instance and instances from "i/n" (0 <= i < n).
  Status set_instance(std::string_view text);
  // Cost (tokens) of a request of n_keys keys on a replica holding `match` of them.
  int64_t cost(int64_t n_keys, int64_t match, int64_t tokens_per_key) const;
  // The same on a replica that pulls up to pull_match keys first (pull_match > match, kv_pull_cost > 0).
  int64_t cost_with_pull(int64_t n_keys, int64_t match, int64_t pull_match, int64_t tokens_per_key) const;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual bool uses_prefix() const { return false; }
  virtual Pick pick(const RouteRequest& req, std::span<const CandidateView> candidates) = 0;
};

// "round_robin", "random", "power_of_two", "cache_aware".
Result<std::unique_ptr<Policy>> make_policy(std::string_view name, const CacheAwareConfig& cache_aware);

std::unique_ptr<Policy> make_round_robin();
std::unique_ptr<Policy> make_random();
std::unique_ptr<Policy> make_power_of_two();
std::unique_ptr<Policy> make_cache_aware(CacheAwareConfig config);

}  // namespace keel::router
