// What reaches the sink: stop token ids, end-of-generation (and ignore_eos), stop strings across token
// boundaries, logprobs, penalties, all against the one-at-a-time reference on the tiny HF Llama.
#include <algorithm>

#include <gtest/gtest.h>

#include "sample/logprobs.h"
#include "sched/scheduler.h"
#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::greedy_request;
using test::make_prompt;
using test::reference_tokens;

class StreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = test::load_tiny_llama().release(); }
  static void TearDownTestSuite() { delete model_; }
  void SetUp() override { ASSERT_NE(model_, nullptr); }

  Collected run_one(const tokenizer::Tokenizer& tok, const GenerateRequest& r) {
    auto s = Scheduler::create(
        {.model = model_,
         .tokenizer = &tok,
         .config = {.kv_tokens = 256, .max_batch_tokens = 16, .prefill_chunk = 16, .max_running = 4}});
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    Collector col;
    EXPECT_TRUE((*s)->enqueue(r, col.sink()).ok());
    for (int i = 0; i < 500 && !(*s)->idle(); ++i) (*s)->step();
    EXPECT_TRUE((*s)->idle());
    return col.get(r.id);
  }

  // Index of the first token in out[from..] that does not occur before it.
  static size_t first_new_token(const std::vector<int32_t>& out, size_t from) {
    for (size_t k = from; k < out.size(); ++k) {
      if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k), out[k]) ==
          out.begin() + static_cast<std::ptrdiff_t>(k))
        return k;
    }
    return out.size();
  }

  static model::Model* model_;
};

model::Model* StreamTest::model_ = nullptr;

TEST_F(StreamTest, StopTokenIdEndsTheSample) {
  auto tok = test::tiny_tokenizer(128);
  const std::vector<int32_t> prompt = make_prompt(12, 21);
  const std::vector<int32_t> ref = reference_tokens(*model_, prompt, 20);
  const size_t k = first_new_token(ref, 3);
  ASSERT_LT(k, ref.size());
  GenerateRequest r = greedy_request(1, prompt, 20);
  r.stop.stop_token_ids = {ref[k]};
  Collected c = run_one(*tok, r);
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(k) + 1));
  EXPECT_EQ(c.text, tok->decode(std::vector<int32_t>(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(k)), true))
      << "the stop token's own text is not emitted";
  EXPECT_EQ(c.last.completion_tokens, static_cast<int32_t>(k) + 1);
}

TEST_F(StreamTest, EndOfGenerationUnlessIgnored) {
  const std::vector<int32_t> prompt = make_prompt(9, 22);
  const std::vector<int32_t> ref = reference_tokens(*model_, prompt, 20);
  const size_t k = first_new_token(ref, 2);
  ASSERT_LT(k, ref.size());
  auto tok = test::tiny_tokenizer(128, ref[k]);  // make that token the end-of-generation id
  GenerateRequest r = greedy_request(1, prompt, 20);
  r.stop.ignore_eos = false;
  Collected c = run_one(*tok, r);
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.tokens.size(), k + 1);
  r.stop.ignore_eos = true;
  Collected ignored = run_one(*tok, r);
  EXPECT_EQ(ignored.finish, FinishReason::kLength);
  EXPECT_EQ(ignored.tokens, ref);
}

TEST_F(StreamTest, StopStringAcrossTokensIsCut) {
  auto tok = test::tiny_tokenizer(128);
  const std::vector<int32_t> prompt = make_prompt(15, 23);
  const std::vector<int32_t> ref = reference_tokens(*model_, prompt, 24);
  const std::string full = tok->decode(ref, true);
  // The last letter of token 4's text and the first of token 5's: completes only with token 5.
  const std::string before = tok->decode(std::vector<int32_t>(ref.begin(), ref.begin() + 5), true);
  ASSERT_GE(before.size(), 1u);
  const std::string stop = full.substr(before.size() - 1, 2);
  const size_t at = full.find(stop);
  ASSERT_NE(at, std::string::npos);
  size_t n_tokens = 0;  // tokens until the stop string first completes
  while (
      tok->decode(std::vector<int32_t>(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(n_tokens)), true).size() <
      at + stop.size()) {
    ++n_tokens;
  }
  GenerateRequest r = greedy_request(1, prompt, 24);
  r.stop.stop_strings = {stop, "zzzzzz"};
  Collected c = run_one(*tok, r);
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.text, full.substr(0, at));
  EXPECT_EQ(c.tokens.size(), n_tokens);

  r.stop.stop_strings = {"zzzzzz"};  // never completes: the held-back text comes out at the end
  Collected none = run_one(*tok, r);
  EXPECT_EQ(none.finish, FinishReason::kLength);
  EXPECT_EQ(none.text, full);
}

TEST_F(StreamTest, LogprobsPerToken) {
  auto tok = test::tiny_tokenizer(128);
  GenerateRequest r = greedy_request(1, make_prompt(10, 24), 6);
  r.top_logprobs = 3;
  Collected c = run_one(*tok, r);
  ASSERT_EQ(c.logprobs.size(), 6u);
  ASSERT_EQ(c.top_logprobs.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(c.logprobs[i].token, c.tokens[i]);
    EXPECT_LE(c.logprobs[i].logprob, 0.0f);
    ASSERT_EQ(c.top_logprobs[i].size(), 3u);
    EXPECT_EQ(c.top_logprobs[i][0].token, c.tokens[i]) << "greedy picks the most likely token";
    EXPECT_FLOAT_EQ(c.top_logprobs[i][0].logprob, c.logprobs[i].logprob);
    EXPECT_GE(c.top_logprobs[i][1].logprob, c.top_logprobs[i][2].logprob);
  }
  r.top_logprobs = -1;
  Collected without = run_one(*tok, r);
  EXPECT_TRUE(without.logprobs.empty());
  EXPECT_EQ(without.tokens, c.tokens);
}

TEST_F(StreamTest, PenaltiesAndBiasMatchTheReference) {
  auto tok = test::tiny_tokenizer(128);
  const std::vector<int32_t> prompt = make_prompt(14, 25);
  GenerateRequest r = greedy_request(1, prompt, 16);
  r.sampling.repetition_penalty = 1.3f;
  r.sampling.frequency_penalty = 0.5f;
  r.sampling.presence_penalty = 0.2f;
  r.sampling.logit_bias = {{prompt[0], 5.0f}};
  Collected c = run_one(*tok, r);
  EXPECT_EQ(c.tokens, reference_tokens(*model_, prompt, 16, r.sampling));
  EXPECT_NE(c.tokens, reference_tokens(*model_, prompt, 16)) << "the processors changed nothing";
}

}  // namespace
}  // namespace keel::sched
