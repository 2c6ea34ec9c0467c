// cache_aware: the replica holding the longest prefix of the prompt, among those not overloaded.
// Load is "effective": in-flight + queue, plus remote_penalty outside the request's region. A
// candidate is eligible when its load is within balance_abs_threshold of the least loaded OR within
// balance_rel_threshold x of it; a hot prefix therefore keeps its replica only until that replica
// pulls ahead of the others by both margins, then traffic spills to the least loaded (the spill
// records the prefix there too, so the hot prefix ends up cached on several replicas). With no useful
// match (below min_match_ratio of the prompt), the eligible replica with the most free cache wins.
#include <algorithm>
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
    int64_t min_load = std::numeric_limits<int64_t>::max();
    for (const auto& v : c) min_load = std::min(min_load, effective_load(v));
    auto eligible = [&](const CandidateView& v) {
      int64_t load = effective_load(v);
      return load - min_load <= config_.balance_abs_threshold ||
             static_cast<double>(load) <= config_.balance_rel_threshold * static_cast<double>(min_load);
    };
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
      bool spilled = c[static_cast<size_t>(best_any)].match > b.match;
      return {.index = best, .decision = spilled ? Decision::kImbalance : Decision::kCacheHit};
    }
    int32_t roomiest = -1;
    for (size_t i = 0; i < c.size(); ++i) {
      if (!eligible(c[i])) continue;
      if (roomiest < 0 || more_room(c[i], c[static_cast<size_t>(roomiest)])) roomiest = static_cast<int32_t>(i);
    }
    bool spilled = c[static_cast<size_t>(best_any)].match > 0 && !eligible(c[static_cast<size_t>(best_any)]);
    return {.index = roomiest, .decision = spilled ? Decision::kImbalance : Decision::kFreeCache};
  }

 private:
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
};

}  // namespace

std::unique_ptr<Policy> make_cache_aware(CacheAwareConfig config) { return std::make_unique<CacheAware>(config); }

}  // namespace keel::router
