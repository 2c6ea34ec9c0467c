#include "loadgen/report_format.h"

#include <fmt/format.h>

namespace keel::loadgen {

using nlohmann::json;

namespace {

json summary_json(const Summary& s) {
  return {{"n", s.n}, {"mean", s.mean}, {"p50", s.p50}, {"p95", s.p95}, {"p99", s.p99}, {"min", s.min}, {"max", s.max}};
}

std::string summary_row(std::string_view name, const Summary& s) {
  return fmt::format("{:<22} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", name, s.mean, s.p50, s.p95, s.p99, s.max);
}

}  // namespace

json report_json(const Report& r, const json& config) {
  json errors = json::array();
  for (const auto& [message, count] : r.errors) errors.push_back({{"message", message}, {"count", count}});
  return {{"config", config},
          {"summary",
           {{"requests", r.n_requests},
            {"ok", r.n_ok},
            {"errors", r.n_errors},
            {"duration_s", r.duration_s},
            {"request_throughput_rps", r.request_throughput},
            {"output_token_throughput_tps", r.output_token_throughput},
            {"prompt_token_throughput_tps", r.prompt_token_throughput},
            {"output_tokens", r.n_output_tokens},
            {"prompt_tokens", r.n_prompt_tokens},
            {"cached_prompt_tokens", r.n_cached_tokens},
            {"requests_with_usage", r.n_usage_reported}}},
          {"ttft_ms", summary_json(r.ttft_ms)},
          {"itl_ms", summary_json(r.itl_ms)},
          {"e2e_ms", summary_json(r.e2e_ms)},
          {"tpot_ms", summary_json(r.tpot_ms)},
          {"errors", std::move(errors)}};
}

std::string report_text(const Report& r) {
  std::string out = fmt::format(
      "requests: {} ok, {} failed in {:.2f} s\n"
      "throughput: {:.2f} req/s, {:.1f} output tok/s, {:.1f} prompt tok/s\n"
      "tokens: {} output, {} prompt ({} cached; usage reported by {} requests)\n",
      r.n_ok, r.n_errors, r.duration_s, r.request_throughput, r.output_token_throughput, r.prompt_token_throughput,
      r.n_output_tokens, r.n_prompt_tokens, r.n_cached_tokens, r.n_usage_reported);
  out += fmt::format("{:<22} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "latency (ms)", "mean", "p50", "p95", "p99", "max");
  out += summary_row("time to first token", r.ttft_ms);
  out += summary_row("inter-token", r.itl_ms);
  out += summary_row("per output token", r.tpot_ms);
  out += summary_row("end to end", r.e2e_ms);
  for (const auto& [message, count] : r.errors) out += fmt::format("error x{}: {}\n", count, message);
  return out;
}

}  // namespace keel::loadgen
