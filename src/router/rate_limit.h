// TokenBucket: a per-API-key request rate limit (rate_per_s refill, burst capacity). try_take answers
// 0 when the request may pass, else the whole seconds until a token is there (for Retry-After), at
// most kMaxRetryAfterS.
// Thread-safe (a mutex per bucket).
#pragma once

#include <cstdint>
#include <mutex>

namespace keel::router {

class TokenBucket {
 public:
  static constexpr int64_t kMaxRetryAfterS = 86'400;

  TokenBucket(double rate_per_s, double burst);
  int64_t try_take(int64_t now_us);

 private:
  double rate_per_s_;
  double burst_;
  std::mutex mu_;
  double tokens_;
  int64_t last_us_ = -1;
};

}  // namespace keel::router
