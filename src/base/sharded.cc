#include "base/sharded.h"

namespace keel::base {

size_t thread_shard() {
  static std::atomic<size_t> next{0};
  thread_local const size_t shard = next.fetch_add(1, std::memory_order_relaxed) % kCounterShards;
  return shard;
}

}  // namespace keel::base
