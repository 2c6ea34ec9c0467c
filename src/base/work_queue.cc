#include "base/work_queue.h"

#include <exception>

#include "base/check.h"
#include "base/log.h"

namespace keel {

WorkQueue::WorkQueue(std::string name, int n_threads, size_t max_waiting)
    : name_(std::move(name)), max_waiting_(max_waiting) {
  KEEL_CHECK(n_threads >= 1, "a WorkQueue needs at least one thread");
  threads_.reserve(static_cast<size_t>(n_threads));
  for (int i = 0; i < n_threads; ++i) threads_.emplace_back([this] { loop(); });
}

WorkQueue::~WorkQueue() { stop(); }

bool WorkQueue::try_post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || jobs_.size() >= max_waiting_) return false;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void WorkQueue::wait_idle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return jobs_.empty() && running_ == 0; });
}

void WorkQueue::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard lock(mu_);
  threads_.clear();
}

void WorkQueue::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    bool thrown = false;
    try {
      job();
    } catch (const std::exception& e) {
      thrown = true;
      KEEL_LOG_ERROR("{}: a job threw: {}", name_, e.what());
    } catch (...) {
      thrown = true;
      KEEL_LOG_ERROR("{}: a job threw", name_);
    }
    job = nullptr;  // its captures go before the job counts as done
    lock.lock();
    --running_;
    if (thrown) ++n_thrown_;
    if (jobs_.empty() && running_ == 0) idle_.notify_all();
  }
}

size_t WorkQueue::waiting() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

size_t WorkQueue::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

int64_t WorkQueue::n_thrown() const {
  std::lock_guard lock(mu_);
  return n_thrown_;
}

}  // namespace keel
