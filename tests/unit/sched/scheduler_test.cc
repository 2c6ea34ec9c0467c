// Scheduler driven step by step on the tiny HF Llama: batched outputs equal one-at-a-time references,
// prefix reuse, n > 1 sharing the prompt, preemption under a tiny KV pool, cancel, queue limits,
// priorities and policies. Invariants (slot ownership, tree) are checked after every step.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::greedy_request;
using test::make_prompt;
using test::reference_tokens;
using test::run_to_idle;

class SchedulerTest : public test::TinyModelTest {
 protected:
  static std::unique_ptr<Scheduler> make(SchedConfig c) { return make_scheduler(c); }
};

TEST_F(SchedulerTest, BatchedChunkedMatchesOneAtATime) {
  auto s = make({.kv_tokens = 512, .max_batch_tokens = 24, .prefill_chunk = 8, .max_running = 8});
  Collector col;
  const std::vector<int32_t> lens = {6, 45, 14, 3, 30, 21};
  for (size_t i = 0; i < lens.size(); ++i) {
    ASSERT_TRUE(s->enqueue(greedy_request(i + 1, make_prompt(lens[i], static_cast<uint32_t>(i)), 12), col.sink()).ok());
  }
  run_to_idle(*s);
  for (size_t i = 0; i < lens.size(); ++i) {
    Collected c = col.get(i + 1);
    EXPECT_EQ(c.finish, FinishReason::kLength);
    EXPECT_EQ(c.tokens, reference_tokens(*model_, make_prompt(lens[i], static_cast<uint32_t>(i)), 12))
        << "request " << i + 1;
    EXPECT_EQ(c.n_events, 12);
    EXPECT_EQ(c.last.prompt_tokens, lens[i]);
    EXPECT_EQ(c.last.completion_tokens, 12);
    EXPECT_EQ(c.last.cached_tokens, 0);
    std::string text;
    for (int32_t t : c.tokens) text += tok_->token_bytes(t);
    EXPECT_EQ(c.text, text);
  }
  const SchedulerStats& st = s->stats();
  EXPECT_GT(st.n_mixed_steps, 0) << "prefill chunks never shared a step with decodes";
  EXPECT_GE(st.max_batch_seqs, 4);
  EXPECT_EQ(st.n_prefill_tokens, 6 + 45 + 14 + 3 + 30 + 21);
  EXPECT_EQ(st.n_decode_tokens, 6 * 11);
  EXPECT_EQ(s->pool().n_used(), s->tree().n_cached_tokens());
  EXPECT_EQ(s->tree().n_locked_tokens(), 0);
  const int64_t cached = s->tree().n_cached_tokens();
  EXPECT_EQ(s->flush_cache(), cached);
  EXPECT_EQ(s->pool().n_used(), 0);
}

TEST_F(SchedulerTest, PrefixReuseSkipsCachedTokens) {
  auto s = make({.kv_tokens = 512, .max_batch_tokens = 32, .prefill_chunk = 16, .max_running = 4});
  Collector col;
  const std::vector<int32_t> prompt = make_prompt(40, 7);
  ASSERT_TRUE(s->enqueue(greedy_request(1, prompt, 8), col.sink()).ok());
  run_to_idle(*s);
  const int64_t computed = s->stats().n_prefill_tokens;
  EXPECT_EQ(computed, 40);

  ASSERT_TRUE(s->enqueue(greedy_request(2, prompt, 8), col.sink()).ok());
  std::vector<int32_t> branch(prompt.begin(), prompt.begin() + 25);
  for (int32_t t : make_prompt(10, 99)) branch.push_back(t);
  ASSERT_TRUE(s->enqueue(greedy_request(3, branch, 8), col.sink()).ok());
  run_to_idle(*s);
  Collected again = col.get(2);
  EXPECT_EQ(again.last.cached_tokens, 39);  // all but the last prompt token, which is computed for its logits
  EXPECT_EQ(again.tokens, col.get(1).tokens);
  EXPECT_EQ(again.tokens, reference_tokens(*model_, prompt, 8));
  Collected other = col.get(3);
  EXPECT_EQ(other.last.cached_tokens, 25);
  EXPECT_EQ(other.tokens, reference_tokens(*model_, branch, 8));
  EXPECT_EQ(s->stats().n_prefill_tokens - computed, 1 + 10);
  EXPECT_NEAR(s->load().prefix_hit_ratio, (39.0 + 25.0) / (40.0 + 40.0 + 35.0), 1e-9);

  // A follow-up turn (prompt + answer + more) reuses the finished sequence, output included.
  std::vector<int32_t> turn2 = prompt;
  turn2.insert(turn2.end(), again.tokens.begin(), again.tokens.end());
  turn2.push_back(5);
  ASSERT_TRUE(s->enqueue(greedy_request(4, turn2, 4), col.sink()).ok());
  run_to_idle(*s);
  EXPECT_EQ(col.get(4).last.cached_tokens, 40 + 7);  // the 8th output token was never computed
  EXPECT_EQ(col.get(4).tokens, reference_tokens(*model_, turn2, 4));
}

TEST_F(SchedulerTest, NSamplesShareThePromptAndFollowTheirSeeds) {
  auto s = make({.kv_tokens = 512, .max_batch_tokens = 32, .prefill_chunk = 8, .max_running = 8});
  Collector col;
  const std::vector<int32_t> prompt = make_prompt(30, 3);
  GenerateRequest r = greedy_request(1, prompt, 10);
  r.n = 3;
  r.sampling = {.temperature = 1.5f, .top_k = 40, .seed = 1234};
  ASSERT_TRUE(s->enqueue(r, col.sink()).ok());
  run_to_idle(*s);
  EXPECT_EQ(s->stats().n_prefill_tokens, 30) << "the prompt is computed once for all samples";
  std::vector<std::vector<int32_t>> outs;
  for (int32_t i = 0; i < 3; ++i) {
    Collected c = col.get(1, i);
    EXPECT_EQ(c.finish, FinishReason::kLength) << "sample " << i;
    sample::SamplingParams p = r.sampling;
    p.seed = sample_seed(r.sampling.seed, i);
    EXPECT_EQ(c.tokens, reference_tokens(*model_, prompt, 10, p)) << "sample " << i;
    EXPECT_EQ(c.last.prompt_tokens, 30);
    outs.push_back(c.tokens);
  }
  EXPECT_NE(outs[0], outs[1]);
  EXPECT_NE(outs[1], outs[2]);
  EXPECT_EQ(s->tree().n_locked_tokens(), 0);
}

TEST_F(SchedulerTest, PreemptionUnderTinyPoolLosesNothing) {
  // 64 slots; five requests of 20-26 prompt tokens + 24 generated each need ~230 in all.
  auto s = make({.kv_tokens = 64, .max_batch_tokens = 32, .prefill_chunk = 16, .max_running = 5});
  Collector col;
  for (RequestId id = 1; id <= 5; ++id) {
    ASSERT_TRUE(
        s->enqueue(greedy_request(id, make_prompt(18 + 2 * static_cast<int32_t>(id), 40 + id), 24), col.sink()).ok());
  }
  run_to_idle(*s);
  EXPECT_GT(s->stats().n_preemptions, 0);
  for (RequestId id = 1; id <= 5; ++id) {
    Collected c = col.get(id);
    EXPECT_EQ(c.finish, FinishReason::kLength) << "request " << id;
    EXPECT_EQ(c.tokens, reference_tokens(*model_, make_prompt(18 + 2 * static_cast<int32_t>(id), 40 + id), 24))
        << "request " << id;
    EXPECT_EQ(c.n_events, 24);
  }
  s->flush_cache();
  EXPECT_EQ(s->pool().n_used(), 0);
}

TEST_F(SchedulerTest, HigherPriorityPreemptsLower) {
  auto s = make({.kv_tokens = 48, .max_batch_tokens = 32, .prefill_chunk = 32, .max_running = 2});
  Collector col;
  GenerateRequest low = greedy_request(1, make_prompt(20, 1), 20);
  ASSERT_TRUE(s->enqueue(low, col.sink()).ok());
  for (int i = 0; i < 4; ++i) s->step();
  GenerateRequest high = greedy_request(2, make_prompt(20, 2), 20);
  high.priority = 5;
  ASSERT_TRUE(s->enqueue(high, col.sink()).ok());
  run_to_idle(*s);
  EXPECT_GT(s->stats().n_preemptions, 0);
  EXPECT_EQ(col.get(1).tokens, reference_tokens(*model_, low.prompt, 20));
  EXPECT_EQ(col.get(2).tokens, reference_tokens(*model_, high.prompt, 20));
}

TEST_F(SchedulerTest, CancelFreesSlotsAtOnce) {
  auto s = make({.kv_tokens = 256, .max_batch_tokens = 32, .prefill_chunk = 8, .max_running = 4});
  Collector col;
  ASSERT_TRUE(s->enqueue(greedy_request(1, make_prompt(30, 5), 100), col.sink()).ok());
  ASSERT_TRUE(s->enqueue(greedy_request(2, make_prompt(12, 6), 100), col.sink()).ok());
  for (int i = 0; i < 8; ++i) s->step();
  EXPECT_GT(s->pool().n_used(), s->tree().n_cached_tokens());  // running sequences own slots
  s->cancel(1);
  s->cancel(2);
  EXPECT_TRUE(s->idle());
  EXPECT_TRUE(s->check_invariants().ok());
  EXPECT_EQ(s->pool().n_used(), s->tree().n_cached_tokens());  // only the cache holds slots now
  EXPECT_EQ(s->tree().n_locked_tokens(), 0);
  for (RequestId id : {1, 2}) {
    Collected c = col.get(id);
    EXPECT_EQ(c.finish, FinishReason::kCancelled);
    EXPECT_EQ(c.last.completion_tokens, static_cast<int32_t>(c.tokens.size()));
  }
  s->flush_cache();
  EXPECT_EQ(s->pool().n_used(), 0);
  s->cancel(1);  // finished already: ignored
  EXPECT_EQ(col.n_final(), 2);
}

TEST_F(SchedulerTest, CancelWaitingAndUnforkedSamples) {
  auto s = make({.kv_tokens = 256, .max_batch_tokens = 8, .prefill_chunk = 4, .max_running = 4});
  Collector col;
  GenerateRequest r = greedy_request(1, make_prompt(40, 8), 5);
  r.n = 3;
  ASSERT_TRUE(s->enqueue(r, col.sink()).ok());
  ASSERT_TRUE(s->enqueue(greedy_request(2, make_prompt(10, 9), 5), col.sink()).ok());  // waits: max_running
  s->step();
  s->cancel(1);
  s->cancel(2);
  EXPECT_EQ(col.n_final(), 4);
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(col.get(1, i).finish, FinishReason::kCancelled);
  EXPECT_TRUE(s->check_invariants().ok());
  EXPECT_EQ(s->pool().n_used(), s->tree().n_cached_tokens());
}

TEST_F(SchedulerTest, QueueLimitAndRequestChecks) {
  auto s = make({.kv_tokens = 100, .max_batch_tokens = 8, .prefill_chunk = 8, .max_running = 2, .max_queue = 2});
  Collector col;
  ASSERT_TRUE(s->enqueue(greedy_request(1, make_prompt(5, 1), 4), col.sink()).ok());
  ASSERT_TRUE(s->enqueue(greedy_request(2, make_prompt(5, 2), 4), col.sink()).ok());
  Status full = s->enqueue(greedy_request(3, make_prompt(5, 3), 4), col.sink());
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted) << full.to_string();
  EXPECT_EQ(s->enqueue(greedy_request(1, make_prompt(5, 1), 4), col.sink()).code(), ErrorCode::kInvalidArgument);

  Status too_long = s->check_request(greedy_request(4, make_prompt(120, 4), 4));
  EXPECT_EQ(too_long.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("21 more than the context of 100"), std::string::npos) << too_long.message();
  EXPECT_EQ(s->check_request(greedy_request(4, {}, 4)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s->check_request(greedy_request(4, {1, 500}, 4)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s->check_request(greedy_request(4, {1, 5}, 0)).code(), ErrorCode::kInvalidArgument);
  GenerateRequest many = greedy_request(4, {1, 5}, 4);
  many.n = 3;
  EXPECT_EQ(s->check_request(many).code(), ErrorCode::kInvalidArgument);
  run_to_idle(*s);
  EXPECT_EQ(col.n_final(), 2);
  EXPECT_TRUE(s->enqueue(greedy_request(3, make_prompt(5, 3), 4), col.sink()).ok());
}

TEST_F(SchedulerTest, ContextFullEndsWithLength) {
  auto s = make({.kv_tokens = 40, .max_batch_tokens = 16, .prefill_chunk = 16, .max_running = 2});
  Collector col;
  ASSERT_TRUE(s->enqueue(greedy_request(1, make_prompt(30, 1), 100), col.sink()).ok());
  run_to_idle(*s);
  Collected c = col.get(1);
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_EQ(c.tokens.size(), 10u);  // 30 + 10 = the 40-token context
  EXPECT_EQ(c.tokens, reference_tokens(*model_, make_prompt(30, 1), 10));
}

TEST_F(SchedulerTest, LongestPrefixPolicyAdmitsCachedFirst) {
  for (Policy policy : {Policy::kFcfs, Policy::kLongestPrefix}) {
    auto s = make({.kv_tokens = 256, .max_batch_tokens = 64, .prefill_chunk = 64, .max_running = 1, .policy = policy});
    Collector col;
    const std::vector<int32_t> shared = make_prompt(30, 11);
    ASSERT_TRUE(s->enqueue(greedy_request(1, shared, 2), col.sink()).ok());
    run_to_idle(*s);
    std::vector<int32_t> cold = make_prompt(30, 12);
    std::vector<int32_t> warm = shared;
    warm.push_back(9);
    std::vector<RequestId> order;
    auto sink = [&](StreamEvent&& ev) {
      if (ev.finish != FinishReason::kNone) order.push_back(ev.id);
    };
    ASSERT_TRUE(s->enqueue(greedy_request(2, cold, 2), sink).ok());
    ASSERT_TRUE(s->enqueue(greedy_request(3, warm, 2), sink).ok());
    run_to_idle(*s);
    const std::vector<RequestId> want =
        policy == Policy::kFcfs ? std::vector<RequestId>{2, 3} : std::vector<RequestId>{3, 2};
    EXPECT_EQ(order, want) << policy_name(policy);
  }
}

}  // namespace
}  // namespace keel::sched
