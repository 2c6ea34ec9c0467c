// Statistical tests of the sampler: for each filter, >= 10^5 seeded draws must match the exact
// filtered softmax computed independently here (chi-square), and seeds must reproduce.
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace keel::sample {
namespace {

// Independent reference: sort by logit, apply top-k, then softmax at T, min-p, top-p, renormalise.
std::vector<double> reference(const std::vector<float>& logits, const SamplingParams& p) {
  const size_t n = logits.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  size_t keep = (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) ? static_cast<size_t>(p.top_k) : n;
  std::vector<double> w(keep);
  double z = 0;
  for (size_t i = 0; i < keep; ++i) z += (w[i] = std::exp((logits[order[i]] - logits[order[0]]) / p.temperature));
  for (auto& v : w) v /= z;
  size_t cut = keep;
  for (size_t i = 0; i < keep; ++i) {
    if (w[i] < p.min_p * w[0]) { cut = i; break; }
  }
  double acc = 0;
  for (size_t i = 0; i < cut; ++i) {
    acc += w[i];
    if (acc >= p.top_p) { cut = i + 1; break; }
  }
  std::vector<double> out(n, 0.0);
  double kept = 0;
  for (size_t i = 0; i < cut; ++i) kept += w[i];
  for (size_t i = 0; i < cut; ++i) out[order[i]] = w[i] / kept;
  return out;
}

// Chi-square statistic of counts against expected probabilities (bins with expectation < 5 merged).
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n, int* dof) {
  double stat = 0, rest_obs = 0, rest_exp = 0;
  int bins = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    double e = probs[i] * n;
    if (e < 5) { rest_obs += counts[i]; rest_exp += e; continue; }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++bins;
  }
  if (rest_exp >= 5) { stat += (rest_obs - rest_exp) * (rest_obs - rest_exp) / rest_exp; ++bins; }
  *dof = bins - 1;
  return stat;
}

std::vector<float> random_logits(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

void check_distribution(const SamplingParams& p) {
  const auto logits = random_logits(40, 7);
  const auto want = reference(logits, p);
  const int n_draws = 200000;
  std::vector<int> counts(logits.size(), 0);
  SamplerScratch scratch;
  SamplingParams q = p;
  for (int i = 0; i < n_draws; ++i) {
    q.seed = static_cast<uint64_t>(i) * 7919u + 1;  // fresh stream per draw
    int32_t t = sample_token(logits, q, /*position=*/i % 97, scratch);
    ASSERT_GE(t, 0);
    ASSERT_GT(want[static_cast<size_t>(t)], 0.0) << "drew a token the filters exclude: " << t;
    counts[static_cast<size_t>(t)]++;
  }
  int dof = 0;
  double stat = chi_square(counts, want, n_draws, &dof);
  ASSERT_GT(dof, 0);
  // Wilson-Hilferty approximation of the chi-square 99.99th percentile.
  const double z = 3.719;
  const double k = dof;
  const double crit = k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
  EXPECT_LT(stat, crit) << "dof=" << dof;
}

TEST(Sampler, TemperatureMatchesSoftmax) { check_distribution({.temperature = 0.7f}); }
TEST(Sampler, TopKMatches) { check_distribution({.temperature = 1.0f, .top_k = 5}); }
TEST(Sampler, TopPMatches) { check_distribution({.temperature = 1.2f, .top_p = 0.8f}); }
TEST(Sampler, MinPMatches) { check_distribution({.temperature = 1.0f, .min_p = 0.05f}); }
TEST(Sampler, CombinedFiltersMatch) { check_distribution({.temperature = 0.9f, .top_k = 20, .top_p = 0.9f, .min_p = 0.01f}); }

TEST(Sampler, GreedyIsArgmax) {
  const auto logits = random_logits(1000, 3);
  SamplerScratch s;
  const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
  EXPECT_EQ(sample_token(logits, {.temperature = 0.0f}, 0, s), best);
}

TEST(Sampler, SeedReproducesAndVaries) {
  const auto logits = random_logits(500, 5);
  SamplerScratch s;
  std::vector<int32_t> a, b, c;
  for (int pos = 0; pos < 64; ++pos) {
    a.push_back(sample_token(logits, {.temperature = 1.0f, .seed = 42}, pos, s));
    b.push_back(sample_token(logits, {.temperature = 1.0f, .seed = 42}, pos, s));
    c.push_back(sample_token(logits, {.temperature = 1.0f, .seed = 43}, pos, s));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Sampler, ValidateRejectsOutOfRange) {
  EXPECT_FALSE((SamplingParams{.temperature = -1.0f}).validate().ok());
  EXPECT_FALSE((SamplingParams{.temperature = NAN}).validate().ok());
  EXPECT_FALSE((SamplingParams{.top_k = -2}).validate().ok());
  EXPECT_FALSE((SamplingParams{.top_p = 0.0f}).validate().ok());
  EXPECT_FALSE((SamplingParams{.min_p = 1.5f}).validate().ok());
  EXPECT_TRUE((SamplingParams{.temperature = 0.0f, .top_k = 3, .top_p = 0.5f}).validate().ok());
}

}  // namespace
}  // namespace keel::sample
