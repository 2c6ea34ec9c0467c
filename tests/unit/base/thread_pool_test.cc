#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace keel {
namespace {

TEST(ThreadPool, RunsEveryTaskOnceAcrossManyJobs) {
  for (int n_threads : {1, 2, 4, 8}) {  // 8 oversubscribes a 2-core machine on purpose
    ThreadPool pool(n_threads);
    for (int job = 0; job < 200; ++job) {
      const int64_t n_tasks = 1 + job % 37;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n_tasks));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
        hits[static_cast<size_t>(task)].fetch_add(1);
        if (thread < 0 || thread >= n_threads) bad_thread.fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "threads=" << n_threads << " job=" << job;
      ASSERT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, ZeroTasksIsANoOp) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace keel
