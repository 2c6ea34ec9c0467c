// When `keel bench serve` sends each request: either a fixed number in flight (closed loop), or an
// open-loop schedule of Poisson arrivals, optionally in bursts. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace keel::loadgen {

struct ArrivalConfig {
  int32_t concurrency = 0;  // > 0: closed loop, this many requests in flight (rate_rps must be 0)
  double rate_rps = 0.0;    // > 0: open loop, mean requests per second
  int32_t burst = 1;        // open loop: requests per arrival event (events come at rate_rps / burst)
  uint64_t seed = 0;

  // Exactly one of concurrency and rate_rps is set; burst >= 1.
  Status validate() const;
};

// Open loop: the send time of each of n requests in microseconds from the start, ascending. Events
// form a Poisson process of rate rate_rps / burst (exponential gaps); each brings `burst` requests at
// the same instant, so the mean rate stays rate_rps.
std::vector<int64_t> arrival_offsets_us(const ArrivalConfig& config, int64_t n);

}  // namespace keel::loadgen
