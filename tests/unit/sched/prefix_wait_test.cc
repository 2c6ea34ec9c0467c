// In-batch prefix sharing on the tiny HF Llama: requests that arrive together with the same uncached
// prefix compute it once (the later ones wait until the first one's prefill chunks reach the radix
// tree), outputs still equal the one-at-a-time reference, a request with another prompt is not held
// up, and the wait is bounded. Invariants are checked after every step.
#include <gtest/gtest.h>

#include "sched/prefix_wait.h"
#include "sched/scheduler.h"
#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::greedy_request;
using test::make_prompt;
using test::reference_tokens;

class PrefixWaitTest : public test::TinyModelTest {
 protected:
  static std::unique_ptr<Scheduler> make(SchedConfig c) { return make_scheduler(c); }
  static void step_checked(Scheduler& s) {
    s.step();
    Status inv = s.check_invariants();
    EXPECT_TRUE(inv.ok()) << inv.to_string();
  }
  static void run_to_idle(Scheduler& s) {
    for (int n = 0; n < 2000 && !s.idle(); ++n) step_checked(s);
    EXPECT_TRUE(s.idle());
  }
  // prefix + a suffix of its own per request.
  static std::vector<int32_t> with_suffix(const std::vector<int32_t>& prefix, int32_t n_suffix, uint32_t seed) {
    std::vector<int32_t> p = prefix;
    for (int32_t t : make_prompt(n_suffix, seed)) p.push_back(t);
    return p;
  }
};


constexpr int32_t kPrefix = 96;
constexpr int32_t kSuffix = 8;
constexpr int32_t kN = 4;

TEST_F(PrefixWaitTest, SameStepSharedPrefixIsComputedOnce) {
  const std::vector<int32_t> prefix = make_prompt(kPrefix, 11);
  for (int32_t max_wait : {16, 0}) {  // 0: the wait off, the control
    SCOPED_TRACE(max_wait);
    auto s = make({.kv_tokens = 1024,
                   .max_batch_tokens = 128,
                   .prefill_chunk = 32,
                   .max_running = 8,
                   .prefix_wait_max_steps = max_wait});
    Collector col;
    for (int32_t i = 0; i < kN; ++i) {
      ASSERT_TRUE(s->enqueue(greedy_request(i + 1, with_suffix(prefix, kSuffix, 100 + i), 6), col.sink()).ok());
    }
    step_checked(*s);
    // The first prefill chunk is in the tree as soon as it is computed, not when the prompt is done.
    // (Without the wait all four computed the same chunk; the tree keeps one copy.)
    EXPECT_EQ(s->tree().n_cached_tokens(), 32);
    run_to_idle(*s);
    for (int32_t i = 0; i < kN; ++i) {
      Collected c = col.get(i + 1);
      EXPECT_EQ(c.finish, FinishReason::kLength);
      EXPECT_EQ(c.tokens, reference_tokens(*model_, with_suffix(prefix, kSuffix, 100 + i), 6)) << "request " << i + 1;
      const int32_t want_cached = (max_wait > 0 && i > 0) ? kPrefix : 0;
      EXPECT_EQ(c.last.cached_tokens, want_cached) << "request " << i + 1;
    }
    if (max_wait > 0) {
      EXPECT_EQ(s->stats().n_prefill_tokens, kPrefix + kN * kSuffix);
      EXPECT_GT(s->stats().n_prefix_waits, 0);
    } else {
      EXPECT_EQ(s->stats().n_prefill_tokens, kN * (kPrefix + kSuffix));
      EXPECT_EQ(s->stats().n_prefix_waits, 0);
    }
  }
}

TEST_F(PrefixWaitTest, IdenticalPromptsShareAllButTheLastPartialBlock) {
  const std::vector<int32_t> prompt = make_prompt(70, 12);
  auto s = make({.kv_tokens = 1024, .max_batch_tokens = 64, .prefill_chunk = 16, .max_running = 8});
  Collector col;
  for (int32_t i = 0; i < 3; ++i) ASSERT_TRUE(s->enqueue(greedy_request(i + 1, prompt, 5), col.sink()).ok());
  run_to_idle(*s);
  const std::vector<int32_t> want = reference_tokens(*model_, prompt, 5);
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(col.get(i + 1).tokens, want) << "request " << i + 1;
  // The last shared block (64 of 69 matchable tokens) is reused; each later request computes the rest.
  EXPECT_EQ(col.get(2).last.cached_tokens, 64);
  EXPECT_EQ(s->stats().n_prefill_tokens, 70 + 2 * (70 - 64));
}

TEST_F(PrefixWaitTest, OtherPromptIsNotHeldUp) {
  const std::vector<int32_t> prefix = make_prompt(kPrefix, 13);
  auto s = make({.kv_tokens = 1024, .max_batch_tokens = 128, .prefill_chunk = 32, .max_running = 8});
  Collector col;
  ASSERT_TRUE(s->enqueue(greedy_request(1, with_suffix(prefix, kSuffix, 1), 4), col.sink()).ok());
  ASSERT_TRUE(s->enqueue(greedy_request(2, with_suffix(prefix, kSuffix, 2), 4), col.sink()).ok());
  const std::vector<int32_t> other = make_prompt(20, 14);
  ASSERT_TRUE(s->enqueue(greedy_request(3, other, 4), col.sink()).ok());
  step_checked(*s);
  // Request 2 waits for request 1's prefix; request 3, queued behind it, ran its whole prompt.
  EXPECT_EQ(s->n_waiting_requests(), 1);
  EXPECT_EQ(col.get(2).n_events, 0);
  EXPECT_EQ(col.get(3).n_events, 1);
  run_to_idle(*s);
  EXPECT_EQ(col.get(3).tokens, reference_tokens(*model_, other, 4));
  EXPECT_EQ(col.get(3).last.cached_tokens, 0);
  EXPECT_EQ(col.get(2).last.cached_tokens, kPrefix);
  EXPECT_EQ(col.get(2).tokens, reference_tokens(*model_, with_suffix(prefix, kSuffix, 2), 4));
}

TEST_F(PrefixWaitTest, WaitIsBounded) {
  const std::vector<int32_t> prefix = make_prompt(kPrefix, 15);
  // Chunks of 8: the leader needs 12 steps for the prefix; the follower waits 2 passes at most.
  auto s = make({.kv_tokens = 1024,
                 .max_batch_tokens = 64,
                 .prefill_chunk = 8,
                 .max_running = 8,
                 .prefix_wait_max_steps = 2});
  Collector col;
  ASSERT_TRUE(s->enqueue(greedy_request(1, with_suffix(prefix, kSuffix, 1), 4), col.sink()).ok());
  ASSERT_TRUE(s->enqueue(greedy_request(2, with_suffix(prefix, kSuffix, 2), 4), col.sink()).ok());
  for (int i = 0; i < 3; ++i) step_checked(*s);
  EXPECT_EQ(s->n_waiting_requests(), 0) << "admitted after its 2 passes, though the prefix is not computed yet";
  EXPECT_EQ(s->stats().n_prefix_waits, 2);
  run_to_idle(*s);
  EXPECT_EQ(col.get(2).last.cached_tokens, 2 * 8);  // what the leader had put into the tree by then
  EXPECT_EQ(col.get(1).tokens, reference_tokens(*model_, with_suffix(prefix, kSuffix, 1), 4));
  EXPECT_EQ(col.get(2).tokens, reference_tokens(*model_, with_suffix(prefix, kSuffix, 2), 4));
}

TEST(PrefixWait, SharesLooksOnlyPastTheCachedPart) {
  auto tok = test::tiny_tokenizer(128);
  Sequence leader(*tok, {});
  leader.tokens = make_prompt(100, 1);
  leader.n_in_tree = 0;
  InFlightPrefixes in_flight;
  in_flight.add(leader);
  Sequence same_start(*tok, {});
  same_start.tokens = leader.tokens;
  same_start.tokens.resize(70);
  for (int32_t t : make_prompt(30, 2)) same_start.tokens.push_back(t);
  EXPECT_TRUE(in_flight.shares(same_start, 0, 64));    // [0, 64) shared
  EXPECT_FALSE(in_flight.shares(same_start, 0, 65));   // next block end 80: differs
  EXPECT_TRUE(in_flight.shares(same_start, 48, 16));   // block end 64: shared
  EXPECT_FALSE(in_flight.shares(same_start, 56, 16));  // block end 80: differs
  EXPECT_FALSE(in_flight.shares(same_start, 0, 101));  // past the end of the sequence
  // A leader whose first 64 tokens are in the tree registers only the blocks after them.
  leader.n_in_tree = 64;
  leader.n_computed = 64;
  InFlightPrefixes later;
  later.add(leader);
  EXPECT_FALSE(later.shares(same_start, 0, 64));
  EXPECT_TRUE(later.shares(leader, 64, 16));
  Sequence other(*tok, {});
  other.tokens = make_prompt(100, 3);
  EXPECT_FALSE(in_flight.shares(other, 0, 16));
  // A sequence with one pending token (a decode) registers nothing.
  Sequence decoding(*tok, {});
  decoding.tokens = make_prompt(100, 4);
  decoding.n_computed = 99;
  InFlightPrefixes none;
  none.add(decoding);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace keel::sched
