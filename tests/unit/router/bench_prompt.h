// The prompt shape of the shared-prefix router benchmark (bench/bench_router_prefix.py), which the
// cache_aware policy tests and the simulation reproduce: 142 tokens, the first 127 a group's shared
// system prompt.
#pragma once

#include <cstdint>

namespace keel::router::bench_prompt {

inline constexpr int64_t kKeys = 142;
inline constexpr int64_t kShared = 127;

}  // namespace keel::router::bench_prompt
