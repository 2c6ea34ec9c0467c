// CircuitBreaker for one replica: closed (traffic flows) -> open after `failure_threshold`
// consecutive failures (passive: errors of proxied requests; active: failed health checks) -> after
// open_ms, half-open: exactly one probe (a request or a health check) is let through; its success
// closes the breaker, its failure opens it again. Thread-safe: a mutex for the state, and an atomic
// `clean` flag (closed, no failure counted, no probe) that lets the common case (every request asks
// available()/allow() and reports a success) pass without taking the mutex: with several io threads
// that mutex was a cache line passed between cores three times per request.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace keel::router {

enum class BreakerState { kClosed, kOpen, kHalfOpen };
std::string_view breaker_state_name(BreakerState s);

struct BreakerConfig {
  int32_t failure_threshold = 3;
  int64_t open_ms = 2000;
};

class CircuitBreaker {
 public:
  explicit CircuitBreaker(BreakerConfig config = {}) : config_(config) {}

  // May a request (or probe) go to this replica at now_ms? In half-open, true once per probe round.
  bool allow(int64_t now_ms);
  // Without taking the probe slot: would allow() say yes?
  bool available(int64_t now_ms) const;
  void record_success();
  void record_failure(int64_t now_ms);
  BreakerState state(int64_t now_ms) const;
  int64_t n_opened() const;

 private:
  BreakerState state_locked(int64_t now_ms) const;
  void update_clean_locked() {
    clean_.store(!open_ && consecutive_failures_ == 0 && !probe_in_flight_, std::memory_order_release);
  }

  BreakerConfig config_;
  std::atomic<bool> clean_{true};
  mutable std::mutex mu_;
  int32_t consecutive_failures_ = 0;
  bool open_ = false;
  int64_t opened_at_ms_ = 0;
  bool probe_in_flight_ = false;
  int64_t n_opened_ = 0;
};

}  // namespace keel::router
