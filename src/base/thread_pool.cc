#include "base/thread_pool.h"

#include <unistd.h>

#include <cstdlib>

#if defined(__x86_64__)
#include <immintrin.h>
#define KEEL_CPU_RELAX() _mm_pause()
#else
#define KEEL_CPU_RELAX() \
  do {                   \
  } while (0)
#endif

namespace keel {
namespace {
// Spin this many rounds for the next job before sleeping: forward passes issue ops back to back.
constexpr int kSpinRounds = 1 << 16;
// Busy-wait rounds before yielding the core: when threads outnumber free cores (CI, shared hosts) a
// spinning thread would otherwise burn the time slice the thread it waits for needs.
constexpr int kPauseRounds = 1 << 10;

void relax(int round) {
  if (round < kPauseRounds) {
    KEEL_CPU_RELAX();
  } else {
    std::this_thread::yield();
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("KEEL_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void ThreadPool::run_tasks(int thread) {
  for (;;) {
    int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n_tasks_) break;
    (*job_)(task, thread);
  }
}

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t i = 0; i < n_tasks; ++i) fn(i, 0);
    return;
  }
  job_ = &fn;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  n_busy_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  run_tasks(0);
  for (int round = 0; n_busy_.load(std::memory_order_acquire) != 0; ++round) relax(round);
  job_ = nullptr;
}

void ThreadPool::worker_loop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinRounds) relax(spins++);
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    run_tasks(thread);
    n_busy_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace keel
