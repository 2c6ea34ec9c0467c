#include "router/breaker.h"

namespace keel::router {

std::string_view breaker_state_name(BreakerState s) {
  switch (s) {
    case BreakerState::kClosed: return "closed";
    case BreakerState::kOpen: return "open";
    case BreakerState::kHalfOpen: return "half_open";
  }
  return "unknown";
}

BreakerState CircuitBreaker::state_locked(int64_t now_ms) const {
  if (!open_) return BreakerState::kClosed;
  return now_ms - opened_at_ms_ >= config_.open_ms ? BreakerState::kHalfOpen : BreakerState::kOpen;
}

BreakerState CircuitBreaker::state(int64_t now_ms) const {
  std::lock_guard lock(mu_);
  return state_locked(now_ms);
}

bool CircuitBreaker::available(int64_t now_ms) const {
  if (clean_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(mu_);
  switch (state_locked(now_ms)) {
    case BreakerState::kClosed: return true;
    case BreakerState::kOpen: return false;
    case BreakerState::kHalfOpen: return !probe_in_flight_;
  }
  return false;
}

bool CircuitBreaker::allow(int64_t now_ms) {
  if (clean_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(mu_);
  switch (state_locked(now_ms)) {
    case BreakerState::kClosed: return true;
    case BreakerState::kOpen: return false;
    case BreakerState::kHalfOpen:
      if (probe_in_flight_) return false;
      probe_in_flight_ = true;
      update_clean_locked();
      return true;
  }
  return false;
}

void CircuitBreaker::record_success() {
  if (clean_.load(std::memory_order_acquire)) return;  // nothing to reset
  std::lock_guard lock(mu_);
  consecutive_failures_ = 0;
  open_ = false;
  probe_in_flight_ = false;
  update_clean_locked();
}

void CircuitBreaker::record_failure(int64_t now_ms) {
  std::lock_guard lock(mu_);
  ++consecutive_failures_;
  if (open_) {
    if (probe_in_flight_ || now_ms - opened_at_ms_ >= config_.open_ms) {
      opened_at_ms_ = now_ms;  // the probe failed: another full open period
      probe_in_flight_ = false;
    }
  } else if (consecutive_failures_ >= config_.failure_threshold) {
    open_ = true;
    opened_at_ms_ = now_ms;
    probe_in_flight_ = false;
    ++n_opened_;
  }
  update_clean_locked();
}

int64_t CircuitBreaker::n_opened() const {
  std::lock_guard lock(mu_);
  return n_opened_;
}

}  // namespace keel::router
