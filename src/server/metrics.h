// A small Prometheus metrics registry: counters, histograms (fixed buckets) and gauges read at scrape
// time, rendered in the text exposition format (0.0.4) for GET /metrics. Registration and updates are
// thread-safe (updates are lock-free for counters; a histogram has a mutex per thread shard); references returned by
// counter()/histogram() stay valid for the registry's life.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/sharded.h"

namespace keel::server {

class Counter {
 public:
  void add(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void observe(double v);
  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative_counts;  // per bound, then +Inf
    double sum = 0.0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  // One per base::thread_shard(): a thread observes into its own shard (its own lock and cache lines),
  // so threads observing on every request do not contend; snapshot() sums them.
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::vector<uint64_t> counts;  // per bucket (not cumulative), last = +Inf
    double sum = 0.0;
  };
  std::vector<double> bounds_;
  std::array<Shard, base::kCounterShards> shards_;
};

// Buckets for latencies in seconds, 1 ms .. 60 s.
std::vector<double> latency_buckets_s();

class MetricsRegistry {
 public:
  // `labels` is the Prometheus label set without braces, e.g. `path="/v1/models",code="200"`.
  Counter& counter(std::string_view name, std::string_view help, std::string_view labels = {});
  Histogram& histogram(std::string_view name, std::string_view help, std::vector<double> upper_bounds,
                       std::string_view labels = {});
  // A gauge whose value `read` returns at scrape time.
  void gauge(std::string_view name, std::string_view help, std::function<double()> read);

  // The text exposition of every metric, families in name order.
  std::string render() const;

 private:
  enum class Type { kCounter, kHistogram, kGauge };
  struct Family {
    Type type;
    std::string help;
    std::map<std::string, std::unique_ptr<Counter>> counters;      // by label set
    std::map<std::string, std::unique_ptr<Histogram>> histograms;  // by label set
    std::function<double()> gauge;
  };
  Family& family(std::string_view name, std::string_view help, Type type);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;
};

}  // namespace keel::server
