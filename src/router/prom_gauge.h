// Reading a replica's Prometheus text (GET /metrics, polled each health round): the value of one
// unlabelled gauge. Pure: any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace keel::router {

// The value of the unlabelled gauge `name` (a line "name value"), truncated to an integer; -1 when
// the line is missing or its value is not a count (NaN, ±Inf, negative, above 2^40, not a number).
int64_t prom_gauge(std::string_view text, std::string_view name);

}  // namespace keel::router
