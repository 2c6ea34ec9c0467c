// SchedConfig: the scheduler's knobs (KV pool size, per-step token budget, prefill chunk, running and
// queue limits, admission policy). Validated here; the CLI composes it (with cache::CacheConfig for the
// pool size). Plain data: any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace keel::sched {

// Which waiting request is admitted first (after priority, which always comes first).
enum class Policy {
  kFcfs,           // arrival order (preempted requests rejoin at the front)
  kLongestPrefix,  // longest cached prefix first (sglang's "lpm"): reuses the cache before it is evicted
};

std::string_view policy_name(Policy policy);
// "fcfs" or "lpm" (also "longest-prefix"); kInvalidArgument otherwise.
Result<Policy> parse_policy(std::string_view name);

struct SchedConfig {
  int64_t kv_tokens = 0;            // KV pool size in tokens; 0 = the model's context length
  int32_t max_batch_tokens = 2048;  // tokens per forward pass (prefill chunks + decode tokens)
  int32_t prefill_chunk = 512;      // most prompt tokens of one sequence per step
  int32_t max_running = 64;         // sequences (samples) decoding at once
  int32_t max_queue = 1024;         // requests waiting for admission; more -> kResourceExhausted
  Policy policy = Policy::kFcfs;
  int64_t event_queue_capacity = 4096;  // radix-tree change-feed events kept (0 = feed off)
  // Structured output: when the grammar allows exactly one next token, append it without sampling
  // (it is computed with the next step's tokens instead of taking a decode step of its own).
  bool jump_forward = false;
  // In-batch prefix sharing (prefix_wait.h): a waiting request whose prompt shares at least
  // prefix_wait_min_tokens uncached tokens with a request computing them now waits until they are in the
  // radix tree, for at most prefix_wait_max_steps admission passes (then it is admitted in queue order
  // whatever it shares). prefix_wait_max_steps = 0 turns the wait off.
  int32_t prefix_wait_min_tokens = 64;
  int32_t prefix_wait_max_steps = 16;
  // Overlap scheduling (docs/scheduler.md "Overlap"): step N+1 is planned and launched before step N's
  // sampled tokens are read, so the device never waits for the host between steps. Takes effect on a
  // backend that samples asynchronously (cuda); KEEL_OVERLAP=0 in the environment also turns it off.
  // overlap_on_host runs the same lagged bookkeeping with host sampling (the CPU backend; for tests).
  bool overlap = true;
  bool overlap_on_host = false;

  // Rejects out-of-range values with a message naming the field. max_batch_tokens must cover one
  // decode token for every running sequence, so a long prompt never stalls a running stream.
  Status validate() const;
};

}  // namespace keel::sched
