// WorkQueue: jobs run on its threads in order, the bound refuses, wait_idle and stop wait for the jobs
// that were accepted, and a throwing job does not take its thread down.
#include "base/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <thread>

namespace keel {
namespace {

TEST(WorkQueue, RunsJobsOffTheCallerInOrder) {
  WorkQueue q("test", 1, 16);
  std::vector<int> order;
  std::thread::id ran_on;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(q.try_post([&, i] {
      order.push_back(i);
      ran_on = std::this_thread::get_id();
    }));
  }
  q.wait_idle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(WorkQueue, RefusesBeyondTheBoundWhileItsThreadsAreBusy) {
  WorkQueue q("test", 2, 3);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> started{0};
  std::atomic<int> done{0};
  for (int i = 0; i < 2; ++i) {  // both threads held
    ASSERT_TRUE(q.try_post([&] {
      ++started;
      gate.wait();
      ++done;
    }));
  }
  while (started.load() < 2) std::this_thread::yield();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.try_post([&] { ++done; })) << i;
  EXPECT_EQ(q.waiting(), 3u);
  EXPECT_EQ(q.running(), 2u);
  EXPECT_FALSE(q.try_post([&] { ++done; }));  // the fourth waiting job
  release.set_value();
  q.wait_idle();
  EXPECT_EQ(done.load(), 5);
  EXPECT_TRUE(q.try_post([&] { ++done; }));  // room again
  q.wait_idle();
  EXPECT_EQ(done.load(), 6);
}

TEST(WorkQueue, StopRunsWhatWaitsThenRefuses) {
  std::atomic<int> done{0};
  WorkQueue q("test", 1, 64);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(q.try_post([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++done;
    }));
  }
  q.stop();
  EXPECT_EQ(done.load(), 20);
  EXPECT_FALSE(q.try_post([&] { ++done; }));
  q.stop();  // again: nothing to do
  EXPECT_EQ(done.load(), 20);
}

TEST(WorkQueue, AThrowingJobIsCountedAndTheThreadRunsOn) {
  WorkQueue q("test", 1, 8);
  std::atomic<int> done{0};
  ASSERT_TRUE(q.try_post([] { throw std::runtime_error("boom"); }));
  ASSERT_TRUE(q.try_post([&] { ++done; }));
  q.wait_idle();
  EXPECT_EQ(done.load(), 1);
  EXPECT_EQ(q.n_thrown(), 1);
}

}  // namespace
}  // namespace keel
