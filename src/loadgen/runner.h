// Runs a load test: sends every request of a workload to an OpenAI-compatible server over plain
// HTTP/1.1 (one connection per request, streaming responses read as they arrive), at a fixed
// concurrency or on an open-loop arrival schedule, and returns what each request saw. One io thread
// (the caller's) drives every connection; run_load blocks until all requests finished or timed out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "loadgen/arrival.h"
#include "loadgen/openai_wire.h"
#include "loadgen/stats.h"
#include "loadgen/workload.h"

namespace keel::loadgen {

struct Target {
  std::string host;
  uint16_t port = 80;
  std::string base_path;  // path prefix before /v1/..., without a trailing slash ("" for none)
};

// "http://host[:port][/prefix]"; "/v1" at the end of the prefix is dropped (OpenAI base URLs end in it).
Result<Target> parse_url(std::string_view url);

struct RunConfig {
  Target target;
  Endpoint endpoint = Endpoint::kChat;
  BodyOptions body;
  ArrivalConfig arrival;
  int32_t request_timeout_s = 600;  // whole request, connect to last byte
  // Called on the io thread after each request with the number finished so far (may be null).
  std::function<void(int64_t n_done)> on_done;
};

// kInvalidArgument when the host does not resolve; per-request failures land in the results.
Result<std::vector<RequestResult>> run_load(const RunConfig& config, const std::vector<RequestSpec>& requests);

// GET <base>/v1/models and the ids it lists (kUnavailable when the server cannot be reached).
Result<std::vector<std::string>> fetch_model_ids(const Target& target, int32_t timeout_ms);

}  // namespace keel::loadgen
