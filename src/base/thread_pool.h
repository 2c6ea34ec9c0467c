// Fork-join thread pool for the CPU backend's ops. `parallel_for` splits work over the workers and
// the calling thread and returns when all of it is done. Workers spin briefly between jobs (ops come
// back-to-back in a forward pass), then sleep. One caller at a time: the thread that runs the model.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace keel {

class ThreadPool {
 public:
  // n_threads counts the caller: n_threads == 1 runs everything inline.
  explicit ThreadPool(int n_threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  int n_threads() const { return n_threads_; }

  // Calls fn(task, thread) for every task in [0, n_tasks); tasks are claimed dynamically.
  // `thread` in [0, n_threads) lets callers index per-thread scratch space.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

  // Default size: KEEL_THREADS or the number of online CPUs.
  static int default_threads();

 private:
  void worker_loop(int thread);
  void run_tasks(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int)>* job_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::atomic<int> n_busy_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace keel
