// CacheConfig: how big the KV slot pool is and how much of the radix tree's change feed is kept.
// Validated here; the CLI composes it from --kv-tokens / --kv-memory-fraction. Plain data: any thread.
// The caller (cli/serve, keel generate) knows the free device memory and the model's KV bytes per
// token; resolve_kv_slots turns them into the pool size.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace keel::cache {

struct CacheConfig {
  int64_t kv_tokens = 0;                // pool size in tokens; 0 = size it from kv_memory_fraction
  double kv_memory_fraction = 0.85;     // of the memory left after weights, used when kv_tokens == 0
  int64_t event_queue_capacity = 4096;  // change-feed events kept for the router feed; 0 = feed off

  // Rejects out-of-range values with a message naming the field.
  Status validate() const;

  // The pool size: kv_tokens (kResourceExhausted if it does not fit in free_memory_bytes), or
  // floor(free_memory_bytes * kv_memory_fraction / kv_bytes_per_token) capped at INT32_MAX
  // (kResourceExhausted if that is 0).
  Result<int64_t> resolve_kv_slots(int64_t free_memory_bytes, int64_t kv_bytes_per_token) const;
};

}  // namespace keel::cache
