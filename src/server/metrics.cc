#include "server/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/check.h"

namespace keel::server {

void Counter::add(double v) {
  double cur = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  KEEL_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()), "histogram bounds must ascend");
  for (auto& sh : shards_) sh.counts.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double v) {
  size_t bucket = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  Shard& sh = shards_[base::thread_shard()];
  std::lock_guard lock(sh.mu);
  ++sh.counts[bucket];
  sh.sum += v;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::vector<uint64_t> counts(bounds_.size() + 1, 0);
  for (const auto& sh : shards_) {
    std::lock_guard lock(sh.mu);
    for (size_t i = 0; i < counts.size(); ++i) counts[i] += sh.counts[i];
    s.sum += sh.sum;
  }
  uint64_t acc = 0;
  for (uint64_t c : counts) {
    acc += c;
    s.cumulative_counts.push_back(acc);
  }
  s.count = acc;
  return s;
}

std::vector<double> latency_buckets_s() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3, 0.5,
          0.75,  1.0,    1.5,   2.0,  3.0,   5.0,  7.5,   10.0, 20.0, 30.0, 60.0};
}

MetricsRegistry::Family& MetricsRegistry::family(std::string_view name, std::string_view help, Type type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{.type = type, .help = std::string(help)}).first;
  }
  KEEL_CHECK(it->second.type == type, "metric {} registered with two types", name);
  return it->second;
}

Counter& MetricsRegistry::counter(std::string_view name, std::string_view help, std::string_view labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kCounter).counters[std::string(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(std::string_view name, std::string_view help, std::vector<double> upper_bounds,
                                      std::string_view labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kHistogram).histograms[std::string(labels)];
  if (!slot) slot = std::make_unique<Histogram>(std::move(upper_bounds));
  return *slot;
}

void MetricsRegistry::gauge(std::string_view name, std::string_view help, std::function<double()> read) {
  std::lock_guard lock(mu_);
  family(name, help, Type::kGauge).gauge = std::move(read);
}

namespace {

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string braces(std::string_view labels, std::string_view extra = {}) {
  if (labels.empty() && extra.empty()) return "";
  if (labels.empty()) return fmt::format("{{{}}}", extra);
  if (extra.empty()) return fmt::format("{{{}}}", labels);
  return fmt::format("{{{},{}}}", labels, extra);
}

}  // namespace

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kHistogram ? "histogram" : "gauge";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, type);
    for (const auto& [labels, c] : f.counters)
      out += fmt::format("{}{} {}\n", name, braces(labels), format_value(c->value()));
    for (const auto& [labels, h] : f.histograms) {
      auto s = h->snapshot();
      for (size_t i = 0; i < s.upper_bounds.size(); ++i) {
        out += fmt::format("{}_bucket{} {}\n", name,
                           braces(labels, fmt::format("le=\"{}\"", format_value(s.upper_bounds[i]))),
                           s.cumulative_counts[i]);
      }
      out += fmt::format("{}_bucket{} {}\n", name, braces(labels, "le=\"+Inf\""), s.count);
      out += fmt::format("{}_sum{} {}\n", name, braces(labels), format_value(s.sum));
      out += fmt::format("{}_count{} {}\n", name, braces(labels), s.count);
    }
    if (f.gauge) out += fmt::format("{} {}\n", name, format_value(f.gauge()));
  }
  return out;
}

}  // namespace keel::server
