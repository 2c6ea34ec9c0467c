#include "sample/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sample/logprobs.h"

namespace keel::sample {
namespace {

TEST(LogitsProcessors, LogitBiasAdds) {
  std::vector<float> l = {1, 2, 3, 4};
  SamplingParams p{.logit_bias = {{1, 5.0f}, {3, -100.0f}}};
  apply_processors(l, p, TokenHistory{});
  EXPECT_FLOAT_EQ(l[1], 7.0f);
  EXPECT_FLOAT_EQ(l[3], -96.0f);
  EXPECT_FLOAT_EQ(l[0], 1.0f);
}

TEST(LogitsProcessors, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  std::vector<float> l = {2.0f, -2.0f, 2.0f, 1.0f};
  TokenHistory h;
  std::vector<int32_t> prompt = {0, 1};
  h.add_prompt(prompt);
  h.add_output(0);
  h.add_output(3);
  apply_processors(l, {.repetition_penalty = 2.0f}, h);
  EXPECT_FLOAT_EQ(l[0], 1.0f);   // once, though seen in prompt and output
  EXPECT_FLOAT_EQ(l[1], -4.0f);
  EXPECT_FLOAT_EQ(l[2], 2.0f);   // never seen
  EXPECT_FLOAT_EQ(l[3], 0.5f);
}

TEST(LogitsProcessors, FrequencyAndPresenceCountOutputOnly) {
  std::vector<float> l = {0, 0, 0};
  TokenHistory h;
  std::vector<int32_t> prompt = {2, 2, 2};
  h.add_prompt(prompt);
  h.add_output(0);
  h.add_output(0);
  h.add_output(1);
  apply_processors(l, {.frequency_penalty = 0.5f, .presence_penalty = 0.25f}, h);
  EXPECT_FLOAT_EQ(l[0], -(2 * 0.5f + 0.25f));
  EXPECT_FLOAT_EQ(l[1], -(0.5f + 0.25f));
  EXPECT_FLOAT_EQ(l[2], 0.0f);
}

TEST(LogitsProcessors, ValidationNamesTheProblem) {
  EXPECT_FALSE((SamplingParams{.frequency_penalty = 3.0f}).validate().ok());
  EXPECT_FALSE((SamplingParams{.repetition_penalty = 0.0f}).validate().ok());
  EXPECT_FALSE((SamplingParams{.logit_bias = {{-1, 1.0f}}}).validate().ok());
  EXPECT_FALSE((SamplingParams{.logit_bias = {{1, 101.0f}}}).validate().ok());
  Status st = validate_for_vocab({.logit_bias = {{10, 1.0f}}}, 10);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("outside the vocabulary"), std::string::npos);
}

TEST(Logprobs, MatchLogSoftmaxAndOrderTopK) {
  std::vector<float> l = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f};
  double z = 0;
  for (float v : l) z += std::exp(static_cast<double>(v));
  auto lp = compute_logprobs(l, 4, 3);
  EXPECT_NEAR(lp.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);  // ties broken by lower id
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 4);
  EXPECT_NEAR(lp.top[2].second, lp.logprob, 1e-6);
  double total = 0;
  for (size_t i = 0; i < l.size(); ++i) total += std::exp(compute_logprobs(l, static_cast<int32_t>(i), 0).logprob);
  EXPECT_NEAR(total, 1.0, 1e-6);
}

}  // namespace
}  // namespace keel::sample
