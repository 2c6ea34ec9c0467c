// Percentiles and the run report, against values worked out by hand and numpy.percentile's
// "linear" definition.
#include "loadgen/stats.h"

#include <gtest/gtest.h>

namespace keel::loadgen {
namespace {

TEST(Percentile, LinearInterpolationBetweenClosestRanks) {
  const std::vector<double> v = {1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 10);
  // numpy.percentile([1,2,3,4,10], 95) = 4 + 0.8 * 6 = 8.8; 99 -> 4 + 0.96 * 6 = 9.76
  EXPECT_NEAR(percentile(v, 0.95), 8.8, 1e-12);
  EXPECT_NEAR(percentile(v, 0.99), 9.76, 1e-12);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.99), 7);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0);
}

TEST(Percentile, UniformSequenceMatchesRank) {
  std::vector<double> v;
  for (int i = 0; i <= 1000; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 500);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 990);
}

TEST(Summarize, SortsAndAverages) {
  Summary s = summarize({5, 1, 3});
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p50, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_EQ(summarize({}).n, 0);
}

RequestResult ok_result(int64_t start, std::vector<int64_t> tokens, int64_t end, int32_t n_out) {
  RequestResult r;
  r.ok = true;
  r.http_status = 200;
  r.start_us = start;
  r.token_times_us = std::move(tokens);
  r.end_us = end;
  r.n_output_tokens = n_out;
  r.usage_reported = true;
  return r;
}

TEST(MakeReport, TimingsThroughputAndErrors) {
  std::vector<RequestResult> results;
  results.push_back(ok_result(0, {10'000, 20'000, 40'000}, 50'000, 3));           // ttft 10 ms, gaps 10, 20
  results.push_back(ok_result(1'000'000, {1'030'000, 1'060'000}, 2'000'000, 2));  // ttft 30 ms, gap 30
  RequestResult bad;
  bad.start_us = 500'000;
  bad.end_us = 600'000;
  bad.http_status = 429;
  bad.error = "HTTP 429: queue full";
  results.push_back(bad);
  results.push_back(bad);

  Report r = make_report(results);
  EXPECT_EQ(r.n_requests, 4);
  EXPECT_EQ(r.n_ok, 2);
  EXPECT_EQ(r.n_errors, 2);
  EXPECT_DOUBLE_EQ(r.duration_s, 2.0);
  EXPECT_DOUBLE_EQ(r.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(r.output_token_throughput, 2.5);
  EXPECT_EQ(r.ttft_ms.n, 2);
  EXPECT_DOUBLE_EQ(r.ttft_ms.p50, 20);  // mean of 10 and 30 by interpolation
  EXPECT_EQ(r.itl_ms.n, 3);
  EXPECT_DOUBLE_EQ(r.itl_ms.p50, 20);
  EXPECT_DOUBLE_EQ(r.itl_ms.max, 30);
  EXPECT_EQ(r.tpot_ms.n, 2);
  EXPECT_DOUBLE_EQ(r.tpot_ms.mean, (15.0 + 30.0) / 2);
  EXPECT_DOUBLE_EQ(r.e2e_ms.max, 1000);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].first, "HTTP 429: queue full");
  EXPECT_EQ(r.errors[0].second, 2);
}

TEST(MakeReport, EmptyRunIsAllZero) {
  Report r = make_report({});
  EXPECT_EQ(r.n_requests, 0);
  EXPECT_EQ(r.duration_s, 0);
  EXPECT_EQ(r.request_throughput, 0);
}

}  // namespace
}  // namespace keel::loadgen
