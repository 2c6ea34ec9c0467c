// Structured output through the scheduler on the tiny HF Llama (two-letter vocabulary): a grammar
// mask composed with the other logits processors gives exactly the tokens of a one-sequence-at-a-time
// reference that masks with its own GrammarMatcher; every finished output matches the regex (checked
// with std::regex, independent of keel's grammar code); n > 1 samples keep their own matcher; the
// matcher survives preemption; jump-forward changes no output but saves decode steps; a grammar that
// admits no token of the vocabulary fails the request instead of emitting text it forbids.
#include <limits>
#include <regex>

#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "grammar/matcher.h"
#include "sched/grammar_constraint.h"
#include "sched/scheduler.h"
#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::make_prompt;
using test::run_to_idle;

constexpr int32_t kEos = 2;

class ConstrainedTest : public test::TinyModelTest {
 protected:
  static std::unique_ptr<Scheduler> make(SchedConfig c) { return make_scheduler(c); }
  static std::shared_ptr<grammar::TokenMaskCache> regex_masks(const std::string& regex) {
    auto g = grammar::compile_grammar({.kind = grammar::GrammarSpec::Kind::kRegex, .source = regex});
    EXPECT_TRUE(g.ok()) << g.status().to_string();
    auto trie = std::make_shared<const grammar::VocabTrie>(grammar_vocabulary(*tok_));
    return std::make_shared<grammar::TokenMaskCache>(std::move(g).value(), trie);
  }

  // One sequence alone: forward, processors, the mask of its own matcher, sample; stops after EOS.
  static std::vector<int32_t> reference(const std::vector<int32_t>& prompt, int32_t max_new,
                                        const sample::SamplingParams& params,
                                        const std::shared_ptr<grammar::TokenMaskCache>& masks) {
    const auto n = static_cast<int32_t>(prompt.size());
    auto kv = model_->make_kv_storage(n + max_new);
    EXPECT_TRUE(kv.ok());
    const int64_t vocab = model_->config().vocab_size;
    std::vector<float> logits(static_cast<size_t>(vocab));
    std::vector<uint32_t> mask(sample::mask_words(vocab));
    grammar::GrammarMatcher matcher(masks);
    sample::SamplerScratch scratch;
    sample::TokenHistory history;
    history.add_prompt(prompt);
    std::vector<int32_t> all = prompt, out;
    int32_t done = 0;
    while (static_cast<int32_t>(out.size()) < max_new) {
      const auto len = static_cast<int32_t>(all.size());
      model::Batch b;
      model::BatchSeq bs{.q_begin = 0, .n_q = len - done, .ctx_slots = {}};
      for (int32_t i = 0; i < len; ++i) bs.ctx_slots.push_back(i);
      for (int32_t i = done; i < len; ++i) {
        b.tokens.push_back(all[static_cast<size_t>(i)]);
        b.positions.push_back(i);
        b.slots.push_back(i);
      }
      b.seqs.push_back(std::move(bs));
      b.logit_rows.push_back(len - done - 1);
      EXPECT_TRUE(model_->forward(b, *kv, logits).ok());
      done = len;
      std::vector<float> row = logits;
      sample::apply_processors(row, params, history);
      matcher.fill_mask(mask);
      for (size_t i = 0; i < row.size(); ++i) {
        if (!(mask[i / 32] >> (i % 32) & 1u)) row[i] = -std::numeric_limits<float>::infinity();
      }
      const int32_t t = sample::sample_token(row, params, len, scratch);
      EXPECT_TRUE(matcher.accept_token(t));
      history.add_output(t);
      out.push_back(t);
      all.push_back(t);
      if (t == kEos) break;
    }
    return out;
  }

  static GenerateRequest request(RequestId id, std::vector<int32_t> prompt, int32_t max_tokens,
                                 const std::shared_ptr<grammar::TokenMaskCache>& masks) {
    GenerateRequest r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.0f;
    r.stop.max_tokens = max_tokens;
    r.constraint = std::make_shared<GrammarConstraintFactory>(masks);
    return r;
  }
};


const char* kRegex = "(a[a-e]|b[b-f]|cc){2,5}dd";

TEST_F(ConstrainedTest, GreedyMatchesMaskedReferenceAndTheRegex) {
  auto masks = regex_masks(kRegex);
  auto s = make({.kv_tokens = 512, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 8});
  Collector col;
  for (RequestId id = 1; id <= 4; ++id) {
    ASSERT_TRUE(s->enqueue(request(id, make_prompt(10 + static_cast<int32_t>(id), id), 20, masks), col.sink()).ok());
  }
  run_to_idle(*s);
  for (RequestId id = 1; id <= 4; ++id) {
    Collected c = col.get(id);
    EXPECT_EQ(c.finish, FinishReason::kStop) << "request " << id;
    EXPECT_EQ(c.tokens, reference(make_prompt(10 + static_cast<int32_t>(id), id), 20, {.temperature = 0.0f}, masks));
    ASSERT_FALSE(c.tokens.empty());
    EXPECT_EQ(c.tokens.back(), kEos) << "the grammar ended, so only EOS was allowed";
    EXPECT_TRUE(std::regex_match(c.text, std::regex(kRegex))) << c.text;
  }
}

TEST_F(ConstrainedTest, MaskComposesWithPenaltiesBiasAndSamplingForEachOfNSamples) {
  auto masks = regex_masks(kRegex);
  auto s = make({.kv_tokens = 512, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 8});
  Collector col;
  const std::vector<int32_t> prompt = make_prompt(12, 7);
  GenerateRequest r = request(1, prompt, 20, masks);
  r.n = 3;
  // A +100 bias on a token the grammar forbids ("ee") must not revive it; the penalty reshapes the rest.
  r.sampling = {.temperature = 1.3f, .top_k = 20, .top_p = 0.95f, .seed = 99, .frequency_penalty = 0.7f,
                .logit_bias = {{4 * 26 + 4, 100.0f}, {1 * 26 + 2, 3.0f}}};
  ASSERT_TRUE(s->enqueue(r, col.sink()).ok());
  run_to_idle(*s);
  std::vector<std::vector<int32_t>> outs;
  for (int32_t i = 0; i < 3; ++i) {
    Collected c = col.get(1, i);
    sample::SamplingParams p = r.sampling;
    p.seed = sample_seed(r.sampling.seed, i);
    EXPECT_EQ(c.tokens, reference(prompt, 20, p, masks)) << "sample " << i;
    EXPECT_EQ(c.finish, FinishReason::kStop) << "sample " << i;
    EXPECT_TRUE(std::regex_match(c.text, std::regex(kRegex))) << "sample " << i << ": " << c.text;
    outs.push_back(c.tokens);
  }
  EXPECT_TRUE(outs[0] != outs[1] || outs[1] != outs[2]) << "seeded samples should differ";
}

TEST_F(ConstrainedTest, MatcherStateSurvivesPreemption) {
  auto masks = regex_masks("(a[a-e]|b[b-f]|cc){8,12}dd");
  auto s = make({.kv_tokens = 64, .max_batch_tokens = 32, .prefill_chunk = 16, .max_running = 5});
  Collector col;
  for (RequestId id = 1; id <= 5; ++id) {
    ASSERT_TRUE(s->enqueue(request(id, make_prompt(16 + static_cast<int32_t>(id), 30 + id), 20, masks), col.sink()).ok());
  }
  run_to_idle(*s);
  EXPECT_GT(s->stats().n_preemptions, 0);
  for (RequestId id = 1; id <= 5; ++id) {
    Collected c = col.get(id);
    EXPECT_EQ(c.tokens, reference(make_prompt(16 + static_cast<int32_t>(id), 30 + id), 20, {.temperature = 0.0f}, masks))
        << "request " << id;
    if (c.finish == FinishReason::kStop) {
      EXPECT_TRUE(std::regex_match(c.text, std::regex("(a[a-e]|b[b-f]|cc){8,12}dd"))) << c.text;
    }
  }
}

TEST_F(ConstrainedTest, JumpForwardKeepsOutputsAndSavesSteps) {
  const char* regex = "(a[a-e]|b[b-f])(dd){4}";  // after the first token, "dd" x4 then EOS are forced
  auto masks = regex_masks(regex);
  std::vector<Collected> got[2];
  int steps[2] = {0, 0};
  int64_t jumped[2] = {0, 0};
  for (int jf = 0; jf < 2; ++jf) {
    auto s = make({.kv_tokens = 512, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 8,
                   .jump_forward = jf == 1});
    Collector col;
    for (RequestId id = 1; id <= 3; ++id) {
      GenerateRequest r = request(id, make_prompt(9 + static_cast<int32_t>(id), 50 + id), 20, masks);
      r.n = id == 3 ? 2 : 1;
      if (id == 3) r.sampling = {.temperature = 1.0f, .seed = 5};
      ASSERT_TRUE(s->enqueue(r, col.sink()).ok());
    }
    steps[jf] = run_to_idle(*s);
    jumped[jf] = s->stats().n_jump_forward_tokens;
    for (RequestId id = 1; id <= 3; ++id) {
      for (int32_t i = 0; i < (id == 3 ? 2 : 1); ++i) got[jf].push_back(col.get(id, i));
    }
  }
  EXPECT_EQ(jumped[0], 0);
  EXPECT_EQ(jumped[1], 4 * (4 + 1)) << "four \"dd\" and the EOS for each of the 4 samples";
  EXPECT_LT(steps[1], steps[0]);
  ASSERT_EQ(got[0].size(), got[1].size());
  for (size_t i = 0; i < got[0].size(); ++i) {
    EXPECT_EQ(got[1][i].tokens, got[0][i].tokens) << "sample " << i;
    EXPECT_EQ(got[1][i].text, got[0][i].text);
    EXPECT_EQ(got[1][i].finish, FinishReason::kStop);
    EXPECT_TRUE(std::regex_match(got[1][i].text, std::regex(regex))) << got[1][i].text;
  }
}

TEST_F(ConstrainedTest, OverlapKeepsGrammarAndJumpForwardOutputs) {
  // Overlap scheduling (on the host here): each grammar mask is built after the token in flight was
  // accepted, and a row whose grammar then forced tokens is not sampled in the step already planned.
  const char* regex = "(a[a-e]|b[b-f])(dd){2}(cc|ab){1,3}";
  auto masks = regex_masks(regex);
  for (const bool jump : {false, true}) {
    std::vector<Collected> got[2];
    for (const bool overlap : {false, true}) {
      auto s = make({.kv_tokens = 512, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 8,
                     .jump_forward = jump, .overlap_on_host = overlap});
      EXPECT_EQ(s->overlapping(), overlap);
      Collector col;
      for (RequestId id = 1; id <= 4; ++id) {
        GenerateRequest r = request(id, make_prompt(8 + static_cast<int32_t>(id), 70 + id), 20, masks);
        r.n = id == 4 ? 2 : 1;
        if (id >= 3) r.sampling = {.temperature = 1.1f, .seed = 11 + id, .frequency_penalty = 0.3f};
        ASSERT_TRUE(s->enqueue(r, col.sink()).ok());
      }
      run_to_idle(*s);
      for (RequestId id = 1; id <= 4; ++id) {
        for (int32_t i = 0; i < (id == 4 ? 2 : 1); ++i) got[overlap].push_back(col.get(id, i));
      }
    }
    ASSERT_EQ(got[0].size(), got[1].size());
    for (size_t i = 0; i < got[0].size(); ++i) {
      EXPECT_EQ(got[1][i].tokens, got[0][i].tokens) << "sample " << i << " jump " << jump;
      EXPECT_EQ(got[1][i].text, got[0][i].text);
      EXPECT_EQ(got[1][i].finish, FinishReason::kStop);
      EXPECT_TRUE(std::regex_match(got[1][i].text, std::regex(regex))) << got[1][i].text;
    }
  }
}

TEST_F(ConstrainedTest, GrammarWithNoTokenFailsTheRequest) {
  auto masks = regex_masks("q");  // every token has two letters: none can start this output
  auto s = make({.kv_tokens = 512, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 8});
  Collector col;
  ASSERT_TRUE(s->enqueue(request(1, make_prompt(8, 1), 10, masks), col.sink()).ok());
  run_to_idle(*s);
  Collected c = col.get(1);
  EXPECT_EQ(c.finish, FinishReason::kError);
  EXPECT_NE(c.last.error.find("allows no token"), std::string::npos) << c.last.error;
  EXPECT_TRUE(c.text.empty());
}

}  // namespace
}  // namespace keel::sched
