#include "router/policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace keel::router {

std::string_view decision_name(Decision d) {
  switch (d) {
    case Decision::kRoundRobin: return "round_robin";
    case Decision::kRandom: return "random";
    case Decision::kPowerOfTwo: return "power_of_two";
    case Decision::kCacheHit: return "cache_hit";
    case Decision::kImbalance: return "imbalance";
    case Decision::kFreeCache: return "free_cache";
    case Decision::kWarmQueue: return "warm_queue";
    case Decision::kGroupAffinity: return "group_affinity";
  }
  return "unknown";
}

Status CacheAwareConfig::validate() const {
  if (balance_abs_threshold < 0) return make_error(ErrorCode::kInvalidArgument, "balance-abs-threshold must be >= 0");
  if (!(balance_rel_threshold >= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "balance-rel-threshold must be >= 1.0, got {}",
                      balance_rel_threshold);
  }
  if (!(min_match_ratio >= 0.0 && min_match_ratio <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "min-match-ratio must be in [0, 1], got {}", min_match_ratio);
  }
  if (balance_idle_cap < 1) return make_error(ErrorCode::kInvalidArgument, "balance-idle-cap must be >= 1");
  if (remote_penalty < 0) return make_error(ErrorCode::kInvalidArgument, "region-penalty must be >= 0");
  if (work_request_tokens < 0) return make_error(ErrorCode::kInvalidArgument, "work-request-tokens must be >= 0");
  if (balance_abs_work < 0) return make_error(ErrorCode::kInvalidArgument, "balance-abs-work must be >= 0");
  if (balance_work_slack < 0) return make_error(ErrorCode::kInvalidArgument, "balance-work-slack must be >= 0");
  if (group_affinity < 0) return make_error(ErrorCode::kInvalidArgument, "group-affinity must be >= 0");
  if (!(spill_factor >= 0.0 && spill_factor <= 1e6)) {
    return make_error(ErrorCode::kInvalidArgument, "spill-factor must be in [0, 1e6], got {}", spill_factor);
  }
  if (equal_match_tokens < 0) return make_error(ErrorCode::kInvalidArgument, "equal-match-tokens must be >= 0");
  if (!(equal_match_ratio >= 0.0 && equal_match_ratio <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "equal-match-ratio must be in [0, 1], got {}", equal_match_ratio);
  }
  if (!(burst_share >= 0.0 && burst_share <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "burst-share must be in [0, 1], got {}", burst_share);
  }
  if (!(burst_rate_factor >= 0.0 && burst_rate_factor <= 1e3)) {
    return make_error(ErrorCode::kInvalidArgument, "burst-rate-factor must be in [0, 1000], got {}", burst_rate_factor);
  }
  if (!(kv_pull_cost >= 0.0 && kv_pull_cost <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "kv-pull-cost must be in [0, 1], got {}", kv_pull_cost);
  }
  if (instances < 1 || instances > 64 || instance < 0 || instance >= instances) {
    return make_error(ErrorCode::kInvalidArgument, "instance must be i/n with 0 <= i < n <= 64, got {}/{}", instance,
                      instances);
  }
  if (spill_slack < 0) return make_error(ErrorCode::kInvalidArgument, "spill-slack must be >= 0");
  if (burst_window_ms < 0) return make_error(ErrorCode::kInvalidArgument, "burst-window-ms must be >= 0");
  if (near_burst_window_ms < 0) return make_error(ErrorCode::kInvalidArgument, "near-burst-window-ms must be >= 0");
  if (burst_arrivals < 1 || burst_arrivals > kMaxBurstArrivals) {
    return make_error(ErrorCode::kInvalidArgument, "burst-arrivals must be in [1, {}], got {}", kMaxBurstArrivals,
                      burst_arrivals);
  }
  return {};
}

Status CacheAwareConfig::set_instance(std::string_view text) {
  const auto slash = text.find('/');
  int64_t i = -1, n = 0;
  if (slash != std::string_view::npos) {
    const char* end = text.data() + text.size();
    auto [p1, e1] = std::from_chars(text.data(), text.data() + slash, i);
    auto [p2, e2] = std::from_chars(text.data() + slash + 1, end, n);
    if (e1 != std::errc() || p1 != text.data() + slash || e2 != std::errc() || p2 != end) i = -1;
  }
  if (i < 0 || n < 1 || i >= n || n > 64) {
    return make_error(ErrorCode::kInvalidArgument, "instance must be i/n with 0 <= i < n <= 64, got '{}'", text);
  }
  instance = i;
  instances = n;
  return {};
}

int64_t CacheAwareConfig::cost(int64_t n_keys, int64_t match, int64_t tokens_per_key) const {
  const int64_t uncached = n_keys - std::clamp<int64_t>(match, 0, n_keys);
  return uncached * std::max<int64_t>(tokens_per_key, 1) + work_request_tokens;
}

int64_t CacheAwareConfig::cost_with_pull(int64_t n_keys, int64_t match, int64_t pull_match,
                                         int64_t tokens_per_key) const {
  if (kv_pull_cost <= 0 || pull_match <= match) return cost(n_keys, match, tokens_per_key);
  const int64_t pulled = (std::min(pull_match, n_keys) - std::max<int64_t>(match, 0)) * std::max<int64_t>(tokens_per_key, 1);
  return cost(n_keys, pull_match, tokens_per_key) + static_cast<int64_t>(std::ceil(kv_pull_cost * static_cast<double>(pulled)));
}

Result<std::unique_ptr<Policy>> make_policy(std::string_view name, const CacheAwareConfig& cache_aware) {
  if (name == "round_robin") return make_round_robin();
  if (name == "random") return make_random();
  if (name == "power_of_two") return make_power_of_two();
  if (name == "cache_aware") {
    KEEL_RETURN_IF_ERROR(cache_aware.validate());
    return make_cache_aware(cache_aware);
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown policy '{}' (round_robin, random, power_of_two, cache_aware)",
                    name);
}

}  // namespace keel::router
