// A bounded FIFO of jobs run by a fixed set of threads, for request work too slow for an io thread
// (keel serve compiles grammars here, server/api.cc). try_post refuses a job when `max_waiting` jobs
// already wait, so a flood of slow jobs is answered at once (busy) instead of queued without bound.
// A job that throws is logged and counted; its thread runs on. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace keel {

class WorkQueue {
 public:
  // `name` labels the threads' log lines.
  WorkQueue(std::string name, int n_threads, size_t max_waiting);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  ~WorkQueue();  // stop()

  // False (and the job dropped) when max_waiting jobs wait or the queue has stopped.
  bool try_post(std::function<void()> job);
  // Returns once no job waits or runs, those posted meanwhile included.
  void wait_idle();
  // Runs the jobs that wait, joins the threads; later posts are refused. Idempotent.
  void stop();

  size_t waiting() const;
  size_t running() const;
  int64_t n_thrown() const;

 private:
  void loop();

  std::string name_;
  size_t max_waiting_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // a job was posted, or stop
  std::condition_variable idle_;  // a job finished
  std::deque<std::function<void()>> jobs_;
  size_t running_ = 0;
  int64_t n_thrown_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace keel
