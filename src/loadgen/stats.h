// Latency statistics for `keel bench serve`: per-request timings as the client saw them, and the
// summary a run reports (percentiles, throughput, errors). Pure functions over plain data; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace keel::loadgen {

// What one request did, in client-side monotonic microseconds (base/clock.h).
struct RequestResult {
  bool ok = false;
  int32_t http_status = 0;              // 0 when no response head arrived
  std::string error;                    // empty when ok
  int64_t start_us = 0;                 // when the request was due to be sent (its arrival time)
  int64_t sent_us = 0;                  // when the connection was up and the request went out
  int64_t end_us = 0;                   // last byte of the response
  std::vector<int64_t> token_times_us;  // arrival of each stream event that carried output text
  int32_t n_output_tokens = 0;          // usage.completion_tokens, else the number of text events
  int32_t n_prompt_tokens = 0;          // usage.prompt_tokens (0 when the server sent no usage)
  int32_t n_cached_tokens = 0;          // usage.prompt_tokens_details.cached_tokens
  bool usage_reported = false;
};

struct Summary {
  int64_t n = 0;
  double mean = 0.0, p50 = 0.0, p95 = 0.0, p99 = 0.0, min = 0.0, max = 0.0;
};

// The q-quantile (0 <= q <= 1) of ascending `sorted` with linear interpolation between closest ranks
// (the "linear" method of numpy.percentile). 0 for an empty input.
double percentile(const std::vector<double>& sorted, double q);
// Sorts a copy of `values` and summarizes it.
Summary summarize(std::vector<double> values);

struct Report {
  int64_t n_requests = 0, n_ok = 0, n_errors = 0;
  double duration_s = 0.0;               // first arrival -> last response
  double request_throughput = 0.0;       // ok requests / s
  double output_token_throughput = 0.0;  // output tokens of ok requests / s
  double prompt_token_throughput = 0.0;  // prompt tokens of ok requests / s (0 without usage)
  int64_t n_output_tokens = 0, n_prompt_tokens = 0, n_cached_tokens = 0;
  int64_t n_usage_reported = 0;  // ok requests whose usage the server sent
  Summary ttft_ms;               // arrival -> first text event (includes client-side queueing: none
                                 // in concurrency mode, connection setup in both)
  Summary itl_ms;                // gaps between consecutive text events, over all requests
  Summary e2e_ms;                // arrival -> last byte
  Summary tpot_ms;               // per request: (last - first text event) / (events - 1)
  std::vector<std::pair<std::string, int64_t>> errors;  // message -> count, most frequent first
};

Report make_report(const std::vector<RequestResult>& results);

}  // namespace keel::loadgen
