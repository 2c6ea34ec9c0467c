// The interface the HTTP server uses to run generations: submit a tokenized request with a sink for
// its events, cancel it, read load. The scheduler (sched/scheduler.*) implements it; every method is
// safe to call from any thread (HTTP threads), and sinks are called on the scheduler thread, so they
// must only enqueue (never block).
#pragma once

#include <functional>

#include "base/status.h"
#include "sched/request.h"

namespace keel::sched {

using EventSink = std::function<void(StreamEvent&&)>;

struct EngineLoad {
  int32_t n_queued = 0;
  int32_t n_running = 0;
  int64_t kv_slots_used = 0;
  int64_t kv_slots_total = 0;
  double prefix_hit_ratio = 0.0;           // cached prompt tokens / prompt tokens, lifetime
  int64_t n_jump_forward_tokens = 0;       // tokens a grammar forced without sampling, lifetime
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Queues the request. kResourceExhausted when the queue is full (-> 429), kInvalidArgument when
  // the prompt does not fit the context (message says by how much), kUnavailable while draining.
  virtual Status submit(GenerateRequest request, EventSink sink) = 0;
  // Frees the request's KV slots at once; its sink gets a final kCancelled event.
  virtual void cancel(RequestId id) = 0;
  virtual EngineLoad load() const = 0;
  // Stops admitting; returns when every accepted request has finished.
  virtual void drain() = 0;
};

}  // namespace keel::sched
