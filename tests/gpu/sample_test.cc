// Backend::sample_rows on cuda against the host sampler (sample::sample_token after
// sample::apply_processors and sample::apply_token_mask, as Scheduler::sample runs them): greedy and
// seeded stochastic draws (temperature, top-k, top-p, min-p and their combinations, ties at the
// boundaries, penalties, logit_bias, grammar masks, several samples sharing one logits row) must pick
// the same token id, on fresh random logits (seed printed) at Llama-3 and odd vocabulary sizes. The
// algorithms are the same (sampler.h), so equality is exact; a distribution test checks the draws
// against sample::sampling_distribution as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "sample/constraint.h"
#include "sample/logits_processors.h"
#include "sample/sampler.h"

namespace keel::gpu_test {
namespace {

using backend::DeviceSampleProc;
using backend::DeviceSampleRow;

// One sample to draw: its logits row, parameters, history and optional mask.
struct Case {
  int32_t row = 0;
  sample::SamplingParams params;
  int64_t position = 0;
  sample::TokenHistory history;
  std::vector<uint32_t> mask;  // empty: unconstrained
};

int32_t host_token(std::span<const float> logits, const Case& c) {
  std::vector<float> row(logits.begin(), logits.end());
  if (sample::has_processors(c.params)) sample::apply_processors(row, c.params, c.history);
  if (!c.mask.empty()) sample::apply_token_mask(row, c.mask);
  sample::SamplerScratch scratch;
  return sample::sample_token(row, c.params, c.position, scratch);
}

// The device input for cases, built as Scheduler::sample_on_device builds it.
std::vector<int32_t> device_tokens(const Tensor& logits, const std::vector<Case>& cases, int64_t vocab) {
  std::vector<DeviceSampleRow> rows;
  std::vector<DeviceSampleProc> procs;
  std::vector<uint32_t> masks;
  for (const Case& c : cases) {
    const sample::SamplingParams& p = c.params;
    DeviceSampleRow d{.logit_row = c.row, .temperature = p.temperature, .top_k = p.top_k, .top_p = p.top_p,
                      .min_p = p.min_p, .seed = p.seed, .position = c.position,
                      .repetition_penalty = p.repetition_penalty, .frequency_penalty = p.frequency_penalty,
                      .presence_penalty = p.presence_penalty};
    if (sample::has_processors(p)) {
      d.proc_begin = static_cast<int32_t>(procs.size());
      std::vector<DeviceSampleProc> mine;
      auto entry = [&](int32_t id) -> DeviceSampleProc& {
        for (DeviceSampleProc& e : mine) {
          if (e.token == id) return e;
        }
        mine.push_back({.token = id});
        return mine.back();
      };
      for (const auto& [id, bias] : p.logit_bias) entry(id).bias += bias;
      if (p.repetition_penalty != 1.0f) {
        for (const auto& [id, n] : c.history.prompt_counts()) entry(id).seen = 1;
      }
      for (const auto& [id, n] : c.history.output_counts()) {
        DeviceSampleProc& e = entry(id);
        e.seen = 1;
        e.n_output = n;
      }
      procs.insert(procs.end(), mine.begin(), mine.end());
      d.n_proc = static_cast<int32_t>(mine.size());
    }
    if (!c.mask.empty()) {
      d.mask_offset = static_cast<int32_t>(masks.size());
      masks.insert(masks.end(), c.mask.begin(), c.mask.end());
    }
    rows.push_back(d);
  }
  std::vector<int32_t> tokens(cases.size(), -1);
  (void)vocab;
  backends().gpu->sample_rows(logits, {.rows = rows, .procs = procs, .masks = masks}, tokens);
  return tokens;
}

struct Logits {
  std::vector<float> host;
  Buffer dev;
};

// rows x vocab logits: N(0, scale), or with `levels` > 0 rounded to 1/levels steps (many ties).
Logits make_logits(std::mt19937_64& rng, int64_t rows, int64_t vocab, float scale, int levels = 0) {
  Logits l;
  l.host = random_floats(rng, static_cast<size_t>(rows * vocab), scale);
  if (levels > 0) {
    for (float& v : l.host) v = std::round(v * static_cast<float>(levels)) / static_cast<float>(levels);
  }
  l.dev = make(*backends().gpu, DType::kF32, tensor::make_shape({rows, vocab}), l.host);
  return l;
}

std::span<const float> row_of(const Logits& l, int32_t r, int64_t vocab) {
  return {l.host.data() + static_cast<size_t>(r) * static_cast<size_t>(vocab), static_cast<size_t>(vocab)};
}

void expect_same(const Logits& l, const std::vector<Case>& cases, int64_t vocab, uint64_t seed) {
  const std::vector<int32_t> dev = device_tokens(l.dev.tensor(), cases, vocab);
  int mismatches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const int32_t want = host_token(row_of(l, cases[i].row, vocab), cases[i]);
    if (dev[i] != want && ++mismatches <= 5) {
      const sample::SamplingParams& p = cases[i].params;
      ADD_FAILURE() << "case " << i << " (row " << cases[i].row << ", T " << p.temperature << ", top_k " << p.top_k
                    << ", top_p " << p.top_p << ", min_p " << p.min_p << ", seed " << p.seed << "): device "
                    << dev[i] << ", host " << want << " (input seed " << seed << ")";
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << cases.size();
}

// Parameter sets covering each filter alone and combined.
std::vector<sample::SamplingParams> param_grid() {
  std::vector<sample::SamplingParams> g;
  for (float t : {0.0f, 0.6f, 1.0f, 1.7f}) {
    for (int32_t k : {0, 1, 7, 50}) {
      for (float p : {1.0f, 0.9f, 0.35f}) {
        for (float m : {0.0f, 0.08f}) g.push_back({.temperature = t, .top_k = k, .top_p = p, .min_p = m});
      }
    }
  }
  return g;
}

class SampleRows : public ::testing::TestWithParam<int64_t> {};

TEST_P(SampleRows, SameTokensAsHostSampler) {
  const int64_t vocab = GetParam();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  // Scale 1 and 4 spread top-p's mass over thousands of tokens (the full-row path); 12 and the spiked
  // rows (a model's usual shape: a few tokens far above the rest) keep it within a few hundred (the
  // compact path, sampling.cu).
  for (float scale : {1.0f, 4.0f, 12.0f, -1.0f}) {
    const int64_t rows = 24;
    Logits l = make_logits(rng, rows, vocab, scale < 0 ? 2.0f : scale);
    if (scale < 0) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int s = 0; s < 40; ++s) {
          l.host[static_cast<size_t>(r * vocab) + rng() % static_cast<uint64_t>(vocab)] += 6.0f + static_cast<float>(s % 9);
        }
      }
      l.dev = make(*backends().gpu, DType::kF32, tensor::make_shape({rows, vocab}), l.host);
    }
    std::vector<Case> cases;
    for (const sample::SamplingParams& p : param_grid()) {
      Case c{.row = static_cast<int32_t>(rng() % rows), .params = p, .position = static_cast<int64_t>(rng() % 5000)};
      c.params.seed = rng();
      cases.push_back(std::move(c));
    }
    SCOPED_TRACE("scale " + std::to_string(scale));
    expect_same(l, cases, vocab, seed);
  }
}

TEST_P(SampleRows, TiesAtTheBoundariesInIdOrder) {
  const int64_t vocab = GetParam();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  Logits l = make_logits(rng, 8, vocab, 2.0f, /*levels=*/2);  // values k/2: thousands of ties per value
  // Row 0: +0 and -0 (equal logits, ties in id order) around a few larger values, so the top-k and
  // top-p boundaries fall inside a block of mixed-sign zeros.
  for (int64_t i = 0; i < vocab; ++i) l.host[static_cast<size_t>(i)] = (rng() & 1) ? 0.0f : -0.0f;
  for (int i = 0; i < 20; ++i) l.host[static_cast<size_t>(rng() % static_cast<uint64_t>(vocab))] = 1.5f;
  l.dev = make(*backends().gpu, DType::kF32, tensor::make_shape({8, vocab}), l.host);
  std::vector<Case> cases;
  for (const sample::SamplingParams& p : param_grid()) {
    for (int rep = 0; rep < 2; ++rep) {
      Case c{.row = static_cast<int32_t>(rng() % 8), .params = p, .position = static_cast<int64_t>(rng() % 5000)};
      c.params.seed = rng();
      cases.push_back(std::move(c));
    }
  }
  expect_same(l, cases, vocab, seed);
}

TEST_P(SampleRows, ProcessorsAndMasks) {
  const int64_t vocab = GetParam();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const int64_t rows = 6;
  Logits l = make_logits(rng, rows, vocab, 3.0f);
  std::vector<Case> cases;
  const auto id = [&] { return static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab)); };
  for (int i = 0; i < 48; ++i) {
    Case c{.row = static_cast<int32_t>(i % rows), .position = static_cast<int64_t>(rng() % 3000)};
    sample::SamplingParams& p = c.params;
    p.temperature = i % 4 == 0 ? 0.0f : 0.8f;
    p.top_k = i % 3 == 0 ? 40 : 0;
    p.top_p = i % 5 == 0 ? 0.8f : 1.0f;
    p.seed = rng();
    p.repetition_penalty = i % 2 == 0 ? 1.3f : 1.0f;
    p.frequency_penalty = i % 3 == 1 ? 0.7f : 0.0f;
    p.presence_penalty = i % 4 == 1 ? -0.5f : 0.0f;
    if (i % 6 == 2) p.logit_bias = {{id(), 5.0f}, {id(), -100.0f}, {0, 3.0f}};
    std::vector<int32_t> prompt(200);
    for (int32_t& t : prompt) t = id();
    // Bias the top tokens of the row into the history, so the penalties change the outcome.
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::span<const float> row = row_of(l, c.row, vocab);
    std::partial_sort(order.begin(), order.begin() + 20, order.end(),
                      [&](int32_t a, int32_t b) { return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)]; });
    prompt.insert(prompt.end(), order.begin(), order.begin() + 6);
    c.history.add_prompt(prompt);
    for (int k = 0; k < 30; ++k) c.history.add_output(k % 3 == 0 ? order[static_cast<size_t>(k % 12)] : id());
    if (i % 3 != 1) {  // a grammar-like mask: about half the tokens, the row's top few sometimes among them
      c.mask.assign(sample::mask_words(vocab), 0u);
      for (uint32_t& w : c.mask) w = static_cast<uint32_t>(rng());
    }
    cases.push_back(std::move(c));
  }
  expect_same(l, cases, vocab, seed);
}

INSTANTIATE_TEST_SUITE_P(Vocab, SampleRows, ::testing::Values(int64_t{128256}, int64_t{50257}, int64_t{1000}));

// Draws over many positions follow sampling_distribution (top-k 6, top-p 0.9 at T 0.9).
TEST(SampleRowsDistribution, MatchesTheFilteredSoftmax) {
  const int64_t vocab = 32000;
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  Logits l = make_logits(rng, 1, vocab, 1.0f);
  for (int i = 0; i < 6; ++i) l.host[static_cast<size_t>(rng() % vocab)] = 4.0f + 0.3f * static_cast<float>(i);
  l.dev = make(*backends().gpu, DType::kF32, tensor::make_shape({1, vocab}), l.host);
  const sample::SamplingParams p{.temperature = 0.9f, .top_k = 6, .top_p = 0.9f, .seed = rng()};
  const int n = 20000;
  std::vector<Case> cases(n);
  for (int i = 0; i < n; ++i) cases[static_cast<size_t>(i)] = Case{.row = 0, .params = p, .position = i};
  const std::vector<int32_t> dev = device_tokens(l.dev.tensor(), cases, vocab);
  const std::vector<double> want = sample::sampling_distribution(l.host, p);
  std::vector<int> hits(static_cast<size_t>(vocab), 0);
  for (int32_t t : dev) ++hits[static_cast<size_t>(t)];
  for (int64_t t = 0; t < vocab; ++t) {
    const double q = want[static_cast<size_t>(t)];
    const double got = hits[static_cast<size_t>(t)] / static_cast<double>(n);
    if (q == 0.0) {
      EXPECT_EQ(hits[static_cast<size_t>(t)], 0) << "token " << t << " outside the filtered set (seed " << seed << ")";
    } else {
      EXPECT_NEAR(got, q, 5.0 * std::sqrt(q * (1 - q) / n) + 1e-9) << "token " << t << " (seed " << seed << ")";
    }
  }
}

}  // namespace
}  // namespace keel::gpu_test
