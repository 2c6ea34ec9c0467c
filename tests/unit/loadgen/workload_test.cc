// Workload generation: determinism, lengths within bounds, the shared-prefix structure, and flag
// validation; arrival schedules: burst grouping and the Poisson mean rate.
#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "loadgen/arrival.h"

namespace keel::loadgen {
namespace {

int32_t n_words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int32_t n = 0;
  while (in >> w) ++n;
  return n;
}

TEST(Workload, RandomIsDeterministicAndWithinBounds) {
  WorkloadConfig c{.kind = WorkloadKind::kRandom,
                   .n_requests = 500,
                   .seed = 7,
                   .input_words_min = 3,
                   .input_words_max = 9,
                   .output_tokens_min = 2,
                   .output_tokens_max = 5};
  ASSERT_TRUE(c.validate().ok());
  auto a = make_workload(c);
  auto b = make_workload(c);
  ASSERT_EQ(a.size(), 500u);
  std::set<int32_t> lengths, max_tokens;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].user, b[i].user);
    EXPECT_TRUE(a[i].system.empty());
    EXPECT_EQ(a[i].prefix_group, -1);
    lengths.insert(n_words(a[i].user));
    max_tokens.insert(a[i].max_tokens);
  }
  EXPECT_EQ(lengths, (std::set<int32_t>{3, 4, 5, 6, 7, 8, 9}));  // every length in range appears, no other
  EXPECT_EQ(max_tokens, (std::set<int32_t>{2, 3, 4, 5}));
  c.seed = 8;
  EXPECT_NE(make_workload(c)[0].user + make_workload(c)[1].user, a[0].user + a[1].user);
}

TEST(Workload, SharedPrefixHasTenantsTimesPromptsAndUniqueQuestions) {
  WorkloadConfig c{.kind = WorkloadKind::kSharedPrefix,
                   .n_requests = 400,
                   .seed = 1,
                   .n_tenants = 3,
                   .n_prompts_per_tenant = 2,
                   .prefix_words = 50,
                   .question_words = 4};
  ASSERT_TRUE(c.validate().ok());
  auto reqs = make_workload(c);
  std::map<int32_t, std::string> prefix_of_group;
  std::set<std::string> questions;
  for (const auto& r : reqs) {
    ASSERT_GE(r.prefix_group, 0);
    ASSERT_LT(r.prefix_group, 6);
    auto [it, inserted] = prefix_of_group.emplace(r.prefix_group, r.system);
    EXPECT_EQ(it->second, r.system);  // one prompt per group
    EXPECT_GE(n_words(r.system), 50);
    questions.insert(r.user);
  }
  EXPECT_EQ(prefix_of_group.size(), 6u);
  std::set<std::string> distinct;
  for (const auto& [g, p] : prefix_of_group) distinct.insert(p);
  EXPECT_EQ(distinct.size(), 6u);
  EXPECT_EQ(questions.size(), reqs.size());
  // More requests keep the same system prompts.
  c.n_requests = 10;
  for (const auto& r : make_workload(c)) EXPECT_EQ(prefix_of_group.at(r.prefix_group), r.system);
}

TEST(Workload, BadConfigsAreRejected) {
  EXPECT_FALSE((WorkloadConfig{.n_requests = 0}).validate().ok());
  EXPECT_FALSE((WorkloadConfig{.input_words_min = 5, .input_words_max = 4}).validate().ok());
  EXPECT_FALSE((WorkloadConfig{.output_tokens_min = 0}).validate().ok());
  EXPECT_FALSE((WorkloadConfig{.n_tenants = 0}).validate().ok());
  EXPECT_FALSE(parse_workload_kind("zipf").ok());
  EXPECT_TRUE(parse_workload_kind("shared-prefix").ok());
}

TEST(Arrival, ValidationNeedsExactlyOneMode) {
  EXPECT_TRUE((ArrivalConfig{.concurrency = 4}).validate().ok());
  EXPECT_TRUE((ArrivalConfig{.rate_rps = 2.5, .burst = 3}).validate().ok());
  EXPECT_FALSE((ArrivalConfig{}).validate().ok());
  EXPECT_FALSE((ArrivalConfig{.concurrency = 4, .rate_rps = 1}).validate().ok());
  EXPECT_FALSE((ArrivalConfig{.rate_rps = -1}).validate().ok());
  EXPECT_FALSE((ArrivalConfig{.rate_rps = NAN}).validate().ok());
  EXPECT_FALSE((ArrivalConfig{.rate_rps = 1, .burst = 0}).validate().ok());
  EXPECT_FALSE((ArrivalConfig{.concurrency = 2, .burst = 2}).validate().ok());
}

TEST(Arrival, PoissonMeanRateAndExponentialGaps) {
  const int64_t n = 200'000;
  auto t = arrival_offsets_us(ArrivalConfig{.rate_rps = 50.0, .seed = 3}, n);
  ASSERT_EQ(static_cast<int64_t>(t.size()), n);
  EXPECT_EQ(t[0], 0);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  // Mean gap 20 ms: standard error of the mean over 2e5 exponential gaps is 20/sqrt(2e5) = 0.045 ms.
  const double mean_gap_ms = static_cast<double>(t.back()) / 1e3 / static_cast<double>(n - 1);
  EXPECT_NEAR(mean_gap_ms, 20.0, 0.3);
  // P(gap > mean) = 1/e for an exponential distribution.
  int64_t n_long = 0;
  for (int64_t i = 1; i < n; ++i) n_long += (t[i] - t[i - 1]) > 20'000 ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(n_long) / static_cast<double>(n - 1), std::exp(-1.0), 0.01);
}

TEST(Arrival, BurstsArriveTogetherAtTheSameMeanRate) {
  auto t = arrival_offsets_us(ArrivalConfig{.rate_rps = 10.0, .burst = 4, .seed = 5}, 40'002);
  ASSERT_EQ(t.size(), 40'002u);
  for (size_t i = 0; i + 4 <= t.size(); i += 4) {
    EXPECT_EQ(t[i], t[i + 3]);
    if (i + 4 < t.size()) {
      EXPECT_LT(t[i + 3], t[i + 4]);
    }
  }
  const double rate = static_cast<double>(t.size() - 2) / (static_cast<double>(t.back()) / 1e6);
  EXPECT_NEAR(rate, 10.0, 0.3);
}

}  // namespace
}  // namespace keel::loadgen
