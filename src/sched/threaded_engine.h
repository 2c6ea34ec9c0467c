// ThreadedEngine: the Engine the server talks to. It runs a Scheduler on its own thread (the only
// thread that touches the batch, the KV pool and the radix tree) and feeds it through an in-process
// queue: submit, cancel and cache calls from any thread become commands the scheduler thread applies
// between steps. Sinks are called on the scheduler thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <variant>
#include <vector>

#include "cache/cache_event.h"
#include "cache/radix_tree.h"
#include "sched/engine.h"
#include "sched/scheduler.h"

namespace keel::sched {

class ThreadedEngine final : public Engine {
 public:
  static Result<std::unique_ptr<ThreadedEngine>> create(const SchedulerParams& params);
  ThreadedEngine(const ThreadedEngine&) = delete;
  ThreadedEngine& operator=(const ThreadedEngine&) = delete;
  // Stops the thread; requests still queued or running get a final kCancelled event.
  ~ThreadedEngine() override;

  Status submit(GenerateRequest request, EventSink sink) override;
  void cancel(RequestId id) override;
  EngineLoad load() const override;
  void drain() override;

  // Evicts every unlocked cached prefix (for /flush_cache); waits for the scheduler thread.
  Status flush_cache();
  // The radix tree's change feed (cache_event.h) for the router: moves the events published so far to
  // out without waiting for the scheduler thread (it hands each step's events over when the step ends,
  // so a long step never delays the feed's reader or its heartbeats). Bounded like the tree's own
  // queue (SchedConfig::event_queue_capacity): past it the oldest unread events are dropped, which the
  // reader sees as a gap in seq and resyncs from cache_snapshot().
  int64_t drain_cache_events(std::vector<cache::CacheEvent>& out);
  cache::FeedSnapshot cache_snapshot();
  // Scheduler::export_prefix / import_prefix on the scheduler thread; wait for it (up to one step).
  KvPrefix export_prefix(std::span<const int32_t> tokens, int64_t max_tokens);
  Result<int64_t> import_prefix(const KvPrefix& p);
  int64_t context_tokens() const { return n_ctx_; }
  // Runs fn on the scheduler thread between steps and waits for it (not for the step after it).
  void call(const std::function<void(Scheduler&)>& fn);

 private:
  struct Submit {
    GenerateRequest request;
    EventSink sink;
  };
  struct Cancel {
    RequestId id = 0;
  };
  struct Call {
    const std::function<void(Scheduler&)>* fn = nullptr;  // the caller's, which waits for it
    uint64_t ticket = 0;
  };
  using Command = std::variant<Submit, Cancel, Call>;

  explicit ThreadedEngine(std::unique_ptr<Scheduler> sched);
  void loop();
  void apply(Command& command, uint64_t& last_call);
  // Hands the scheduler's cache events over, refreshes the load and marks the calls up to last_call
  // done (their callers stop waiting). After a step (progressed: whether it ran a batch), and between
  // the commands and the step when calls were among them.
  void publish(uint64_t last_call, std::optional<bool> progressed);

  std::unique_ptr<Scheduler> sched_;  // touched only by thread_ once it runs
  const int32_t max_queue_;
  const int64_t n_ctx_;
  const size_t max_events_;

  mutable std::mutex mu_;
  std::condition_variable wake_;     // the scheduler thread waits here for commands
  std::condition_variable settled_;  // drain() and call() wait here
  std::deque<Command> inbox_;
  int32_t n_inbox_submits_ = 0;  // Submit commands in inbox_
  int32_t n_in_transit_ = 0;     // taken from inbox_, not yet in a published load
  EngineLoad load_;              // as of the last step
  bool idle_ = true;             // the scheduler had no work after the last step
  bool progressed_ = false;      // the last step ran a batch (the loop steps again without waiting)
  bool draining_ = false;
  bool stop_ = false;
  uint64_t n_calls_ = 0;       // tickets handed to call()
  uint64_t n_calls_done_ = 0;  // calls run and published (load() then reflects them)
  std::vector<cache::CacheEvent> events_;        // cache events handed over, not yet drained (mu_)
  std::vector<cache::CacheEvent> events_fresh_;  // scheduler thread only: this step's events
  std::thread thread_;
};

}  // namespace keel::sched
