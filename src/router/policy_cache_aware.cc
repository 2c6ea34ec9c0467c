// cache_aware: the replica holding the longest prefix of the prompt, among those that keep the
// balance bound after taking this request. Load is the router's own in-flight count (read and bumped
// under the decision lock, so never stale) plus the traffic a replica reports that the router did not
// send (never below 0; a lagging poll can add to the fresh count, not hide it).
//
// Bound: with lo = the least in-flight of any candidate, every candidate may hold at most
//   cap(lo) = max(max(lo, 1) + balance_abs_threshold, floor(balance_rel_threshold x lo)).
// A candidate is eligible when the state AFTER it takes the request stays within cap of the new least
// busy: judging the post-decision state (not the candidate's current load against a margin) is what
// makes the bound hold at every decision, and it also repairs a state that completions pushed over it
// (only the drained replica is eligible then). max(lo, 1) lets a holder take a second request while
// some replica is idle: that replica gets its first before it can be "least busy" in a burst. With the
// defaults (1, 1.5) the busiest holds at most max(lo + 1, 1.5 lo) whenever every replica is busy.
// balance_idle_cap raises the cap while a replica stays idle after the decision (lo_after = 0): a
// prefix holder then queues up to that many before a spill, since with spare capacity a queue on a
// cached prefix is cheaper than a cold prefill; once every replica is busy the bound above applies.
// Outside the request's region a candidate's own load counts remote_penalty more, and the bound is
// taken over the local candidates when there are any.
//
// Among eligible candidates the longest match wins (ties: lower load), so a hot prefix whose holder is
// full goes to the next-best-matching replica (which then caches it too), not to the globally least
// loaded; with no useful match (below min_match_ratio of the prompt) the eligible replica with the
// most free cache wins (the replica's polled free slots less what the router sent it since that poll,
// replica.h), then the lower load; candidates still tied take turns (a rotating start), so new
// prefixes arriving one by one spread over equally free, equally idle replicas instead of all going to
// the first one listed. When no candidate keeps the bound, the least loaded ones are eligible.
//
// Work rule (besides the count bound). Requests differ in cost: a prompt whose prefix a replica holds
// costs its few uncached tokens there, a cold one its whole prompt (on the test bed a cold prefill
// took as long as ~23 warm requests). The count bound alone sends a follower of a prefix that its
// holder is still prefilling to another replica as soon as the holder has two requests, and that
// spill is itself a cold prefill. So a candidate the count bound refuses is also eligible when
//   - it costs at most half the cheapest cost among the candidates the bound allows (it holds a
//     prefix they would prefill again; with equal or nearly equal costs everywhere, e.g. a burst of
//     one prefix every replica holds, whose prompts differ in a token or two, the rule never applies
//     and the count bound decides alone),
//   - the request would finish there within max(rel x, + balance_abs_work) of its earliest finish
//     (work in flight + cost) among the allowed candidates, and
//   - it then holds at most balance_work_slack requests more than the count bound allows (a burst's
//     ramp from idle then still ends balanced: 12 requests on 4 replicas end at 3 each with slack 1).
// Costs are tokens (uncached prompt tokens + work_request_tokens); work in flight is the router's own
// sum of its requests' costs at dispatch, taken off at completion.
//
// Group affinity (group_affinity = N > 0): while the request's prompt group (the prefix key of its first
// kGroupTokens tokens) has fewer than N requests in flight, every in-scope candidate is eligible, so the
// longest useful match wins whatever the count bound: the followers a cold prefill collects at low
// load queue on their holder, as with peer routers. A burst of one prefix has N in flight after its
// first N requests, and from then on the bound decides: with N = 3 a burst of 12 on 4 idle replicas
// ends at 3 each. A request without a useful match still goes to the most free cache within the bound.
//
// Equal-match set and cost spills (spill_factor = F > 0, the default F = 3; then none of the rules
// above but the count bound itself is consulted for a request with a useful match). Two facts drive it. (1) Replicas
// that hold a prompt's prefix are interchangeable when their matches differ by a token or two (a burst's "Hot 1?" and
// "Hot 13?" differ in a digit token): the best-match-then-load order gave the replica with one more token the request
// up to the cap; the equal-match set (uncached tokens within max(equal_match_tokens, equal_match_ratio
// x prompt) of the best) takes the least busy holder (work in flight, then requests) that the count
// bound allows, so a burst over replicas that all hold the prefix spreads as evenly as the bound alone.
// (2) When the count bound allows no holder, a spill is a cold prefill, ~23 warm requests of time on
// the test bed: worth it only when the least busy holder h is so busy that waiting there costs more.
// In work units: spill iff  work(h) > F x (cost(a) - cost(h) + work(a)),  a = the allowed replica where
// the request would finish first. F = 1 is "spill when it finishes earlier elsewhere"; F > 1 also
// charges the spill for the copy's prefill, which the fleet pays in capacity (and which starts the
// next spills: Session 5 in docs/performance.md). Guards, so that affinity cannot starve balance:
//   - burst: a request with burst_arrivals or more of its group routed in the last burst_window_ms is
//     part of a burst, and the count bound alone decides (a burst of 12 from idle ends 3 each; a
//     Poisson group's followers, which trickle in while the holder prefills, may queue there); with
//     burst_share > 0 the group must also hold that share of the requests in flight, so a Poisson
//     clump of one group among many at high load is not spilled as a burst (off by default: on the
//     device test bed it changed no decision, docs/performance.md Session 8); with burst_rate_factor
//     k > 0 the bar is burst_arrivals + ceil(k x the arrivals the group's own rate predicts in the
//     window), so a hot group's Poisson clumps are no burst (off by default: on the device it made
//     more cold prefills, not fewer, docs/performance.md Session 9 second round);
//   - spill_slack: h holds at most that many requests over the count cap;
//   - the cost test itself: h's queue grows by every request it takes, so a hot prefix held by one
//     replica spills once h's work passes F x (the extra prefill + a's work); a's copy then makes a an
//     equal holder, and the least busy holder takes the next request (CacheAwareCost.*).
// Several instances (instance i of n > 1, CacheAwareConfig::instances): ties among holders, spill targets and
// free-cache picks go to the replicas in a rotation started at i x replicas / n, and free caches within 1/2 tie,
// so the instances' simultaneous burst picks (made before any push reaches the others) interleave instead of
// stacking on the same replicas; the load counts each request sent since the last push n times and the burst
// guard this instance's arrivals n times (proxy_admit.cc).
// Peer sync (RouteRequest::synced: every --peer feed live, so the loads and work hold every instance's decisions
// up to the feeds' lag of a decision or two): instances deciding within that lag still see the same view, so among
// the k candidates tied for a pick (equal holders by work and load, in a burst by load alone; spill targets;
// free-cache picks), listed in the group's rotation (from the group's hash: the same list on every instance),
// instance i of n takes the one at i x (k - 1) / (n - 1) (two instances: the two ends, so one of them may decide
// twice before it sees the other's pick without meeting it; the (i mod k)-th did meet it, 3 3 4 2 on the device).
// The rotation offset by i x replicas / n used without sync sends two instances to the same replica whenever both
// offsets precede the same tied candidate (k = 2 of 4); the i-th of the tied list never does while k >= n. And no
// warm queue past the count bound while the other instances' unseen arrivals could make it a burst (near_burst;
// with near_burst_window_ms, only while the group's previous arrival is that young).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "base/counter_rng.h"
#include "router/policy.h"

namespace keel::router {
namespace {

class CacheAware final : public Policy {
 public:
  explicit CacheAware(CacheAwareConfig config) : config_(config) {}
  std::string_view name() const override { return "cache_aware"; }
  bool uses_prefix() const override { return true; }

  Pick pick(const RouteRequest& req, std::span<const CandidateView> c) override {
    if (c.empty()) return {};
    // The bound is over the replicas that compete on equal terms: the local ones when there are any
    // (an idle remote replica must not pin the least load at 0). Raw loads, i.e. real requests; the
    // region penalty only enters a remote candidate's own load.
    const bool scoped = std::any_of(c.begin(), c.end(), [](const CandidateView& v) { return !v.remote; });
    auto in_scope = [&](const CandidateView& v) { return !scoped || !v.remote; };
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0, n_lo = 0, total = 0, n_scope = 0;
    for (const auto& v : c) {
      if (!in_scope(v)) continue;
      total += v.load;
      ++n_scope;
      if (v.load < lo) {
        lo = v.load;
        n_lo = 0;
      }
      if (v.load == lo) ++n_lo;
      hi = std::max(hi, v.load);
    }
    int64_t second = std::numeric_limits<int64_t>::max();
    for (const auto& v : c) {
      if (in_scope(v) && v.load > lo) second = std::min(second, v.load);
    }
    // Idle relaxation: while the fleet has spare capacity after the decision (an in-scope replica
    // still idle, and no more requests in flight than replicas), the cap is balance_idle_cap.
    const bool relaxing = config_.balance_idle_cap > cap(0);
    // The least busy in-scope load once v (in scope) takes the request.
    auto lo_after = [&](const CandidateView& v) { return v.load == lo && n_lo == 1 ? std::min(lo + 1, second) : lo; };
    auto keeps_bound = [&](const CandidateView& v) {
      const int64_t after = effective_load(v) + 1;
      if (!in_scope(v)) return after <= cap(lo);
      const bool spare = relaxing && lo_after(v) == 0 && total + 1 <= n_scope;
      return std::max(hi, after) <= (spare ? config_.balance_idle_cap : cap(lo_after(v)));
    };
    bool any = false;
    for (const auto& v : c) any = any || keeps_bound(v);
    int64_t min_eff = std::numeric_limits<int64_t>::max();
    for (const auto& v : c) min_eff = std::min(min_eff, effective_load(v));
    // When no choice keeps the bound (completions drained the least busy, a work-rule pick holds one
    // more than the cap, or remote-only headroom), the least loaded candidates are the only ones that
    // move toward it.
    auto within_bound = [&](const CandidateView& v) { return any ? keeps_bound(v) : effective_load(v) == min_eff; };
    auto cost = [&](const CandidateView& v) {
      return v.can_pull ? config_.cost_with_pull(req.n_keys, v.match, req.pull_match, req.tokens_per_key)
                        : config_.cost(req.n_keys, v.match, req.tokens_per_key);
    };
    if (config_.spill_factor > 0) {
      auto holder_room = [&](const CandidateView& v) { return cap(lo_after(v)) + config_.spill_slack - v.load; };
      if (auto p = by_cost(req, c, cost, within_bound, in_scope, holder_room, total)) return *p;
    }
    // Work rule: the cheapest cost and the earliest finish among the candidates the count bound allows.
    int64_t ok_cost = std::numeric_limits<int64_t>::max(), ok_finish = std::numeric_limits<int64_t>::max();
    for (const auto& v : c) {
      if (!within_bound(v)) continue;
      ok_cost = std::min(ok_cost, cost(v));
      ok_finish = std::min(ok_finish, v.work + cost(v));
    }
    auto work_ok = [&](const CandidateView& v) {
      if (config_.balance_work_slack == 0 || !in_scope(v) || within_bound(v)) return false;
      const int64_t here = cost(v);
      if (2 * here > ok_cost) return false;  // saves at least half: a prefill, not a token or two
      const double finish = static_cast<double>(v.work + here);
      const double limit = std::max(config_.balance_rel_threshold * static_cast<double>(ok_finish),
                                    static_cast<double>(ok_finish + config_.balance_abs_work));
      if (finish > limit) return false;
      return v.load + 1 <= cap(lo_after(v)) + config_.balance_work_slack;
    };
    // Group affinity: a group with few requests in flight is no burst; its holder may queue them.
    const bool affinity = req.group_in_flight < config_.group_affinity;
    auto eligible = [&](const CandidateView& v) { return within_bound(v) || work_ok(v) || (affinity && in_scope(v)); };
    int32_t best = -1, best_any = -1;
    for (size_t i = 0; i < c.size(); ++i) {
      auto idx = static_cast<int32_t>(i);
      if (best_any < 0 || better_match(c[i], c[static_cast<size_t>(best_any)])) best_any = idx;
      if (!eligible(c[i])) continue;
      if (best < 0 || better_match(c[i], c[static_cast<size_t>(best)])) best = idx;
    }
    const CandidateView& b = c[static_cast<size_t>(best)];
    const bool useful =
        b.match > 0 &&
        static_cast<double>(b.match) >= config_.min_match_ratio * static_cast<double>(std::max<int64_t>(req.n_keys, 1));
    if (useful) {
      if (!within_bound(b))
        return {.index = best, .decision = work_ok(b) ? Decision::kWarmQueue : Decision::kGroupAffinity};
      bool spilled = c[static_cast<size_t>(best_any)].match > b.match;
      return {.index = best, .decision = spilled ? Decision::kImbalance : Decision::kCacheHit};
    }
    int32_t roomiest = -1;
    const size_t start = rotation(req, c.size());
    for (size_t k = 0; k < c.size(); ++k) {
      const size_t i = (start + k) % c.size();
      if (!within_bound(c[i])) continue;  // the work rule is for a useful match only
      if (roomiest < 0 || more_room(c[i], c[static_cast<size_t>(roomiest)])) roomiest = static_cast<int32_t>(i);
    }
    if (roomiest >= 0 && split_ties(req)) {
      roomiest = nth_tied(req, c, roomiest, within_bound,
                          [&](const CandidateView& x, const CandidateView& y) { return more_room(y, x); });
    }
    bool spilled = c[static_cast<size_t>(best_any)].match > 0 && !within_bound(c[static_cast<size_t>(best_any)]);
    return {.index = roomiest, .decision = spilled ? Decision::kImbalance : Decision::kFreeCache};
  }

 private:
  // A burst: the bar's arrivals of the group within the window, and the group holds at least burst_share
  // of the in-scope requests in flight (a Poisson clump of one group among many is not one).
  // The bar: burst_arrivals, raised by what the group's own rate makes usual in the window.
  // `unseen`: arrivals of the group that may be in flight to this instance unseen (the peers' feeds).
  bool is_burst(const RouteRequest& req, int64_t total, int64_t unseen = 0) const {
    const auto bar = std::min<int64_t>(
        kMaxBurstArrivals, config_.burst_arrivals + static_cast<int64_t>(std::ceil(config_.burst_rate_factor *
                                                                                   std::max(req.group_expected, 0.0))));
    return req.group_recent + unseen >= bar &&
           static_cast<double>(req.group_in_flight) >= config_.burst_share * static_cast<double>(total);
  }

  // Equal-match set and cost spill (spill_factor > 0; see the file comment). cost(v): the request's cost
  // on v; within(v): the count bound allows v; holder_room(v): requests v may still take before
  // spill_slack over the count cap is used up. nullopt when no candidate holds a useful match (the
  // free-cache pick decides).
  template <typename Cost, typename Within, typename InScope, typename Room>
  std::optional<Pick> by_cost(const RouteRequest& req, std::span<const CandidateView> c, Cost cost, Within within,
                              InScope in_scope, Room holder_room, int64_t total) {
    int64_t best_match = 0;
    for (const auto& v : c) best_match = std::max(best_match, v.match);
    const auto n_keys = std::max<int64_t>(req.n_keys, 1);
    if (best_match == 0 || static_cast<double>(best_match) < config_.min_match_ratio * static_cast<double>(n_keys)) {
      return std::nullopt;
    }
    const int64_t best_cost = config_.cost(req.n_keys, best_match, req.tokens_per_key);
    const auto tolerance =
        std::max(config_.equal_match_tokens,
                 static_cast<int64_t>(config_.equal_match_ratio *
                                      static_cast<double>(n_keys * std::max<int64_t>(req.tokens_per_key, 1))));
    auto equal = [&](const CandidateView& v) { return v.match > 0 && cost(v) - best_cost <= tolerance; };
    // Least busy first: work in flight, then requests (with the region penalty), then the longer match.
    auto less_busy = [&](const CandidateView& a, const CandidateView& b) {
      if (a.work != b.work) return a.work < b.work;
      if (effective_load(a) != effective_load(b)) return effective_load(a) < effective_load(b);
      return a.match > b.match;
    };
    int32_t holder_in = -1, holder = -1;     // least busy equal holder the bound allows; least busy in scope
    for (size_t k = 0; k < c.size(); ++k) {  // ties: the first in this instance's rotation
      const size_t i = (k + ring_start(c.size())) % c.size();
      if (!equal(c[i])) continue;
      const auto idx = static_cast<int32_t>(i);
      if (within(c[i]) && (holder_in < 0 || less_busy(c[i], c[static_cast<size_t>(holder_in)]))) holder_in = idx;
      if (in_scope(c[i]) && (holder < 0 || less_busy(c[i], c[static_cast<size_t>(holder)]))) holder = idx;
    }
    const bool burst = is_burst(req, total);
    if (holder_in >= 0 && split_ties(req)) {
      // In a burst the count bound decides, and the least loaded come first: work (16 tokens a warm
      // request) would make a unique best that two simultaneous decisions both take.
      auto busier = [&](const CandidateView& a, const CandidateView& b) {
        if (burst || a.work == b.work) return effective_load(a) > effective_load(b);
        return a.work > b.work;
      };
      for (size_t i = 0; burst && i < c.size(); ++i) {
        if (equal(c[i]) && within(c[i]) && busier(c[static_cast<size_t>(holder_in)], c[i])) {
          holder_in = static_cast<int32_t>(i);
        }
      }
      holder_in = nth_tied(
          req, c, holder_in, [&](const CandidateView& v) { return equal(v) && within(v); }, busier);
    }
    if (holder_in >= 0) return Pick{.index = holder_in, .decision = Decision::kCacheHit};
    // The spill target: the allowed replica where the request would finish first (its work in flight
    // plus its cost there); ties: the longer match, more free cache, then turns.
    int32_t target = -1;
    const size_t start = rotation(req, c.size());
    for (size_t k = 0; k < c.size(); ++k) {
      const size_t i = (start + k) % c.size();
      if (!within(c[i])) continue;
      if (target < 0) {
        target = static_cast<int32_t>(i);
        continue;
      }
      const CandidateView& t = c[static_cast<size_t>(target)];
      const int64_t fi = c[i].work + cost(c[i]), ft = t.work + cost(t);
      if (fi != ft ? fi < ft : c[i].match != t.match ? c[i].match > t.match : more_room(c[i], t)) {
        target = static_cast<int32_t>(i);
      }
    }
    if (target >= 0 && split_ties(req)) {
      auto later = [&](const CandidateView& a, const CandidateView& b) {
        const int64_t fa = a.work + cost(a), fb = b.work + cost(b);
        return fa != fb ? fa > fb : a.match != b.match ? a.match < b.match : more_room(b, a);
      };
      target = nth_tied(req, c, target, within, later);
    }
    // Peer-synced instances: each of the n - 1 others may be deciding this group's next request on the
    // same view right now (within the feeds' lag), so queueing past the count bound by the cost test
    // needs the guard's bar out of reach even with those arrivals; else two instances both queue on the
    // holder as the burst starts and it holds one more than the bound lets the burst end with (3 3 4 2,
    // traced with --decision-log: PeerSyncedInstances.TwoWarmQueuesOnOneViewBeforeTheGuardFires).
    const bool young = config_.near_burst_window_ms == 0 || req.group_gap_ms <= config_.near_burst_window_ms;
    const bool near_burst = burst || (split_ties(req) && young && is_burst(req, total, config_.instances - 1));
    if (holder >= 0 && !near_burst) {
      const CandidateView& h = c[static_cast<size_t>(holder)];
      const CandidateView& a = c[static_cast<size_t>(target)];
      const double spill_work = static_cast<double>(cost(a) - cost(h) + a.work);
      if (static_cast<double>(h.work) <= config_.spill_factor * spill_work && holder_room(h) >= 1) {
        return Pick{.index = holder, .decision = Decision::kWarmQueue};
      }
    }
    return Pick{.index = target, .decision = Decision::kImbalance};  // no equal holder is allowed: a spill
  }

  // Peer-synced instances split ties by nth_tied (the file comment); otherwise the rotations decide.
  bool split_ties(const RouteRequest& req) const { return req.synced && config_.instances > 1; }
  // Among the candidates `ok` allows that are tied with c[best] (neither worse(c[best], v) nor worse(v,
  // c[best])), listed in the group's rotation, instance i of n takes the one at i x (k - 1) / (n - 1):
  // two instances take the two ends of the list, so each can decide twice on a view that misses the
  // other's pick before they meet (the (i mod k)-th took the same one there: 3 3 4 2 on the device).
  template <typename Ok, typename Worse>
  int32_t nth_tied(const RouteRequest& req, std::span<const CandidateView> c, int32_t best, Ok ok, Worse worse) const {
    const size_t n = c.size(), start = mix64(req.group) % n;
    const CandidateView& b = c[static_cast<size_t>(best)];
    auto tied = [&](const CandidateView& v) { return ok(v) && !worse(v, b) && !worse(b, v); };
    size_t k = 0;
    for (const auto& v : c) k += tied(v) ? 1 : 0;
    if (k == 0) return best;
    const auto n_inst = static_cast<size_t>(std::max<int64_t>(config_.instances, 2));
    size_t want = std::min(static_cast<size_t>(config_.instance), n_inst - 1) * (k - 1) / (n_inst - 1);
    for (size_t j = 0; j < n; ++j) {
      const size_t x = (start + j) % n;
      if (tied(c[x]) && want-- == 0) return static_cast<int32_t>(x);
    }
    return best;
  }
  // Most in-flight any replica may hold when the least busy holds `lo`.
  int64_t cap(int64_t lo) const {
    const auto rel = static_cast<int64_t>(config_.balance_rel_threshold * static_cast<double>(lo));
    return std::max(std::max<int64_t>(lo, 1) + config_.balance_abs_threshold, rel);
  }
  int64_t effective_load(const CandidateView& v) const { return v.load + (v.remote ? config_.remote_penalty : 0); }
  bool better_match(const CandidateView& a, const CandidateView& b) const {
    if (a.match != b.match) return a.match > b.match;
    return effective_load(a) < effective_load(b);
  }
  bool more_room(const CandidateView& a, const CandidateView& b) const {
    // Several instances: free caches within 1/2 are a tie, so the load and then each instance's own
    // rotation decide (the same polled figures would otherwise send every instance to one replica). 1/8
    // left a clearly most free replica (1,777 slots against 1,438-1,521) that two instances deciding
    // within the feeds' lag both took, and both queued their next request there (2 3 3 4 on the device,
    // PeerSyncedInstances.FirstPicksOnOneViewWithOneClearlyFreestReplica); under cache pressure, where a
    // replica has twice another's free slots, the free cache still decides.
    const int64_t near = config_.instances > 1 ? std::max(std::abs(a.free_cache), std::abs(b.free_cache)) / 2 : 0;
    if (std::abs(a.free_cache - b.free_cache) > near) return a.free_cache > b.free_cache;
    return effective_load(a) < effective_load(b);
  }
  // Where this instance's rotation over n candidates starts: instance i of k starts at i x n / k, so
  // simultaneous tie-breaks of the instances fall on different replicas (0 for a single router).
  size_t ring_start(size_t n) const {
    return static_cast<size_t>(config_.instance) * n / static_cast<size_t>(std::max<int64_t>(config_.instances, 1));
  }
  // Start of a free-cache or spill-target scan: a single router takes turns (equally free, equally idle
  // replicas take new prefixes in turn); several instances start from the request's group (the same
  // on every instance, whatever each decided before) plus their ring offset, so they stay complementary.
  size_t rotation(const RouteRequest& req, size_t n) {
    const uint64_t turn = turn_.fetch_add(1, std::memory_order_relaxed);
    if (config_.instances <= 1) return turn % n;
    return (mix64(req.group) % n + ring_start(n)) % n;
  }

  CacheAwareConfig config_;
  std::atomic<uint64_t> turn_{0};  // start of the free-cache scan
};

}  // namespace

std::unique_ptr<Policy> make_cache_aware(CacheAwareConfig config) { return std::make_unique<CacheAware>(config); }

}  // namespace keel::router
