// Monotonic time helpers for latency accounting. Any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace keel {

inline int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace keel
