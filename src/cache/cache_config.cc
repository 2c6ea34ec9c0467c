#include "cache/cache_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace keel::cache {
namespace {
constexpr int64_t kMaxSlots = std::numeric_limits<int32_t>::max();
}  // namespace

Status CacheConfig::validate() const {
  if (kv_tokens < 0 || kv_tokens > kMaxSlots) {
    return make_error(ErrorCode::kInvalidArgument, "kv_tokens must be in [0, {}], got {}", kMaxSlots, kv_tokens);
  }
  if (!(kv_memory_fraction > 0.0 && kv_memory_fraction <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "kv_memory_fraction must be in (0, 1], got {}", kv_memory_fraction);
  }
  if (event_queue_capacity < 0) {
    return make_error(ErrorCode::kInvalidArgument, "event_queue_capacity must be >= 0, got {}", event_queue_capacity);
  }
  return Status::ok_status();
}

Result<int64_t> CacheConfig::resolve_kv_slots(int64_t free_memory_bytes, int64_t kv_bytes_per_token) const {
  KEEL_RETURN_IF_ERROR(validate());
  if (kv_bytes_per_token <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "KV bytes per token must be > 0, got {}", kv_bytes_per_token);
  }
  free_memory_bytes = std::max<int64_t>(free_memory_bytes, 0);
  if (kv_tokens > 0) {
    // Compare in tokens so the product cannot overflow.
    if (kv_tokens > free_memory_bytes / kv_bytes_per_token) {
      return make_error(ErrorCode::kResourceExhausted, "kv_tokens {} needs {:.2f} GiB of KV memory, {:.2f} GiB free",
                        kv_tokens,
                        static_cast<double>(kv_tokens) * static_cast<double>(kv_bytes_per_token) / 1073741824.0,
                        static_cast<double>(free_memory_bytes) / 1073741824.0);
    }
    return kv_tokens;
  }
  double budget = std::floor(static_cast<double>(free_memory_bytes) * kv_memory_fraction);
  auto n = static_cast<int64_t>(budget / static_cast<double>(kv_bytes_per_token));
  n = std::min(n, kMaxSlots);
  if (n < 1) {
    return make_error(ErrorCode::kResourceExhausted,
                      "no room for the KV cache: {} bytes free x fraction {} < {} bytes per token", free_memory_bytes,
                      kv_memory_fraction, kv_bytes_per_token);
  }
  return n;
}

}  // namespace keel::cache
