// The metrics registry's Prometheus text output.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace keel::server {
namespace {

TEST(Metrics, CountersGaugesAndHistogramsRender) {
  MetricsRegistry r;
  r.counter("req_total", "Requests.", "code=\"200\"").add();
  r.counter("req_total", "Requests.", "code=\"200\"").add(2);
  r.counter("req_total", "Requests.", "code=\"500\"").add();
  r.gauge("queue", "Queue length.", [] { return 4.0; });
  auto& h = r.histogram("lat_seconds", "Latency.", {0.5, 1.0});
  h.observe(0.25);
  h.observe(0.5);  // le is inclusive
  h.observe(0.75);
  h.observe(7.0);
  EXPECT_EQ(r.render(),
            "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.5\"} 2\nlat_seconds_bucket{le=\"1\"} 3\nlat_seconds_bucket{le=\"+Inf\"} 4\n"
            "lat_seconds_sum 8.5\nlat_seconds_count 4\n"
            "# HELP queue Queue length.\n# TYPE queue gauge\nqueue 4\n"
            "# HELP req_total Requests.\n# TYPE req_total counter\n"
            "req_total{code=\"200\"} 3\nreq_total{code=\"500\"} 1\n");
}

TEST(Metrics, HistogramLabelsAndConcurrentUpdates) {
  MetricsRegistry r;
  auto& c = r.counter("n_total", "N.");
  auto& h = r.histogram("h", "H.", {1.0}, "kind=\"a\"");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000.0);
  auto s = h.snapshot();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.cumulative_counts[0], 40000u);
  std::string text = r.render();
  EXPECT_NE(text.find("h_bucket{kind=\"a\",le=\"1\"} 40000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("h_count{kind=\"a\"} 40000\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace keel::server
