// Overlap scheduling's lagged bookkeeping on the CPU backend (SchedConfig::overlap_on_host: the same
// code path as cuda, with the tokens in flight known on the host): every workload gives the same
// events with overlap on and off and the one-at-a-time reference; stops at every position, max_tokens
// of every length, cancellation while a token is in flight, preemption, n > 1, penalties and
// log-probabilities (which fall back to a synchronous step). Invariants after every step.
#include <gtest/gtest.h>

#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::greedy_request;
using test::make_prompt;
using test::reference_tokens;

class OverlapTest : public test::TinyModelTest {
 protected:
  static std::unique_ptr<Scheduler> make(SchedConfig c, bool overlap) {
    c.overlap_on_host = overlap;
    auto s = make_scheduler(c);
    if (s) {
      EXPECT_EQ(s->overlapping(), overlap);
    }
    return s;
  }
  // Runs to idle; then a last step, which may still read tokens in flight of cancelled sequences, leaves
  // nothing to do.
  static int run_to_idle(Scheduler& s) {
    const int n = test::run_to_idle(s);
    EXPECT_FALSE(s.step());
    return n;
  }
  // Runs the requests to the end with overlap on or off; the collected events per (id, sample).
  static std::vector<Collected> run(const SchedConfig& c, bool overlap, const std::vector<GenerateRequest>& reqs) {
    auto s = make(c, overlap);
    Collector col;
    for (const GenerateRequest& r : reqs) EXPECT_TRUE(s->enqueue(r, col.sink()).ok());
    run_to_idle(*s);
    EXPECT_EQ(s->pool().n_used(), s->tree().n_cached_tokens());
    EXPECT_EQ(s->tree().n_locked_tokens(), 0);
    s->flush_cache();
    EXPECT_EQ(s->pool().n_used(), 0);
    std::vector<Collected> out;
    for (const GenerateRequest& r : reqs) {
      for (int32_t i = 0; i < r.n; ++i) out.push_back(col.get(r.id, i));
    }
    return out;
  }
  // Same outputs with overlap on and off; returns them.
  static std::vector<Collected> same_both_ways(const SchedConfig& c, const std::vector<GenerateRequest>& reqs) {
    std::vector<Collected> off = run(c, false, reqs);
    std::vector<Collected> on = run(c, true, reqs);
    EXPECT_EQ(on.size(), off.size());
    for (size_t i = 0; i < on.size() && i < off.size(); ++i) {
      EXPECT_EQ(on[i].tokens, off[i].tokens) << "sample " << i;
      EXPECT_EQ(on[i].text, off[i].text) << "sample " << i;
      EXPECT_EQ(on[i].finish, off[i].finish) << "sample " << i;
      EXPECT_NE(on[i].finish, FinishReason::kNone) << "sample " << i;
      EXPECT_EQ(on[i].last.completion_tokens, off[i].last.completion_tokens) << "sample " << i;
      EXPECT_EQ(on[i].last.completion_tokens, static_cast<int32_t>(on[i].tokens.size())) << "sample " << i;
      EXPECT_EQ(on[i].logprobs.size(), off[i].logprobs.size()) << "sample " << i;
      for (size_t k = 0; k < on[i].logprobs.size() && k < off[i].logprobs.size(); ++k) {
        EXPECT_EQ(on[i].logprobs[k].token, off[i].logprobs[k].token);
        EXPECT_FLOAT_EQ(on[i].logprobs[k].logprob, off[i].logprobs[k].logprob);
      }
    }
    return on;
  }
};

TEST_F(OverlapTest, GreedyAndSeededMatchTheReferenceBothWays) {
  const SchedConfig c{.kv_tokens = 512, .max_batch_tokens = 24, .prefill_chunk = 8, .max_running = 8};
  std::vector<GenerateRequest> reqs;
  const std::vector<int32_t> lens = {6, 45, 14, 3, 30, 21};
  for (size_t i = 0; i < lens.size(); ++i) {
    GenerateRequest r = greedy_request(i + 1, make_prompt(lens[i], static_cast<uint32_t>(i)), 8 + 2 * static_cast<int32_t>(i));
    if (i % 2 == 1) r.sampling = {.temperature = 0.9f, .top_k = 30, .top_p = 0.9f, .seed = 77 + i};
    reqs.push_back(r);
  }
  std::vector<Collected> on = same_both_ways(c, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(on[i].finish, FinishReason::kLength);
    EXPECT_EQ(on[i].tokens, reference_tokens(*model_, reqs[i].prompt, reqs[i].stop.max_tokens, reqs[i].sampling))
        << "request " << i + 1;
  }
}

TEST_F(OverlapTest, StopTokenAtEveryPositionWhileOthersRun) {
  // Request p stops at the first occurrence of the reference's token p; a long request keeps steps
  // going, so every stop happens with the next step already planned (its extra token is never sent).
  const std::vector<int32_t> prompt = make_prompt(17, 9);
  const std::vector<int32_t> ref = reference_tokens(*model_, prompt, 14);
  std::vector<GenerateRequest> reqs{greedy_request(100, make_prompt(11, 4), 40)};
  for (int32_t p = 0; p < 14; ++p) {
    GenerateRequest r = greedy_request(static_cast<RequestId>(p + 1), prompt, 14);
    r.stop.stop_token_ids = {ref[static_cast<size_t>(p)]};
    reqs.push_back(r);
  }
  std::vector<Collected> on =
      same_both_ways({.kv_tokens = 1024, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 16}, reqs);
  for (int32_t p = 0; p < 14; ++p) {
    const auto first = static_cast<size_t>(std::find(ref.begin(), ref.end(), ref[static_cast<size_t>(p)]) - ref.begin());
    const Collected& c = on[static_cast<size_t>(p + 1)];
    EXPECT_EQ(c.finish, FinishReason::kStop) << "stop at " << p;
    EXPECT_EQ(c.tokens, std::vector<int32_t>(ref.begin(), ref.begin() + static_cast<ptrdiff_t>(first) + 1))
        << "stop at " << p;
  }
}

TEST_F(OverlapTest, StopStringsAndMaxTokensOfEveryLength) {
  const std::vector<int32_t> prompt = make_prompt(13, 21);
  const std::vector<int32_t> ref = reference_tokens(*model_, prompt, 10);
  std::vector<GenerateRequest> reqs;
  for (int32_t n = 1; n <= 10; ++n) reqs.push_back(greedy_request(static_cast<RequestId>(n), prompt, n));
  for (int32_t p = 0; p < 10; ++p) {  // a stop string: the second letter of token p and the first of p + 1
    GenerateRequest r = greedy_request(static_cast<RequestId>(20 + p), prompt, 10);
    const std::string a = tok_->token_bytes(ref[static_cast<size_t>(p)]);
    const std::string b = p + 1 < 10 ? tok_->token_bytes(ref[static_cast<size_t>(p + 1)]) : std::string("zz");
    r.stop.stop_strings = {a.substr(1) + b.substr(0, 1)};
    reqs.push_back(r);
  }
  std::vector<Collected> on =
      same_both_ways({.kv_tokens = 1024, .max_batch_tokens = 64, .prefill_chunk = 8, .max_running = 24}, reqs);
  for (int32_t n = 1; n <= 10; ++n) {
    EXPECT_EQ(on[static_cast<size_t>(n - 1)].tokens, std::vector<int32_t>(ref.begin(), ref.begin() + n));
    EXPECT_EQ(on[static_cast<size_t>(n - 1)].finish, FinishReason::kLength);
  }
}

TEST_F(OverlapTest, NSamplesPenaltiesAndLogprobs) {
  std::vector<GenerateRequest> reqs;
  GenerateRequest fork = greedy_request(1, make_prompt(25, 3), 9);
  fork.n = 3;
  fork.sampling = {.temperature = 1.2f, .top_k = 40, .seed = 1234};
  reqs.push_back(fork);
  GenerateRequest pen = greedy_request(2, make_prompt(12, 5), 12);
  pen.sampling = {.temperature = 0.8f, .seed = 5, .repetition_penalty = 1.3f, .frequency_penalty = 0.5f,
                  .presence_penalty = 0.4f};
  reqs.push_back(pen);
  GenerateRequest lp = greedy_request(3, make_prompt(9, 6), 7);  // logprobs: a synchronous step
  lp.top_logprobs = 2;
  reqs.push_back(lp);
  std::vector<Collected> on =
      same_both_ways({.kv_tokens = 512, .max_batch_tokens = 32, .prefill_chunk = 8, .max_running = 8}, reqs);
  for (int32_t i = 0; i < 3; ++i) {
    sample::SamplingParams p = fork.sampling;
    p.seed = sample_seed(fork.sampling.seed, i);
    EXPECT_EQ(on[static_cast<size_t>(i)].tokens, reference_tokens(*model_, fork.prompt, 9, p)) << "sample " << i;
  }
  EXPECT_EQ(on[3].tokens, reference_tokens(*model_, pen.prompt, 12, pen.sampling));
  EXPECT_EQ(on[4].tokens, reference_tokens(*model_, lp.prompt, 7));
  EXPECT_EQ(on[4].logprobs.size(), 7u);
}

TEST_F(OverlapTest, PreemptionUnderTinyPoolLosesNothing) {
  std::vector<GenerateRequest> reqs;
  for (RequestId id = 1; id <= 5; ++id) {
    reqs.push_back(greedy_request(id, make_prompt(18 + 2 * static_cast<int32_t>(id), 40 + id), 24));
  }
  const SchedConfig c{.kv_tokens = 64, .max_batch_tokens = 32, .prefill_chunk = 16, .max_running = 5};
  auto s = make(c, true);
  Collector col;
  for (const GenerateRequest& r : reqs) ASSERT_TRUE(s->enqueue(r, col.sink()).ok());
  run_to_idle(*s);
  EXPECT_GT(s->stats().n_preemptions, 0);
  for (const GenerateRequest& r : reqs) {
    EXPECT_EQ(col.get(r.id).tokens, reference_tokens(*model_, r.prompt, 24)) << "request " << r.id;
    EXPECT_EQ(col.get(r.id).n_events, 24);
  }
  s->flush_cache();
  EXPECT_EQ(s->pool().n_used(), 0);
}

TEST_F(OverlapTest, CancelWhileATokenIsInFlight) {
  for (int cancel_after = 1; cancel_after <= 12; ++cancel_after) {
    auto s = make({.kv_tokens = 256, .max_batch_tokens = 32, .prefill_chunk = 8, .max_running = 4}, true);
    Collector col;
    const std::vector<int32_t> keep = make_prompt(12, 6);
    ASSERT_TRUE(s->enqueue(greedy_request(1, make_prompt(20, 5), 100), col.sink()).ok());
    ASSERT_TRUE(s->enqueue(greedy_request(2, keep, 16), col.sink()).ok());
    for (int i = 0; i < cancel_after; ++i) s->step();
    s->cancel(1);
    ASSERT_TRUE(s->check_invariants().ok()) << "cancel after " << cancel_after;
    run_to_idle(*s);
    const Collected c = col.get(1);
    EXPECT_EQ(c.finish, FinishReason::kCancelled);
    EXPECT_EQ(c.last.completion_tokens, static_cast<int32_t>(c.tokens.size()));
    EXPECT_EQ(c.tokens, std::vector<int32_t>(reference_tokens(*model_, make_prompt(20, 5), static_cast<int32_t>(c.tokens.size()))));
    EXPECT_EQ(col.get(2).tokens, reference_tokens(*model_, keep, 16)) << "cancel after " << cancel_after;
    EXPECT_EQ(s->pool().n_used(), s->tree().n_cached_tokens());
    EXPECT_EQ(s->tree().n_locked_tokens(), 0);
    EXPECT_EQ(col.n_final(), 2);
  }
}

TEST_F(OverlapTest, OffSwitches) {
  EXPECT_FALSE(make({.kv_tokens = 64}, false)->overlapping());
  // The CPU backend samples on the host: only overlap_on_host turns the lagged path on there.
  EXPECT_FALSE(make_scheduler({.kv_tokens = 64})->overlapping());
  auto s = make_scheduler({.kv_tokens = 64, .overlap = false, .overlap_on_host = true});
  EXPECT_FALSE(s->overlapping());
}

}  // namespace
}  // namespace keel::sched
