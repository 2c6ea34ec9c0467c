// Rendering a load-test Report (stats.h): a JSON document for --output and scripts (bench/), and a
// short human-readable table for the terminal. Pure functions; any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "loadgen/stats.h"

namespace keel::loadgen {

// {"summary": {...}, "ttft_ms": {...}, "itl_ms": {...}, "e2e_ms": {...}, "tpot_ms": {...}, "errors": [...]}
// plus `config` (what was run) copied under "config".
nlohmann::json report_json(const Report& report, const nlohmann::json& config);

std::string report_text(const Report& report);

}  // namespace keel::loadgen
