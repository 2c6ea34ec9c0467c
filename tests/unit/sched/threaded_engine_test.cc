// ThreadedEngine: submits from several threads at once, cancel from another thread, the queue limit
// while the scheduler thread is busy, drain, flush_cache and the cache change feed.
#include "sched/threaded_engine.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "unit/sched/sched_test_util.h"

namespace keel::sched {
namespace {

using test::Collected;
using test::Collector;
using test::greedy_request;
using test::make_prompt;
using test::reference_tokens;

// Keeps the scheduler thread inside a call (as in a long step) until release().
struct SchedulerHold {
  explicit SchedulerHold(ThreadedEngine& e) : released(release_.get_future().share()) {
    holder = std::thread([this, &e] {
      e.call([this](Scheduler&) {
        blocked = true;
        released.wait();
      });
    });
  }
  ~SchedulerHold() { release(); }
  void release() {
    if (holder.joinable()) {
      release_.set_value();
      holder.join();
    }
  }
  std::promise<void> release_;
  std::shared_future<void> released;
  std::atomic<bool> blocked{false};
  std::thread holder;
};

class ThreadedEngineTest : public test::TinyModelTest {
 protected:
  std::unique_ptr<ThreadedEngine> make(SchedConfig c) {
    auto e = ThreadedEngine::create({.model = model_, .tokenizer = tok_, .config = c});
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return std::move(e).value();
  }
  static bool wait_for(const std::function<bool()>& done, int timeout_ms = 60000) {
    for (int i = 0; i < timeout_ms && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
  }
};


TEST_F(ThreadedEngineTest, ConcurrentSubmitsThenDrain) {
  auto e = make({.kv_tokens = 512, .max_batch_tokens = 32, .prefill_chunk = 8, .max_running = 8});
  Collector col;
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      for (int k = 0; k < 2; ++k) {
        const RequestId id = static_cast<RequestId>(t * 2 + k + 1);
        Status st =
            e->submit(greedy_request(id, make_prompt(5 + 7 * static_cast<int32_t>(id), static_cast<uint32_t>(id)), 8),
                      col.sink());
        EXPECT_TRUE(st.ok()) << st.to_string();
      }
    });
  }
  for (auto& c : clients) c.join();
  e->drain();
  EXPECT_EQ(col.n_final(), 8);
  for (RequestId id = 1; id <= 8; ++id) {
    EXPECT_EQ(col.get(id).tokens,
              reference_tokens(*model_, make_prompt(5 + 7 * static_cast<int32_t>(id), static_cast<uint32_t>(id)), 8))
        << "request " << id;
  }
  EngineLoad l = e->load();
  EXPECT_EQ(l.n_queued, 0);
  EXPECT_EQ(l.n_running, 0);
  EXPECT_EQ(l.kv_slots_total, 512);
  Status late = e->submit(greedy_request(99, {1, 5}, 2), col.sink());
  EXPECT_EQ(late.code(), ErrorCode::kUnavailable);
}

TEST_F(ThreadedEngineTest, CancelFromAnotherThreadFreesSlots) {
  auto e = make({.kv_tokens = 256, .max_batch_tokens = 16, .prefill_chunk = 8, .max_running = 4});
  Collector col;
  // The sink holds the scheduler thread once 3 tokens are out until the cancel is queued, so the
  // request cannot run to its 200 tokens first however the threads are scheduled.
  std::promise<void> cancel_queued;
  std::shared_future<void> queued = cancel_queued.get_future().share();
  std::atomic<int> n_seen{0};
  EventSink inner = col.sink();
  EventSink sink = [&, inner](StreamEvent&& ev) {
    const int before = n_seen.fetch_add(static_cast<int>(ev.tokens.size()));
    inner(std::move(ev));
    if (before < 3 && n_seen.load() >= 3) queued.wait_for(std::chrono::seconds(60));
  };
  ASSERT_TRUE(e->submit(greedy_request(1, make_prompt(20, 1), 200), sink).ok());
  ASSERT_TRUE(wait_for([&] { return col.get(1).tokens.size() >= 3; }));
  std::thread([&] { e->cancel(1); }).join();
  cancel_queued.set_value();
  ASSERT_TRUE(wait_for([&] { return col.n_final() == 1; }));
  Collected c = col.get(1);
  EXPECT_EQ(c.finish, FinishReason::kCancelled);
  EXPECT_LT(c.tokens.size(), 200u);
  int64_t owned = -1;
  e->call([&](Scheduler& s) {
    EXPECT_TRUE(s.check_invariants().ok());
    owned = s.pool().n_used() - s.tree().n_cached_tokens();
  });
  EXPECT_EQ(owned, 0);
  ASSERT_TRUE(e->flush_cache().ok());
  EXPECT_EQ(e->load().kv_slots_used, 0);
}

TEST_F(ThreadedEngineTest, QueueFullWhileTheSchedulerIsBusy) {
  auto e = make({.kv_tokens = 256, .max_batch_tokens = 16, .prefill_chunk = 8, .max_running = 2, .max_queue = 2});
  Collector col;
  SchedulerHold hold(*e);
  ASSERT_TRUE(wait_for([&] { return hold.blocked.load(); }));
  EXPECT_TRUE(e->submit(greedy_request(1, make_prompt(5, 1), 3), col.sink()).ok());
  EXPECT_TRUE(e->submit(greedy_request(2, make_prompt(5, 2), 3), col.sink()).ok());
  Status full = e->submit(greedy_request(3, make_prompt(5, 3), 3), col.sink());
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted) << full.to_string();
  Status too_long = e->submit(greedy_request(4, make_prompt(300, 4), 3), col.sink());
  EXPECT_EQ(too_long.code(), ErrorCode::kInvalidArgument) << too_long.to_string();
  EXPECT_EQ(e->load().n_queued, 2);
  hold.release();
  e->drain();
  EXPECT_EQ(col.n_final(), 2);
}

TEST_F(ThreadedEngineTest, CacheFeedReportsStoredPrefixes) {
  auto e = make({.kv_tokens = 256, .max_batch_tokens = 32, .prefill_chunk = 32, .max_running = 4});
  Collector col;
  ASSERT_TRUE(e->submit(greedy_request(1, make_prompt(12, 1), 4), col.sink()).ok());
  ASSERT_TRUE(wait_for([&] { return col.n_final() == 1; }));
  // The step that finished the request hands its events over when it ends, which may be just after
  // the final event reached the sink; drain_cache_events never waits for it.
  std::vector<cache::CacheEvent> events;
  int64_t stored = 0;
  ASSERT_TRUE(wait_for([&] {
    e->drain_cache_events(events);
    for (const auto& ev : events) {
      if (ev.kind == cache::CacheEventKind::kStored) stored = std::max(stored, ev.prefix_len);
    }
    return stored == 12 + 3;  // prompt and the computed output tokens
  }));
  cache::FeedSnapshot snap = e->cache_snapshot();
  EXPECT_FALSE(snap.stored.empty());
  ASSERT_TRUE(e->flush_cache().ok());
  events.clear();
  e->drain_cache_events(events);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, cache::CacheEventKind::kRemoved);
}

TEST_F(ThreadedEngineTest, CacheFeedDrainDoesNotWaitForTheSchedulerThread) {
  auto e = make({.kv_tokens = 256, .max_batch_tokens = 32, .prefill_chunk = 32, .max_running = 4});
  Collector col;
  ASSERT_TRUE(e->submit(greedy_request(1, make_prompt(12, 1), 4), col.sink()).ok());
  ASSERT_TRUE(wait_for([&] { return col.n_final() == 1; }));
  SchedulerHold hold(*e);
  ASSERT_TRUE(wait_for([&] { return hold.blocked.load(); }));
  // The scheduler thread is stuck inside a call (as in a long step): the feed's reader still gets the
  // events published before it, and returns.
  std::atomic<bool> drained{false};
  std::atomic<int64_t> n{0};
  std::thread reader([&] {
    std::vector<cache::CacheEvent> events;
    n = e->drain_cache_events(events);
    drained = true;
  });
  const bool returned = wait_for([&] { return drained.load(); }, 10000);
  hold.release();
  reader.join();
  EXPECT_TRUE(returned) << "drain_cache_events waited for the scheduler thread";
  EXPECT_GT(n.load(), 0);
}

TEST_F(ThreadedEngineTest, DestructionEndsOpenRequests) {
  Collector col;
  {
    auto e = make({.kv_tokens = 256, .max_batch_tokens = 16, .prefill_chunk = 8, .max_running = 4});
    // The sink holds the scheduler thread for a second on the first token, so the engine is destroyed
    // while the request runs: on a fast machine its 236 tokens fit between two of wait_for's 1 ms polls,
    // and without the hold it could end by length first (seen 3 times in 10 runs).
    std::atomic<bool> held{false};
    EventSink inner = col.sink();
    EventSink sink = [&held, inner](StreamEvent&& ev) {
      const bool first = !ev.tokens.empty() && !held.exchange(true);
      inner(std::move(ev));
      if (first) std::this_thread::sleep_for(std::chrono::seconds(1));
    };
    ASSERT_TRUE(e->submit(greedy_request(1, make_prompt(20, 1), 250), sink).ok());
    ASSERT_TRUE(wait_for([&] { return !col.get(1).tokens.empty(); }));
  }
  EXPECT_EQ(col.n_final(), 1);
  EXPECT_EQ(col.get(1).finish, FinishReason::kCancelled);
}

}  // namespace
}  // namespace keel::sched
