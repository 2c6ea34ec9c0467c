// The prompt shape of the shared-prefix router benchmark (bench/bench_router_prefix.py), which the
// cache_aware policy tests and the simulation reproduce: 142 tokens, the first 127 a group's shared
// system prompt; its cost under the default cache_aware config cold and with the shared part cached.
#pragma once

#include <cstdint>

#include "router/policy.h"

namespace keel::router::bench_prompt {

inline constexpr int64_t kKeys = 142;
inline constexpr int64_t kShared = 127;
inline const CacheAwareConfig kDefaults{};
inline const int64_t kCold = kDefaults.cost(kKeys, 0, 1);        // 158
inline const int64_t kWarm = kDefaults.cost(kKeys, kShared, 1);  // 31

}  // namespace keel::router::bench_prompt
