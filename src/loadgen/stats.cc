#include "loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace keel::loadgen {

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.n = static_cast<int64_t>(values.size());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.p50 = percentile(values, 0.50);
  s.p95 = percentile(values, 0.95);
  s.p99 = percentile(values, 0.99);
  s.min = values.front();
  s.max = values.back();
  return s;
}

namespace {

double ms(int64_t us) { return static_cast<double>(us) / 1e3; }

std::vector<std::pair<std::string, int64_t>> count_errors(const std::vector<RequestResult>& results) {
  std::map<std::string, int64_t> by_message;
  for (const auto& r : results) {
    if (!r.ok) ++by_message[r.error.empty() ? "unknown error" : r.error];
  }
  std::vector<std::pair<std::string, int64_t>> out(by_message.begin(), by_message.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

Report make_report(const std::vector<RequestResult>& results) {
  Report rep;
  rep.n_requests = static_cast<int64_t>(results.size());
  std::vector<double> ttft, itl, e2e, tpot;
  int64_t t_first = INT64_MAX, t_last = INT64_MIN;
  for (const auto& r : results) {
    t_first = std::min(t_first, r.start_us);
    t_last = std::max(t_last, r.end_us);
    if (!r.ok) continue;
    ++rep.n_ok;
    rep.n_output_tokens += r.n_output_tokens;
    rep.n_prompt_tokens += r.n_prompt_tokens;
    rep.n_cached_tokens += r.n_cached_tokens;
    rep.n_usage_reported += r.usage_reported ? 1 : 0;
    e2e.push_back(ms(r.end_us - r.start_us));
    const auto& t = r.token_times_us;
    if (t.empty()) continue;
    ttft.push_back(ms(t.front() - r.start_us));
    for (size_t i = 1; i < t.size(); ++i) itl.push_back(ms(t[i] - t[i - 1]));
    if (t.size() > 1) tpot.push_back(ms(t.back() - t.front()) / static_cast<double>(t.size() - 1));
  }
  rep.n_errors = rep.n_requests - rep.n_ok;
  rep.duration_s = results.empty() ? 0.0 : static_cast<double>(t_last - t_first) / 1e6;
  if (rep.duration_s > 0) {
    rep.request_throughput = static_cast<double>(rep.n_ok) / rep.duration_s;
    rep.output_token_throughput = static_cast<double>(rep.n_output_tokens) / rep.duration_s;
    rep.prompt_token_throughput = static_cast<double>(rep.n_prompt_tokens) / rep.duration_s;
  }
  rep.ttft_ms = summarize(std::move(ttft));
  rep.itl_ms = summarize(std::move(itl));
  rep.e2e_ms = summarize(std::move(e2e));
  rep.tpot_ms = summarize(std::move(tpot));
  rep.errors = count_errors(results);
  return rep;
}

}  // namespace keel::loadgen
