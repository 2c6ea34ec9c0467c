// prom_gauge: a replica's polled Prometheus gauges. Values that are not counts (NaN, ±Inf, negative,
// huge, missing) read as -1 (unknown), never as an undefined cast (UBSan flags those).
#include "router/prom_gauge.h"

#include <gtest/gtest.h>

namespace keel::router {
namespace {

constexpr std::string_view kText =
    "# HELP keel_num_requests_waiting Requests queued.\n"
    "# TYPE keel_num_requests_waiting gauge\n"
    "keel_num_requests_waiting_total 99\n"
    "x_keel_num_requests_waiting 98\n"
    "keel_num_requests_waiting{replica=\"a\"} 97\n"
    "keel_num_requests_waiting 3\n"
    "keel_kv_slots_used 1.5e3\n"
    "keel_kv_slots_total NaN\n"
    "keel_num_requests_running +Inf\n"
    "keel_a -2\n"
    "keel_b 1e300\n"
    "keel_c abc\n";

TEST(PromGauge, ReadsTheUnlabelledLineOfThatNameOnly) {
  EXPECT_EQ(prom_gauge(kText, "keel_num_requests_waiting"), 3);
  EXPECT_EQ(prom_gauge(kText, "keel_kv_slots_used"), 1500);
  EXPECT_EQ(prom_gauge(kText, "keel_missing"), -1);
  EXPECT_EQ(prom_gauge("keel_x 7", "keel_x"), 7);  // first line, no newline at the end
  EXPECT_EQ(prom_gauge("keel_x", "keel_x"), -1);   // no value
}

TEST(PromGauge, ValuesThatAreNotCountsAreUnknown) {
  EXPECT_EQ(prom_gauge(kText, "keel_kv_slots_total"), -1);
  EXPECT_EQ(prom_gauge(kText, "keel_num_requests_running"), -1);
  EXPECT_EQ(prom_gauge(kText, "keel_a"), -1);
  EXPECT_EQ(prom_gauge(kText, "keel_b"), -1);
  EXPECT_EQ(prom_gauge(kText, "keel_c"), -1);
}

}  // namespace
}  // namespace keel::router
