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
#include <algorithm>
#include <atomic>
#include <limits>

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
    auto keeps_bound = [&](const CandidateView& v) {
      const int64_t after = effective_load(v) + 1;
      if (!in_scope(v)) return after <= cap(lo);
      const int64_t lo_after = v.load == lo && n_lo == 1 ? std::min(lo + 1, second) : lo;
      const bool spare = relaxing && lo_after == 0 && total + 1 <= n_scope;
      return std::max(hi, after) <= (spare ? config_.balance_idle_cap : cap(lo_after));
    };
    bool any = false;
    for (const auto& v : c) any = any || keeps_bound(v);
    int64_t min_eff = std::numeric_limits<int64_t>::max();
    for (const auto& v : c) min_eff = std::min(min_eff, effective_load(v));
    // When no choice keeps the bound (completions drained the least busy, a work-rule pick holds one
    // more than the cap, or remote-only headroom), the least loaded candidates are the only ones that
    // move toward it.
    auto within_bound = [&](const CandidateView& v) { return any ? keeps_bound(v) : effective_load(v) == min_eff; };
    // Work rule: the cheapest cost and the earliest finish among the candidates the count bound allows.
    auto cost = [&](const CandidateView& v) { return config_.cost(req.n_keys, v.match, req.tokens_per_key); };
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
      const int64_t lo_after = v.load == lo && n_lo == 1 ? std::min(lo + 1, second) : lo;
      return v.load + 1 <= cap(lo_after) + config_.balance_work_slack;
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
    const bool useful = b.match > 0 && static_cast<double>(b.match) >=
                                           config_.min_match_ratio * static_cast<double>(std::max<int64_t>(req.n_keys, 1));
    if (useful) {
      if (!within_bound(b)) return {.index = best, .decision = work_ok(b) ? Decision::kWarmQueue : Decision::kGroupAffinity};
      bool spilled = c[static_cast<size_t>(best_any)].match > b.match;
      return {.index = best, .decision = spilled ? Decision::kImbalance : Decision::kCacheHit};
    }
    int32_t roomiest = -1;
    const size_t start = turn_.fetch_add(1, std::memory_order_relaxed) % c.size();
    for (size_t k = 0; k < c.size(); ++k) {
      const size_t i = (start + k) % c.size();
      if (!within_bound(c[i])) continue;  // the work rule is for a useful match only
      if (roomiest < 0 || more_room(c[i], c[static_cast<size_t>(roomiest)])) roomiest = static_cast<int32_t>(i);
    }
    bool spilled = c[static_cast<size_t>(best_any)].match > 0 && !within_bound(c[static_cast<size_t>(best_any)]);
    return {.index = roomiest, .decision = spilled ? Decision::kImbalance : Decision::kFreeCache};
  }

 private:
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
    if (a.free_cache != b.free_cache) return a.free_cache > b.free_cache;
    return effective_load(a) < effective_load(b);
  }

  CacheAwareConfig config_;
  std::atomic<uint64_t> turn_{0};  // start of the free-cache scan
};

}  // namespace

std::unique_ptr<Policy> make_cache_aware(CacheAwareConfig config) { return std::make_unique<CacheAware>(config); }

}  // namespace keel::router
