#include "router/rate_limit.h"

#include <algorithm>
#include <cmath>

namespace keel::router {

TokenBucket::TokenBucket(double rate_per_s, double burst) : rate_per_s_(rate_per_s), burst_(burst), tokens_(burst) {}

int64_t TokenBucket::try_take(int64_t now_us) {
  std::lock_guard lock(mu_);
  if (last_us_ >= 0 && now_us > last_us_) {
    tokens_ = std::min(burst_, tokens_ + static_cast<double>(now_us - last_us_) * 1e-6 * rate_per_s_);
  }
  last_us_ = std::max(last_us_, now_us);
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return 0;
  }
  if (rate_per_s_ <= 0) return 60;
  // A tiny configured rate (1e-300/s) makes the wait too large for an int64: capped at kMaxRetryAfterS.
  const double wait_s = std::ceil((1.0 - tokens_) / rate_per_s_);
  return wait_s >= static_cast<double>(kMaxRetryAfterS) ? kMaxRetryAfterS
                                                        : std::max<int64_t>(1, static_cast<int64_t>(wait_s));
}

}  // namespace keel::router
